"""Sandbox backends are looked up by name (aiscientist/sandbox/__init__.py): the registry and the
settings' `BackendName` name the same set, and a wrong name is refused with the names it could be."""

from __future__ import annotations

import pytest

from aiscientist.sandbox import (
    BACKENDS,
    LocalSandbox,
    SandboxSettings,
    SandboxUnavailable,
    get_sandbox,
    register_sandbox,
    sandbox_names,
)


def test_every_backend_name_is_registered_and_a_wrong_one_lists_them() -> None:
    assert sorted(sandbox_names()) == sorted(BACKENDS)
    with pytest.raises(
        SandboxUnavailable, match="unknown sandbox backend 'podman'; choose one of auto, bwrap, docker, local"
    ):
        get_sandbox("podman")
    with pytest.raises(ValueError, match="'podman' is not a BackendName"):
        register_sandbox("podman", LocalSandbox)


def test_a_name_and_its_settings_give_the_same_backend() -> None:
    by_name, by_settings = get_sandbox("local"), get_sandbox(SandboxSettings(backend="local", memory_mb=512))
    assert isinstance(by_name, LocalSandbox) and isinstance(by_settings, LocalSandbox)
    assert by_settings.settings.memory_mb == 512 and get_sandbox(by_name) is by_name

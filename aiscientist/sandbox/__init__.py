"""Command execution backends behind one interface (`Sandbox.run`)."""

from __future__ import annotations

import logging

from aiscientist.sandbox.base import BACKENDS, CommandsResult, Mounts, Sandbox, SandboxSettings, allowed_env
from aiscientist.sandbox.bwrap import BwrapSandbox, bwrap_works
from aiscientist.sandbox.local import LocalSandbox

log = logging.getLogger(__name__)


class SandboxUnavailable(RuntimeError):
    pass


def get_sandbox(choice: str | SandboxSettings | Sandbox = "auto") -> Sandbox:
    """A backend by name or settings (a ready backend is returned as it is). `auto`
    prefers bwrap and falls back to local with a visible warning."""
    if isinstance(choice, Sandbox):
        return choice
    settings = (
        choice
        if isinstance(choice, SandboxSettings)
        else SandboxSettings(backend=choice)
        if choice in BACKENDS
        else None
    )
    if settings is None:
        raise SandboxUnavailable(f"unknown sandbox backend {choice!r}; choose one of {', '.join(BACKENDS)}")
    name = settings.backend
    if name == "local":
        log.warning(
            "local sandbox: experiment code runs WITHOUT isolation, with your permissions (not a security boundary)"
        )
        return LocalSandbox(settings)
    if name == "bwrap":
        if not bwrap_works():
            raise SandboxUnavailable(
                "bwrap sandbox requested but bubblewrap is missing or cannot create namespaces here (apt-get install "
                "bubblewrap)"
            )
        return BwrapSandbox(settings)
    if name == "auto":
        if bwrap_works():
            return BwrapSandbox(settings.model_copy(update={"backend": "bwrap"}))
        log.warning("bubblewrap is not usable here: experiments run WITHOUT isolation (local backend)")
        return LocalSandbox(settings.model_copy(update={"backend": "local"}))
    from aiscientist.sandbox.docker import (
        DockerSandbox,
        DockerUnavailable,
    )  # name == "docker"; the SDK loads only when asked for

    try:
        return DockerSandbox(settings)
    except DockerUnavailable as err:
        raise SandboxUnavailable(str(err)) from err


__all__ = [
    "BACKENDS",
    "Mounts",
    "SandboxSettings",
    "CommandsResult",
    "Sandbox",
    "get_sandbox",
    "allowed_env",
    "LocalSandbox",
    "BwrapSandbox",
    "SandboxUnavailable",
    "bwrap_works",
]

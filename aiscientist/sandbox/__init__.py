"""Command execution backends behind one interface (`Sandbox.run`), looked up by name (`get_sandbox`)."""

from __future__ import annotations

import logging
from collections.abc import Callable

from aiscientist.sandbox.base import BACKENDS, CommandsResult, Mounts, Sandbox, SandboxSettings, allowed_env
from aiscientist.sandbox.bwrap import BwrapSandbox, bwrap_works
from aiscientist.sandbox.local import LocalSandbox
from aiscientist.util.registry import Registry

log = logging.getLogger(__name__)


class SandboxUnavailable(RuntimeError):
    pass


Factory = Callable[[SandboxSettings], Sandbox]
SANDBOXES: Registry[Factory] = Registry("sandbox backend", SandboxUnavailable)


def register_sandbox(name: str, factory: Factory) -> None:
    """A backend by name (as inspect_ai's `@sandboxenv`, mini-swe-agent's environments map); the
    settings' `backend` type (`BackendName`) names the same set, so a config can choose it."""
    if name not in BACKENDS:
        raise ValueError(f"sandbox backend {name!r} is not a BackendName ({', '.join(BACKENDS)})")
    SANDBOXES.register(name, factory)


def sandbox_names() -> list[str]:
    return SANDBOXES.names()


def get_sandbox(choice: str | SandboxSettings | Sandbox = "auto") -> Sandbox:
    """A backend by name or settings (a ready backend is returned as it is). `auto`
    prefers bwrap and falls back to local with a visible warning."""
    if isinstance(choice, Sandbox):
        return choice
    if isinstance(choice, SandboxSettings):
        return SANDBOXES.get(choice.backend)(choice)
    return SANDBOXES.get(choice)(SandboxSettings(backend=choice))  # an unknown name fails naming the known ones


def _local(settings: SandboxSettings) -> Sandbox:
    log.warning(
        "local sandbox: experiment code runs WITHOUT isolation, with your permissions (not a security boundary)"
    )
    return LocalSandbox(settings)


def _bwrap(settings: SandboxSettings) -> Sandbox:
    if not bwrap_works():
        raise SandboxUnavailable(
            "bwrap sandbox requested but bubblewrap is missing or cannot create namespaces here (apt-get install "
            "bubblewrap)"
        )
    return BwrapSandbox(settings)


def _auto(settings: SandboxSettings) -> Sandbox:
    if bwrap_works():
        return BwrapSandbox(settings.model_copy(update={"backend": "bwrap"}))
    log.warning("bubblewrap is not usable here: experiments run WITHOUT isolation (local backend)")
    return LocalSandbox(settings.model_copy(update={"backend": "local"}))


def _docker(settings: SandboxSettings) -> Sandbox:
    from aiscientist.sandbox.docker import DockerSandbox, DockerUnavailable  # the SDK loads only when asked for

    try:
        return DockerSandbox(settings)
    except DockerUnavailable as err:
        raise SandboxUnavailable(str(err)) from err


register_sandbox("auto", _auto)
register_sandbox("bwrap", _bwrap)
register_sandbox("local", _local)
register_sandbox("docker", _docker)


__all__ = [
    "BACKENDS",
    "Mounts",
    "SandboxSettings",
    "CommandsResult",
    "Sandbox",
    "get_sandbox",
    "register_sandbox",
    "SANDBOXES",
    "sandbox_names",
    "allowed_env",
    "LocalSandbox",
    "BwrapSandbox",
    "SandboxUnavailable",
    "bwrap_works",
]

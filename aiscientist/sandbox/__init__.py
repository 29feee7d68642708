"""Command execution backends behind one interface (`Sandbox.run`)."""

from __future__ import annotations

import logging

from aiscientist.sandbox.base import RunResult, Sandbox, scrubbed_env
from aiscientist.sandbox.bwrap import BwrapSandbox, bwrap_works
from aiscientist.sandbox.local import LocalSandbox

log = logging.getLogger(__name__)

BACKENDS = ("auto", "bwrap", "local")


class SandboxUnavailable(RuntimeError):
    pass


def get_sandbox(name: str = "auto") -> Sandbox:
    """`auto` prefers bwrap and falls back to local with a visible warning."""
    if name == "local":
        return LocalSandbox()
    if name == "bwrap":
        if not bwrap_works():
            raise SandboxUnavailable("bwrap sandbox requested but bubblewrap is missing or cannot create namespaces here (apt-get install bubblewrap)")
        return BwrapSandbox()
    if name == "auto":
        if bwrap_works():
            return BwrapSandbox()
        log.warning("bubblewrap is not usable here: experiments run WITHOUT isolation (local backend)")
        return LocalSandbox()
    raise SandboxUnavailable(f"unknown sandbox backend {name!r}; choose one of {', '.join(BACKENDS)}")


__all__ = ["RunResult", "Sandbox", "get_sandbox", "scrubbed_env", "LocalSandbox", "BwrapSandbox", "SandboxUnavailable", "bwrap_works"]

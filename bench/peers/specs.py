"""The peers' released packages, pinned, each in its own virtual environment under a cache
folder (`$AISCIENTIST_PEERS_DIR`, default `~/.cache/aiscientist/peers/<name>`): their
dependency pins clash with ours (aideml pins numpy 1.26.2), so none enters our environment.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel

from aiscientist.util.registry import Registry

CACHE_ENV = "AISCIENTIST_PEERS_DIR"
INSTALL_TIMEOUT_S = 3600.0


class PeerSpec(BaseModel):
    """One peer: the agent name without `peer-`, the pinned distribution, its driver script."""

    name: str
    package: str
    version: str
    driver: str  # bench/peers/drivers/<driver>.py, run by the peer's own interpreter
    # when set: the package goes in with --no-deps, then only these (the agent's own imports,
    # at the package's pins); the libraries its model-written code would use are the task's
    runtime: tuple[str, ...] = ()

    @property
    def requirement(self) -> str:
        return f"{self.package}=={self.version}"


class PeerEnvError(RuntimeError):
    """A peer's environment is missing or could not be built; the message names the fix."""


PEERS: Registry[PeerSpec] = Registry("peer", PeerEnvError)
for _peer in (
    PeerSpec(name="mini-swe-agent", package="mini-swe-agent", version="2.4.6", driver="run_mini_swe_agent"),
    PeerSpec(
        name="aide",
        package="aideml",
        version="0.2.2",
        driver="run_aide",
        runtime=(
            *("black==24.3.0", "funcy==2.0", "humanize==4.8.0", "jsonschema==4.19.2", "numpy==1.26.2"),
            *("pandas==2.1.4", "rich==13.7.0", "openai>=1.69.0", "anthropic>=0.20.0", "requests>=2.32.4"),
            *("dataclasses_json>=0.6.4", "omegaconf>=2.3.0", "shutup>=0.2.0", "coolname>=2.2.0"),
            *("igraph>=0.11.3", "genson>=1.2.0", "backoff==2.2.1"),  # backoff: imported, not declared
        ),
    ),
    PeerSpec(name="openevolve", package="openevolve", version="0.4.0", driver="run_openevolve"),
):
    PEERS.register(_peer.name, _peer)


def cache_dir() -> Path:
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "aiscientist" / "peers")


def spec(name: str) -> PeerSpec:
    return PEERS.get(name.removeprefix("peer-"))


def venv_python(peer: PeerSpec) -> Path:
    return cache_dir() / peer.name / "bin" / "python"


def installed_version(peer: PeerSpec) -> str | None:
    """The pinned package's version inside the peer's environment (None: absent or broken)."""
    python = venv_python(peer)
    if not python.exists():
        return None
    probe = f"import importlib.metadata as m; print(m.version({peer.package!r}))"
    done = subprocess.run([str(python), "-c", probe], capture_output=True, text=True, timeout=120)
    return done.stdout.strip() if done.returncode == 0 else None


def ensure(name: str) -> Path:
    """The peer's interpreter, or a clear error naming the install command."""
    peer = spec(name)
    found = installed_version(peer)
    if found != peer.version:
        state = "is not installed" if found is None else f"has {peer.package} {found}, not {peer.version}"
        raise PeerEnvError(
            f"peer {peer.name}: {cache_dir() / peer.name} {state}; "
            f"run `python -m aiscientist bench peers install {peer.name}`"
        )
    return venv_python(peer)


def install(name: str, progress: Callable[[str], None] = print, force: bool = False) -> Path:
    """Create the peer's venv and pip-install its pinned package; a failure names the package and pip's error."""
    peer = spec(name)
    if not force and installed_version(peer) == peer.version:
        progress(f"peer {peer.name}: {peer.requirement} already installed in {cache_dir() / peer.name}")
        return venv_python(peer)
    folder = cache_dir() / peer.name
    folder.parent.mkdir(parents=True, exist_ok=True)
    progress(f"peer {peer.name}: creating {folder}")
    _run([sys.executable, "-m", "venv", "--clear", str(folder)], peer, "creating its virtual environment")
    progress(f"peer {peer.name}: pip install {peer.requirement} (this can take minutes)")
    pip = [str(venv_python(peer)), "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    if peer.runtime:
        _run([*pip, "--no-deps", peer.requirement], peer, f"pip install --no-deps {peer.requirement}")
        _run([*pip, *peer.runtime], peer, f"pip install {peer.requirement}'s runtime ({' '.join(peer.runtime)})")
    else:
        _run([*pip, peer.requirement], peer, f"pip install {peer.requirement}")
    if installed_version(peer) != peer.version:
        raise PeerEnvError(f"peer {peer.name}: pip finished but {peer.package} {peer.version} is not importable")
    progress(f"peer {peer.name}: {peer.requirement} ready")
    return venv_python(peer)


def _run(argv: list[str], peer: PeerSpec, what: str) -> None:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise PeerEnvError(f"peer {peer.name}: {what} took over {INSTALL_TIMEOUT_S:g}s") from None
    if done.returncode != 0:
        errors = [line for line in done.stderr.splitlines() if "ERROR" in line or "error" in line.lower()]
        tail = "\n".join((errors or done.stderr.splitlines())[-8:])
        raise PeerEnvError(f"peer {peer.name}: {what} failed (exit {done.returncode}) for {peer.package}:\n{tail}")


def prepare(agents: list[str], progress: Callable[[str], None] = print) -> None:
    """Before any cell starts: every `peer-*` agent's environment, installed on first use."""
    for agent in agents:
        if agent.startswith("peer-") and installed_version(spec(agent)) != spec(agent).version:
            install(agent, progress)

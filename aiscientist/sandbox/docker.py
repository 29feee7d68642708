"""Docker: every command in a fresh container with no network and a read-only root.

Only these are visible inside: the system runtime (with the /etc entries bubblewrap
shows) and the Python environment (read-only; bind-mounted from the host when the
image is the locally built host-runtime image, otherwise whatever the image holds),
the `writable` folders (read-write), the `readonly` paths, and a private /tmp of each
command's own. Containers carry labels naming their owner process; they are removed when
the command ends, on Ctrl-C, and, if their owner died, the next time a DockerSandbox
is created on this host.
"""

from __future__ import annotations

import os
import socket
import tempfile
import threading
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from aiscientist.sandbox.base import (
    CommandsResult,
    Mounts,
    OutputRing,
    Sandbox,
    SandboxSettings,
    allowed_env,
    resolved,
    run_each,
    to_cover,
)
from aiscientist.sandbox.bwrap import SYSTEM_DIRS, private_paths, python_dirs, runtime_paths
from aiscientist.sandbox.bytecode import NO_BYTECODE, python_env, shown_mirror
from aiscientist.sandbox.cgroup import MemoryUse
from aiscientist.sandbox.image import DEFAULT_IMAGE, HOST_RUNTIME, build_image
from aiscientist.sandbox.interpreter import sandbox_path

LABEL = "aiscientist.sandbox"


class DockerUnavailable(RuntimeError):
    pass


def connect():
    """A client for the engine the Docker CLI would use: DOCKER_HOST, else the default socket."""
    import docker
    from docker.errors import DockerException

    try:
        client = docker.from_env(timeout=120)
        client.ping()
    except DockerException as err:
        where = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
        raise DockerUnavailable(
            f"no Docker engine answers at {where} ({err}); start one (see scripts/dockerd.sh) and set DOCKER_HOST"
        ) from err
    return client


def docker_problem() -> str | None:
    """Why the docker backend cannot run here, or None when it can."""
    try:
        connect().close()
    except (DockerUnavailable, ImportError) as err:
        return str(err)
    return None


def labelled(client, label: str, *, running_only: bool = False) -> list:
    """The containers carrying `label`; one removed between the engine's list and its
    inspection (another process's sandbox finishing) is skipped, not an error."""
    return client.containers.list(all=not running_only, ignore_removed=True, filters={"label": [label]})


def remove_orphans(client) -> list[str]:
    """Remove this host's sandbox containers whose owner process is gone."""
    removed = []
    for container in labelled(client, f"{LABEL}.host={socket.gethostname()}"):
        pid = int(container.labels.get(f"{LABEL}.pid", "0"))
        if not _alive(pid):
            _remove(container)
            removed.append(container.name)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return pid > 0


def _remove(container) -> None:
    from docker.errors import APIError, NotFound

    try:
        container.remove(force=True)
    except NotFound:
        pass
    except APIError as err:
        if "already in progress" not in str(err):
            raise


class DockerSandbox(Sandbox):
    name = "docker"

    def __init__(self, settings: SandboxSettings):
        from docker.errors import ImageNotFound

        super().__init__(settings)
        self.client = connect()
        self.image = self.settings.image or DEFAULT_IMAGE
        try:
            image = self.client.images.get(self.image)
        except ImageNotFound:
            if self.settings.image is not None:
                raise DockerUnavailable(
                    f"docker image {self.image!r} is not on the engine (build or load it first; registries are not "
                    "contacted)"
                ) from None
            image = self.client.images.get(build_image(self.client, self.image))
        self.host_runtime = (image.labels or {}).get(HOST_RUNTIME) == "1"
        remove_orphans(self.client)

    def memory_enforcement(self) -> str:
        return "docker"

    def limits(self) -> dict[str, Any]:
        from docker.types import DeviceRequest, Ulimit

        s = self.settings
        # /tmp: private to the command (a .pyc planted by one command never reaches the next), never a host
        # disk; like /dev/shm and docker's own 64 MB /dev, its pages count against the container's memory cgroup
        size = f",size={s.memory_mb}m" if s.memory_mb else ""
        options: dict[str, Any] = {"tmpfs": {"/tmp": f"rw,exec,nosuid,nodev,mode=1777{size}"}}
        if s.memory_mb:
            options["mem_limit"] = options["memswap_limit"] = options["shm_size"] = f"{s.memory_mb}m"
        if s.processes:
            options["pids_limit"] = s.processes
        if s.file_size_mb:
            size = s.file_size_mb * 1024 * 1024
            options["ulimits"] = [Ulimit(name="fsize", soft=size, hard=size)]
        if s.cpus:
            options["nano_cpus"] = int(s.cpus * 1e9)
        if s.gpus:
            ids = None if s.gpus == "all" else s.gpus.split(",")
            options["device_requests"] = [
                DeviceRequest(count=-1 if ids is None else 0, device_ids=ids, capabilities=[["gpu"]])
            ]
        return options

    def mounts(self, wanted: Mounts, empty: Path, mirrored: list[tuple[str, str]]) -> list:
        """Parents before children, as Docker applies them: runtime, writable areas, protected paths, the byte
        code mirror, hidden paths. /tmp is not among them: it is the container's own tmpfs (`limits`)."""
        writable, readonly, hidden = wanted
        from docker.types import Mount

        mounts = [Mount(d, d, type="bind", read_only=True) for d in (runtime_paths() if self.host_runtime else [])]
        mounts += [Mount(str(p), str(p), type="bind") for p in resolved(writable)]
        mounts += [Mount(str(p), str(p), type="bind", read_only=True) for p in resolved(readonly) if p.exists()]
        mounts += [Mount(inside, host, type="bind", read_only=True) for host, inside in mirrored]
        for path in to_cover([*hidden, *map(Path, private_paths())], [m["Source"] for m in mounts]):
            if path.is_dir():
                mounts.append(Mount(str(path), None, type="tmpfs", read_only=True, tmpfs_size=4096))
            else:
                mounts.append(Mount(str(path), str(empty), type="bind", read_only=True))
        return mounts

    def environment(self, env: Mapping[str, str] | None, prefix: str = NO_BYTECODE) -> dict[str, str]:
        """The host's scrubbed environment for host-runtime images (PATH led by this
        Python); only `env` for a user's image, which brings its own."""
        base = allowed_env(env) if self.host_runtime else dict(env or {})
        if self.host_runtime:
            base["PATH"] = sandbox_path([*SYSTEM_DIRS, *python_dirs()])
        return {**base, "HOME": "/tmp", "TMPDIR": "/tmp", **python_env(prefix)}

    def execute(
        self, commands: Sequence[str], cwd: Path, timeout: float, env: Mapping[str, str] | None, mounts: Mounts
    ) -> CommandsResult:
        call = uuid.uuid4().hex[:12]
        out, err = OutputRing(), OutputRing()  # streamed from the engine into bounded rings
        # the host's library byte code, for the host's Python only (a user's image brings its own)
        prefix, mirrored = shown_mirror(mounts) if self.host_runtime else (NO_BYTECODE, [])
        options = dict(
            working_dir=str(Path(cwd).resolve()),
            environment=self.environment(env, prefix),
            labels={
                f"{LABEL}.host": socket.gethostname(),
                f"{LABEL}.pid": str(os.getpid()),
                f"{LABEL}.call": call,
                f"{LABEL}.cwd": str(cwd),
            },
            **self.limits(),
        )

        killed: list[str] = []  # the containers the kernel stopped at the memory limit

        def one(command: str) -> tuple[int, bool]:
            return self._one(command, timeout, options, out, err, killed)

        try:
            with tempfile.TemporaryDirectory(prefix="aisci-docker-") as tmp:
                empty = Path(tmp, "empty")  # what a hidden file is covered with (bound read-only into each container)
                empty.touch()
                options["mounts"] = self.mounts(mounts, empty, mirrored)
                result = run_each(commands, one, timeout, out, err, self.name)
            result.survivors = len(labelled(self.client, f"{LABEL}.call={call}", running_only=True))
            result.memory = MemoryUse(enforced_by="docker", limit_mb=self.settings.memory_mb, oom_kills=len(killed))
            return result
        except BaseException:  # Ctrl-C may land between the engine creating a container and us holding it
            for container in labelled(self.client, f"{LABEL}.call={call}"):
                _remove(container)
            raise

    def _one(
        self, command: str, timeout: float, options: dict[str, Any], out: OutputRing, err: OutputRing, killed: list[str]
    ) -> tuple[int, bool]:
        """One command in its own container; the container (every process in it) is gone
        on return. An engine error (bad mount, image gone) fails the command with 125.
        The engine keeps no log of the output (driver `none`): it is attached to before
        the start and streamed into the rings."""
        from docker.errors import DockerException
        from docker.types import LogConfig
        from requests.exceptions import ConnectionError, ReadTimeout

        container, rc, timed_out, pump = None, 125, False, None
        try:
            container = self.client.containers.create(
                self.image,
                ["bash", "-c", command],
                user=f"{os.getuid()}:{os.getgid()}",
                network_mode="none",
                read_only=True,
                ipc_mode="private",
                cap_drop=["ALL"],
                security_opt=["no-new-privileges"],
                log_config=LogConfig(type=LogConfig.types.NONE),
                **options,
            )
            stream = container.attach(stdout=True, stderr=True, stream=True, demux=True)
            pump = threading.Thread(target=_pump, args=(stream, out, err), daemon=True)
            pump.start()
            container.start()
            try:
                rc = container.wait(timeout=timeout)["StatusCode"]
            except (ReadTimeout, ConnectionError):  # the wait's read timeout: the command's time is up
                container.kill()
                rc, timed_out = container.wait()["StatusCode"], True
            container.reload()
            if container.attrs.get("State", {}).get("OOMKilled"):
                killed.append(container.name)
            pump.join(timeout=10)
        except DockerException as error:
            err.write(f"\n[sandbox] docker engine error: {error}\n".encode())
        finally:
            if container is not None:
                _remove(container)
            if pump is not None:
                pump.join(timeout=10)
        return rc, timed_out


def _pump(stream: Any, out: OutputRing, err: OutputRing) -> None:
    """Copy an attached container's (stdout, stderr) chunks into the rings until it ends."""
    from docker.errors import DockerException
    from requests.exceptions import RequestException

    try:
        for stdout, stderr in stream:
            if stdout:
                out.write(stdout)
            if stderr:
                err.write(stderr)
    except (DockerException, RequestException, OSError, ValueError):
        return  # the container was removed under the stream

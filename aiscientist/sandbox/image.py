"""The docker backend's run image, built locally (registries are not contacted).

Default: a near-empty root filesystem (mount points and the host's /bin -> usr/bin
style links) labelled host-runtime, so the sandbox bind-mounts the host's system
runtime and Python environment read-only at run time: torch and friends are not
copied, the import takes well under a second, and commands see exactly the Python the
run was started with. `rootfs=DIR` instead imports a complete root filesystem (e.g.
one made with debootstrap, or `docker export` of another machine's image) that brings
its own Python; nothing of the host is mounted then.
"""

from __future__ import annotations

import io
import os
import tarfile
import tempfile
from pathlib import Path

from aiscientist.sandbox.bwrap import SYSTEM_DIRS

DEFAULT_IMAGE = "aiscientist-run:latest"
HOST_RUNTIME = "aiscientist.host-runtime"  # image label: mount the host's runtime and Python at run time

MOUNT_POINTS = ("dev", "proc", "sys", "tmp", "usr", "etc", "run", "var")


def skeleton_tar() -> bytes:
    """A tar of the empty root: top-level folders and the host's top-level symlinks (/bin -> usr/bin, ...)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name in MOUNT_POINTS:
            info = tarfile.TarInfo(name)
            info.type, info.mode = tarfile.DIRTYPE, 0o1777 if name == "tmp" else 0o755
            tar.addfile(info)
        for path in SYSTEM_DIRS:
            if os.path.islink(path):
                info = tarfile.TarInfo(path.lstrip("/"))
                info.type, info.linkname = tarfile.SYMTYPE, os.readlink(path)
                tar.addfile(info)
    return buffer.getvalue()


def build_image(client, tag: str = DEFAULT_IMAGE, rootfs: Path | None = None) -> str:
    repository, _, version = tag.rpartition(":") if ":" in tag.rsplit("/", 1)[-1] else (tag, "", "latest")
    if rootfs is None:
        changes = [f"LABEL {HOST_RUNTIME}=1", 'CMD ["bash"]']
        client.api.import_image_from_data(skeleton_tar(), repository=repository, tag=version, changes=changes)
        return tag
    rootfs = Path(rootfs)
    if not (rootfs / "bin").exists() and not (rootfs / "usr" / "bin").is_dir():
        raise ValueError(f"{rootfs} does not look like a root filesystem (no bin/ or usr/bin/)")
    with tempfile.TemporaryFile() as handle:
        with tarfile.open(fileobj=handle, mode="w") as tar:
            tar.add(rootfs, arcname=".")
        handle.seek(0)
        client.api.import_image_from_data(
            handle, repository=repository, tag=version, changes=['CMD ["bash"]']
        )  # streamed
    return tag

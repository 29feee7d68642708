"""Sandboxed Python reads the interpreter library's byte code from a read-only mirror, and no other
byte code (`sandbox/bytecode.py`); the red team's planted-`.pyc` test covers the attack itself."""

from __future__ import annotations

import hashlib
import json
import os
import site
import sys
from importlib.util import cache_from_source
from pathlib import Path

import pytest

from aiscientist.sandbox import get_sandbox
from aiscientist.sandbox.base import Mounts
from aiscientist.sandbox.bytecode import MIRROR_AT, NO_BYTECODE, library_dirs, mirror, shown_mirror
from tests.sandbox_backends import BACKENDS

ISOLATED = [b for b in BACKENDS if getattr(b, "values", (b,))[0] != "local"]  # local keeps no mirror
JSON_PYC = os.path.join(os.path.dirname(json.__file__), os.path.basename(cache_from_source(json.__file__)))
STDLIB = next(d for d in library_dirs() if json.__file__.startswith(d + os.sep))

PROBE = """
import importlib.util, json, os
for source in (json.__file__, os.path.abspath("helper.py")):
    target = importlib.util.cache_from_source(source)
    try:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        open(target, "wb").write(b"forged")
        print("wrote", target)
    except OSError as err:
        print("refused", type(err).__name__)
"""


@pytest.mark.parametrize("backend", ISOLATED)
def test_library_byte_code_is_read_from_the_mirror_which_commands_cannot_write(tmp_path: Path, backend: str) -> None:
    (tmp_path / "helper.py").write_text("VALUE = 1\n")
    (tmp_path / "probe.py").write_text(PROBE)
    host = Path(f"{mirror(STDLIB)}{JSON_PYC}")
    before = hashlib.sha256(host.read_bytes()).hexdigest()
    imports = "python -v -c 'import json, helper' 2>&1 | grep -E 'matches|helper'"
    result = get_sandbox(backend).run([imports, "python probe.py"], tmp_path, 60, writable=[tmp_path])
    assert result.ok, result.stderr_tail
    lines = result.stdout_tail.splitlines()
    # `-v` says "<pyc> matches <source>" only for a module it loaded from byte code
    assert f"# {MIRROR_AT}{JSON_PYC} matches {json.__file__}" in lines
    assert not [line for line in lines if "matches" in line and "helper" in line]  # a workspace module compiles
    assert [line for line in lines if line.startswith(("wrote", "refused"))] == ["refused OSError"] * 2
    assert hashlib.sha256(host.read_bytes()).hexdigest() == before


def test_each_mirror_holds_only_the_byte_code_its_library_folder_keeps() -> None:
    for library in library_dirs():
        built = mirror(library)
        assert built is not None
        for folder, _, files in os.walk(built):
            assert not files or (folder[len(str(built)) :] + os.sep).startswith(library + os.sep), folder
    assert Path(f"{mirror(STDLIB)}{JSON_PYC}").samefile(cache_from_source(json.__file__))


def test_no_mirror_where_a_mount_overlaps_the_library_or_none_can_be_built(tmp_path: Path) -> None:
    packages = Path(site.getsitepackages()[0])
    assert shown_mirror(Mounts([tmp_path], [], []))[0] == MIRROR_AT
    for mounts in (
        Mounts([packages / "sklearn"], [], []),  # a workspace inside site-packages
        Mounts([tmp_path], [packages / "sklearn" / "base.py"], []),
        Mounts([tmp_path], [], [packages / "sklearn"]),  # a hidden task shipped in a package
        Mounts([Path(sys.prefix).parent], [], []),  # a writable folder holding the library
    ):
        assert shown_mirror(mounts) == (NO_BYTECODE, []), mounts
    (tmp_path / "file").write_text("")
    assert mirror(STDLIB, tmp_path / "file" / "cache") is None  # the cache folder cannot be made
    assert shown_mirror(Mounts([tmp_path], [], []), root=tmp_path / "file" / "cache") == (NO_BYTECODE, [])

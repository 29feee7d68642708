"""Second red team (#27), sandbox side: what a command can still learn or leave for the next
one. Each class ran through the real backends; every test here failed on the code before its fix."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from aiscientist.sandbox import bwrap, get_sandbox
from aiscientist.sandbox.interpreter import sandbox_path
from tests.sandbox_backends import BACKENDS

ISOLATED = [b for b in BACKENDS if getattr(b, "values", (b,))[0] != "local"]  # local isolates nothing


@pytest.mark.parametrize("backend", ISOLATED)
def test_owner_only_files_in_shown_system_folders_are_covered(
    tmp_path: Path, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Commands run as the host's user (root on CI): an owner-only file such as a key in
    /etc/ssl/private is readable by its owner, so a shown folder's private entries are covered."""
    etc = tmp_path / "etc-ssl"
    (etc / "private").mkdir(parents=True)
    (etc / "certs.pem").write_text("public-cert\n")
    (etc / "host.key").write_text("planted-private-key\n")
    (etc / "private" / "db.key").write_text("planted-private-dir-key\n")
    (etc / "host.key").chmod(0o600)
    (etc / "private").chmod(0o700)
    monkeypatch.setattr(bwrap, "etc_paths", lambda: [str(etc)])
    bwrap.private_paths.cache_clear()
    work = tmp_path / "work"
    work.mkdir()
    try:
        result = get_sandbox(backend).run(
            [f"cat {etc}/certs.pem; cat {etc}/host.key {etc}/private/db.key; ls -a {etc}/private; true"],
            cwd=work,
            timeout=60,
        )
    finally:
        bwrap.private_paths.cache_clear()
    assert result.ok, result.stderr_tail
    assert "public-cert" in result.stdout_tail
    assert "planted" not in result.stdout_tail and "db.key" not in result.stdout_tail


@pytest.mark.parametrize("backend", BACKENDS)
def test_nothing_one_command_leaves_is_imported_as_byte_code_by_the_next(tmp_path: Path, backend: str) -> None:
    """A forged `.pyc` for a protected module, planted by one command where Python would look
    for it (the pycache prefix, which docker's shared /tmp kept; `__pycache__/` beside it)."""
    (tmp_path / "helper.py").write_text("def score():\n    return 0.5\n")
    plant = """
import importlib._bootstrap_external as ext, importlib.util, os, sys
src = os.path.abspath("helper.py")
info = os.stat(src)
code = compile("def score():\\n    return 99.0\\n", src, "exec")
data = ext._code_to_timestamp_pyc(code, int(info.st_mtime), info.st_size)
places = [importlib.util.cache_from_source(src)]
sys.pycache_prefix = None
places.append(importlib.util.cache_from_source(src))
for place in places:
    try:
        os.makedirs(os.path.dirname(place), exist_ok=True)
        open(place, "wb").write(data)
        print("planted", place)
    except OSError as err:
        print("refused", place, err)
"""
    (tmp_path / "plant.py").write_text(plant)
    result = get_sandbox(backend).run(
        ["python plant.py", "python -c 'import helper; print(\"score\", helper.score())'"],
        cwd=tmp_path,
        timeout=60,
        writable=[tmp_path],
    )
    assert result.ok, result.stderr_tail
    assert "planted" in result.stdout_tail  # the attack did plant what it could
    assert "score 0.5" in result.stdout_tail and "score 99.0" not in result.stdout_tail


def test_path_entries_that_climb_out_of_a_shown_folder_are_dropped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", os.pathsep.join(["/usr/../tmp/bin", "/usr/bin/../../tmp", "/usr/bin", "", "bin"]))
    entries = sandbox_path(["/usr"]).split(os.pathsep)
    assert "/usr/bin" in entries
    assert not [e for e in entries if ".." in e or not os.path.isabs(e)]

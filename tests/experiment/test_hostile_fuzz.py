"""Hypothesis fuzz of hostile trees over every host-side reader of an untrusted tree.

A tree is planted the way experiment code would leave it: deep folders, undecodable,
long, newline and escape names, large sparse files, links into and out of the tree,
dangling and looping links, FIFOs and hard links. A sentinel file outside the tree is
the target of every outward link; its content must never appear in anything the host
reads or writes, nothing outside the tree may change, no reader may block on a FIFO
or raise anything but its documented error, and a step over such a tree is recorded.
"""

from __future__ import annotations

import io
import os
import signal
import tarfile
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aiscientist.experiment import integrity, snapshots
from aiscientist.records import metrics_file
from aiscientist.records.step import folder_hashes
from aiscientist.sandbox import bwrap_works
from aiscientist.task import load_task
from aiscientist.util import archive, untrusted
from aiscientist.viewer.load import load_run
from aiscientist.viewer.render import render
from aiscientist.workspace import Workspace, verify_run
from bench.paper import checks, judge, reproduce
from bench.paper.grading import _log_copy

BWRAP = pytest.param("bwrap", marks=pytest.mark.skipif(not bwrap_works(), reason="bubblewrap is not usable here"))
TINY = Path(__file__).parents[1] / "fixtures" / "tiny" / "task.yaml"
SECRET = b"SENTINEL-8c1f0e-outside-the-tree"
HARD = b"HARDLINKED-5d2a77-outside-the-tree"
FUZZ = settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck), database=None)

# Runs both on the host (to plant a tree directly) and inside train.py (a step leaves it):
# every folder on the way is opened without following links, so planting never writes outside.
PLANT = r"""
def plant(root, spec, outside):
    import os
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    for kind, rel, arg in spec:
        parts = rel.split(b"/")
        fd = os.open(root, flags)
        try:
            for part in parts[:-1]:
                try:
                    os.mkdir(part, dir_fd=fd)
                except FileExistsError:
                    pass
                sub = os.open(part, flags, dir_fd=fd)
                os.close(fd)
                fd = sub
            name = parts[-1]
            if kind == "file":
                out = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644, dir_fd=fd)
                os.write(out, arg)
                os.close(out)
            elif kind == "sparse":
                out = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644, dir_fd=fd)
                os.ftruncate(out, arg)
                os.close(out)
            elif kind == "dir":
                os.mkdir(name, dir_fd=fd)
            elif kind == "link":
                os.symlink(arg.replace(b"@OUT@", outside), name, dir_fd=fd)
            elif kind == "swap":  # a task or editable file replaced by a link
                os.unlink(name, dir_fd=fd)
                os.symlink(arg.replace(b"@OUT@", outside), name, dir_fd=fd)
            elif kind == "fifo":
                os.mkfifo(name, dir_fd=fd)
            elif kind == "hard":
                os.link(arg.replace(b"@OUT@", outside), name, dst_dir_fd=fd)
            elif kind == "deep":
                for _ in range(arg):
                    os.mkdir(name, dir_fd=fd)
                    sub = os.open(name, flags, dir_fd=fd)
                    os.close(fd)
                    fd = sub
                os.close(os.open(b"bottom.py", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd))
        except OSError:
            pass  # a clash with an earlier entry (a file where a folder should be): skip it
        finally:
            os.close(fd)
"""
_NS: dict = {}
exec(PLANT, _NS)
plant = _NS["plant"]

HOSTILE_NAMES = [
    b"evil\xff.py",
    b"new\nline.py",
    b"\x1b]0;owned\x07.txt",
    b"\x1b[2Jclear",
    b"\x1b]52;c;aGk=\x07",
    b"\xe2\x80\xaeevil.txt",
    b"a" * 255,
    b"\xc3\xa9" * 127,
    b".git",
    b"-rf",
    b"sitecustomize.py",
    b"os.py",
    b"train.py",
    b"config.py",
    b"final_info.json",
    b"weights.json",
    b"reproduce.log",
    b"results",
]
names = st.one_of(
    st.sampled_from(HOSTILE_NAMES),
    st.binary(min_size=1, max_size=12).filter(lambda b: b"/" not in b and b"\0" not in b and b not in (b".", b"..")),
)
paths = st.lists(names, min_size=1, max_size=3).map(b"/".join)
LINK_TARGETS = [
    b"@OUT@/secret.txt",  # absolute, out of the tree
    b"../" * 12 + b"@OUT@/secret.txt",  # relative, climbing out
    b"@OUT@",  # a folder outside
    b"/dev/zero",  # endless if followed
    b"train.py",  # inside
    b"nowhere/at/all",  # dangling
    b"loop",  # loops when named loop
    b"..",
]
JSON_BODIES = [
    b'{"quadratic": {"means": {"mse_mean": 0.5, "r2_mean": 0.9}}}',
    b"[" * 5000 + b"]" * 5000,
    b'{"a": ' * 3000 + b"1" + b"}" * 3000,
    b"\xff\xfe not json",
]
entries = st.one_of(
    st.tuples(st.just("file"), paths, st.one_of(st.binary(max_size=300), st.sampled_from(JSON_BODIES))),
    st.tuples(st.just("sparse"), paths, st.sampled_from([11 << 20, 1 << 20])),
    st.tuples(st.just("dir"), paths, st.none()),
    st.tuples(st.just("link"), paths, st.sampled_from(LINK_TARGETS)),
    st.tuples(
        st.just("swap"), st.sampled_from([b"evaluate.py", b"data.py", b"config.py"]), st.sampled_from(LINK_TARGETS)
    ),
    st.tuples(st.just("fifo"), paths, st.none()),
    st.tuples(st.just("hard"), paths, st.just(b"@OUT@/hard.txt")),
    st.tuples(st.just("deep"), st.sampled_from([b"n", b"deep/\xff"]), st.integers(1, 160)),
)
trees = st.lists(entries, min_size=1, max_size=12)


class Blocked(Exception):
    pass


@contextmanager
def no_blocking(seconds: int = 30) -> Iterator[None]:
    """Fail instead of hanging when a reader blocks (an opened FIFO, a followed /dev/zero)."""

    def fire(signum: int, frame: object) -> None:
        raise Blocked(f"a reader blocked for {seconds}s")

    previous = signal.signal(signal.SIGALRM, fire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _outside(base: Path) -> Path:
    out = base / "outside"
    (out / "dir").mkdir(parents=True)
    (out / "secret.txt").write_bytes(SECRET)
    (out / "hard.txt").write_bytes(HARD)
    return out


def _state(folder: Path) -> dict[str, tuple[int, bytes]]:
    """Mode and content of everything below a trusted folder (hard links may add names, not change these)."""
    found = {}
    for node in untrusted.walk(folder).nodes:
        data = (folder / node.rel).read_bytes() if node.kind == "file" else b""
        found[node.rel] = (os.lstat(folder / node.rel).st_mode, data)
    return found


def _no_secret_below(folder: Path, untrusted_part: str = "submission") -> None:
    """No file the host wrote below `folder` (records, blobs, map, page, copies) holds the sentinel."""
    for node in untrusted.walk(folder, enter=lambda rel: rel != untrusted_part).files():
        data = untrusted.read_head(folder, node.rel, 256 << 20)
        assert SECRET not in data, f"the sentinel leaked into {node.rel!r}"


def _text_out(*values: object) -> None:
    for value in values:
        assert SECRET.decode() not in str(value), "the sentinel leaked into a reader's output"


def _readers(ws: Workspace, tmp: Path) -> None:
    """Every host-side reader of the submission; each may raise only its documented error."""
    sub, paths = ws.paths.submission, ws.paths
    tree = integrity.scan(sub)
    _text_out(tree, integrity.violations(ws.task, sub, ws.engine.baseline_tree(), tree, "final_info.json"))
    walked = untrusted.walk(sub)
    for node in walked.files():
        for read in (untrusted.read_file, untrusted.read_head):
            try:
                _text_out(read(sub, node.rel, 1 << 20))
            except untrusted.Unreadable:
                pass
    rels = sorted(tree)
    ws.engine.snapshot(snapshots.BEST_TAG, "fuzzed best")
    _text_out(snapshots.diff_stat(paths, snapshots.BASELINE_TAG, rels))
    try:
        metrics_file.load_means(sub / "final_info.json", sub)
    except metrics_file.MetricsError as err:
        _text_out(err)
    _text_out(ws.refresh_map(), folder_hashes(sub))
    _text_out(reproduce.snapshot(sub), [(f.path, f.text) for f in judge.read_files(sub)])
    for rel in [r for r in rels if r.isprintable()][:20]:  # a rubric names plain paths
        metric = checks.JsonMetric(type="json_metric", file=rel, path="quadratic.means.mse_mean", value=0.5)
        _text_out(metric.evaluate(sub, set(rels)))
        assert (
            not checks.TextMatch(type="text_match", file=rel, pattern=SECRET.decode()).evaluate(sub, set(rels)).passed
        )
    copied = reproduce.reproduce(sub, tmp / "grade", timeout_s=5)
    _text_out(_log_copy(copied), judge.read_files(copied.copy_dir))
    try:
        snapshots.restore(paths, snapshots.BASELINE_TAG, rels)
        snapshots.restore(paths, snapshots.BEST_TAG, rels)
    except snapshots.SnapshotError as err:
        _text_out(err)
    run = load_run(paths.root)
    _text_out(render(run), verify_run(paths.root))


@contextmanager
def _workspace(backend: str = "local") -> Iterator[tuple[Workspace, Path, Path]]:
    with tempfile.TemporaryDirectory(prefix="fuzz-") as base:
        outside = _outside(Path(base))
        ws = Workspace.create(load_task(TINY), Path(base) / "run", sandbox=backend)
        yield ws, outside, Path(base)


@FUZZ
@given(spec=trees)
def test_every_reader_survives_a_hostile_tree_and_reads_nothing_outside(spec: list) -> None:
    with _workspace() as (ws, outside, base):
        before = _state(outside)
        plant(os.fsencode(ws.paths.submission), spec, os.fsencode(outside))
        with no_blocking():
            _readers(ws, base)
        assert _state(outside) == before, "a reader wrote outside the tree"
        _no_secret_below(ws.paths.root)
        _no_secret_below(base / "grade", "")  # the grader's copy of the submission


def _hostile_train(spec: list, outside: Path) -> str:
    honest = (TINY.parent / "repo" / "train.py").read_text()
    return f"{honest}\n\n{PLANT}\nplant(b'.', {spec!r}, {os.fsencode(outside)!r})\n"


@pytest.mark.parametrize("backend", ["local", BWRAP])
@settings(FUZZ, max_examples=8)
@given(spec=trees)
def test_a_step_that_leaves_a_hostile_tree_is_recorded(backend: str, spec: list) -> None:
    with _workspace(backend) as (ws, outside, base):
        before = _state(outside)
        (ws.paths.submission / "train.py").write_text(_hostile_train(spec, outside))
        with no_blocking(60):
            record = ws.engine.run_step("attacker", "hostile tree")
            saved = ws.paths.step_record(record.step)
            assert saved.is_file() and record.step == 1
            assert record.valid or record.error, "an invalid step says why"
            _readers(ws, base)
            again = ws.engine.run_step("agent", "the next step runs on a reset tree")
        assert ws.paths.step_record(again.step).is_file()
        assert verify_run(ws.paths.root).clean  # the engine put every protected file back
        assert _state(outside) == before, "the step or a reader wrote outside the tree"
        _no_secret_below(ws.paths.root)


PLAIN_MEMBERS = st.sampled_from(["a", "dup", "a/b", "dup/inner", "d/e/f", "reproduce.sh"])
MEMBER_NAMES = st.one_of(
    PLAIN_MEMBERS,
    PLAIN_MEMBERS,
    paths.map(lambda b: b.decode("utf-8", "surrogateescape")),
    st.sampled_from(["/abs/file", "../up", "a/../../up", "./", "x" * 300, "bad\x00name", "a/./b", "a//b"]),
)
members = st.tuples(
    st.sampled_from(["file"] * 5 + ["dir"] * 2 + ["sym", "sym", "hard", "hard", "fifo", "chr"]),
    MEMBER_NAMES,
    st.sampled_from(["dup", "a", "a/b", "b", "../outside/secret.txt", "/etc/passwd", "", "../" * 3, "dup/../dup"]),
    st.binary(max_size=64),
)


def _tar(specs: list) -> bytes:
    kinds = {
        "file": tarfile.REGTYPE,
        "dir": tarfile.DIRTYPE,
        "sym": tarfile.SYMTYPE,
        "hard": tarfile.LNKTYPE,
        "fifo": tarfile.FIFOTYPE,
        "chr": tarfile.CHRTYPE,
    }
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT, encoding="utf-8") as tar:
        for kind, name, link, data in specs:
            info = tarfile.TarInfo(name)
            info.type, info.linkname = kinds[kind], link
            info.size = len(data) if kind == "file" else 0
            try:
                tar.addfile(info, io.BytesIO(data) if kind == "file" else None)
            except (ValueError, UnicodeError):
                continue  # a name tarfile itself cannot write
    return buffer.getvalue()


@settings(FUZZ, max_examples=80)
@given(specs=st.lists(members, min_size=1, max_size=10))
def test_unpack_writes_only_inside_its_folder(specs: list) -> None:
    with tempfile.TemporaryDirectory(prefix="fuzz-tar-") as base:
        outside = _outside(Path(base))
        (Path(base) / "submission.tar").write_bytes(_tar(specs))
        before = _state(Path(base))
        dest = Path(base) / "unpacked"
        try:
            written = archive.unpack(Path(base) / "submission.tar", dest)
        except archive.ArchiveError as err:
            _text_out(err)
            written = []
        after = _state(Path(base))
        assert {rel: v for rel, v in after.items() if not rel.startswith("unpacked")} == before
        assert _state(outside) == {rel[len("outside/") :]: v for rel, v in before.items() if rel.startswith("outside/")}
        for rel in written:
            assert not os.path.isabs(rel) and ".." not in rel.split("/")
        if dest.exists():
            _no_secret_below(dest)

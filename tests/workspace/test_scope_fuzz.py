"""Property-based path fuzz of the file API (issue #18, item 5): at least 10,000
generated paths (lone surrogates, NUL, `..`, absolute, very long, links planted
in the run folder that lead inside and outside it) through read, write, edit,
list and search for several roles. The oracle is written independently of
permissions.yaml: markers outside the run folder and in the denied areas must
never show up in anything returned, the files there must keep their hashes,
and whatever a role writes must land in its own area. Any exception other than
a ToolError fails the test."""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aiscientist.task import load_task
from aiscientist.workspace import ToolError, Workspace, verify_run

TINY = Path(__file__).parents[1] / "fixtures" / "tiny" / "task.yaml"
BATCH = 50
NEARBY = 15
EXAMPLES = 200
CONTENT = "FUZZ-WRITE\n"
EDITABLE = ["submission/train.py", "submission/config.py"]
READ = {
    "helper": ["task", "paper_analysis", "plan", "submission", "experiments", "scratch", "WORKSPACE.md"],
    "implementation": [
        "task",
        "paper_analysis",
        "plan",
        "submission",
        "experiments",
        "scratch",
        "logs/exp_log.md",
        "logs/impl_log.md",
        "WORKSPACE.md",
    ],
    "agent": ["task", "submission", "scratch"],
    "comprehension": ["task", "paper_analysis", "submission", "WORKSPACE.md"],
}
WRITE = {
    "helper": ["scratch"],
    "implementation": EDITABLE,
    "agent": [*EDITABLE, "scratch"],
    "comprehension": ["paper_analysis"],
}
NEVER = [".pristine", "state", "logs/events.jsonl", "logs/llm_calls.jsonl", "submission/.git", "submission/heldout"]
# Hashed before and after each batch: none of it may change (the two files that
# every recorded event rewrites are left out).
DENIED = [
    ".pristine",
    "state",
    "logs",
    "task",
    "experiments",
    "submission/.git",
    "submission/heldout",
    "submission/evaluate.py",
    "submission/data.py",
]
CHURN = frozenset({"state/events_head.json", "logs/events.jsonl"})
WRITABLE = ["scratch", "paper_analysis", "plan"]
LINKS = [
    "out_dir",
    "out_file",
    "abs_out",
    "up",
    "to_pristine",
    "to_state",
    "to_logs",
    "to_git",
    "to_protected",
    "to_train",
    "to_inner",
    "loop",
    "hard_out",
    "fifo",
]


def under(rel: str, areas: list[str]) -> bool:
    return any(rel == a or rel.startswith(a + "/") for a in areas)


def tree(folder: Path, skip: frozenset[str] = frozenset(), top: Path | None = None) -> dict[str, str]:
    """sha256 of every file under `folder` (links as their target text), by path."""
    top = top or folder
    out: dict[str, str] = {}
    for path in [folder] if not folder.is_dir() or folder.is_symlink() else sorted(folder.rglob("*")):
        rel = path.relative_to(top).as_posix()
        if rel in skip:
            continue
        if path.is_symlink():
            out[rel] = "link:" + os.readlink(path)
        elif path.is_file():
            out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A run folder with markers in every denied area and beside it, and links
    planted in the areas roles may write."""
    base = tmp_path_factory.mktemp("fuzz")
    outside = base / "outside"
    (outside / "deep").mkdir(parents=True)
    markers = {
        name: f"{name}-{os.urandom(6).hex()}" for name in ("OUTSIDE", "PRISTINE", "STATE", "GIT", "HIDDEN", "LLMCALLS")
    }
    (outside / "secret.txt").write_text(markers["OUTSIDE"] + "\n")
    (outside / "deep" / "secret.txt").write_text(markers["OUTSIDE"] + "\n")
    ws = Workspace.create(load_task(TINY), base / "run", sandbox="local")
    root = ws.paths.root
    (root / ".pristine" / "m.txt").write_text(markers["PRISTINE"] + "\n")
    (root / "state" / "m.txt").write_text(markers["STATE"] + "\n")
    (root / "submission" / ".git").mkdir(exist_ok=True)  # one the experiment code made (git's own is in state/)
    (root / "submission" / ".git" / "m.txt").write_text(markers["GIT"] + "\n")
    (root / "submission" / "heldout" / "m.txt").write_text(markers["HIDDEN"] + "\n")
    (root / "logs" / "llm_calls.jsonl").write_text(markers["LLMCALLS"] + "\n")
    (root / "scratch" / "inner").mkdir()
    for rel in ("scratch/inner/notes.md", "plan/summary.md", "paper_analysis/summary.md"):
        (root / rel).write_text("FUZZ notes\n")
    for folder in ("scratch", "submission", "plan", "paper_analysis"):
        here = root / folder
        (here / "out_dir").symlink_to(os.path.relpath(outside, here))
        (here / "out_file").symlink_to(os.path.relpath(outside / "secret.txt", here))
        (here / "abs_out").symlink_to(outside / "deep")
        (here / "up").symlink_to("..")
        (here / "to_pristine").symlink_to(root / ".pristine")
        (here / "to_state").symlink_to("../state")
        (here / "to_logs").symlink_to("../logs")
        (here / "to_git").symlink_to(root / "submission" / ".git")
        (here / "to_protected").symlink_to(root / "submission" / "evaluate.py")
        (here / "to_train").symlink_to(root / "submission" / "train.py")
        (here / "to_inner").symlink_to(root / "scratch" / "inner")
        (here / "loop").symlink_to("loop")
    os.link(outside / "secret.txt", root / "scratch" / "hard_out")
    os.mkfifo(root / "scratch" / "fifo")
    yield {
        "ws": ws,
        "base": base,
        "markers": list(markers.values()),
        "baseline": contents(root),
        "scopes": {role: ws.scope(role) for role in READ},
    }
    shutil.rmtree(base, ignore_errors=True)


ODD = ["\udc80", "\ud800", "\udfff", "a\udc80b", "\0", "a\0b", "\0\udc80", "n" * 300, "é" * 130, "~", "etc", "passwd"]
SEGMENTS = [
    "",
    ".",
    "..",
    "...",
    "task",
    "paper_analysis",
    "plan",
    "submission",
    "experiments",
    "logs",
    "state",
    ".pristine",
    ".git",
    "scratch",
    "heldout",
    "m.txt",
    "evaluate.py",
    "data.py",
    "train.py",
    "config.py",
    "exp_log.md",
    "events.jsonl",
    "llm_calls.jsonl",
    "workspace.json",
    "manifest.json",
    "inner",
    "secret.txt",
    "deep",
    "WORKSPACE.md",
    *LINKS,
]
PLAIN = [
    "new.txt",
    "a",
    "b",
    "notes.md",
    "train.py",
    "config.py",
    "task.md",
    "inner",
    "m.txt",
    "evaluate.py",
    "summary.md",
]
# Mostly names a role might use, so that many calls are accepted and the oracle
# has something to check; one name in five is a link, a dot or worse.
NAMES = st.one_of(
    *[st.sampled_from(PLAIN)] * 5,
    *[st.sampled_from(SEGMENTS)] * 3,
    st.sampled_from(ODD),
    st.text(max_size=6),
    st.integers(0xD800, 0xDFFF).map(chr),
)
LEADS = st.sampled_from(["", "", "", "", "", "", "", "", "./", "/", "//", "/etc/", "\0", "../"])
AREAS = st.sampled_from(
    [
        "scratch",
        "submission",
        "plan",
        "paper_analysis",
        "task",
        "logs",
        "state",
        ".pristine",
        "experiments",
        ".",
        "WORKSPACE.md",
    ]
)
STRUCTURED = st.builds(
    lambda lead, area, rest: lead + "/".join([area, *rest]), LEADS, AREAS, st.lists(NAMES, max_size=4)
)
LINKED = st.builds(
    lambda lead, area, link, rest: lead + "/".join([area, link, *rest]),
    LEADS,
    st.sampled_from(["scratch", "submission", "plan", "paper_analysis"]),
    st.sampled_from(LINKS),
    st.lists(NAMES, max_size=3),
)
WILD = st.builds(lambda lead, parts: lead + "/".join(parts), LEADS, st.lists(NAMES, min_size=1, max_size=6))
LONG = st.integers(520, 1600).map(lambda n: "scratch/" + "a/" * n)  # longer than the 1024-byte path limit
PATHS = st.one_of(*[STRUCTURED] * 6, *[LINKED] * 2, WILD, LONG)
# Calls near where roles work (plain names under real areas, sometimes a link),
# so that many are accepted and the oracle has something to check.
EXISTING = [
    "task/task.md",
    "submission/train.py",
    "submission/config.py",
    "submission/evaluate.py",
    "WORKSPACE.md",
    "logs/exp_log.md",
    "scratch/inner/notes.md",
    "plan/summary.md",
    "paper_analysis/summary.md",
    "scratch",
    "submission",
    ".",
]
NEAR = st.one_of(
    st.sampled_from(EXISTING),
    st.builds(
        lambda area, rest: "/".join([area, *rest]),
        st.sampled_from(["scratch", "submission", "plan", "paper_analysis", "task", "experiments"]),
        st.lists(st.sampled_from(PLAIN + LINKS), max_size=2),
    ),
)
OPS = st.sampled_from(["read", "write", "edit", "list", "search"])
CALLS = st.tuples(st.sampled_from(sorted(READ)), OPS, PATHS)
NEAR_CALLS = st.tuples(st.sampled_from(sorted(READ)), OPS, NEAR)


def run_call(scope, op: str, path: str):
    if op == "read":
        return scope.read(path)
    if op == "write":
        return scope.write(path, CONTENT)
    if op == "edit":
        return scope.edit(path, "FUZZ", "FUZZ")
    if op == "list":
        return scope.list(path)
    return scope.search("MARKER|SECRET|FUZZ|-[0-9a-f]{12}", path)


def check_accepted(root: Path, role: str, op: str, path: str, out, markers: list[str]) -> None:
    """What an accepted call did and returned is within `role`'s areas."""
    shown = "\n".join(out) if isinstance(out, list) else str(out)
    assert not [m for m in markers if m in shown], f"{role} {op} {path!r} returned a marker: {shown[:300]}"
    rel = "/".join(p for p in path.split("/") if p not in ("", "."))
    if op in ("write", "edit"):
        assert under(rel, WRITE[role]) and not under(rel, NEVER), f"{role} {op} {path!r} accepted"
        assert os.path.realpath(root / rel) == str(root / rel), f"{role} {op} {path!r} went through a link"
        assert (root / rel).read_text() == CONTENT or op == "edit"
    elif op == "read":
        assert under(rel, READ[role]) and not under(rel, NEVER), f"{role} read {path!r} accepted"
    else:
        for line in out:
            if line.startswith("[..."):
                continue
            if line.endswith("/"):
                continue  # a folder's name (it may hold readable files deeper down)
            entry = line.split(":", 1)[0] if op == "search" else line
            assert under(entry, READ[role]) and not under(entry, NEVER), f"{role} {op} {path!r} showed {entry}"


def contents(root: Path) -> set[str]:
    """Every path under the areas roles write, links included."""
    found = set()
    for folder in WRITABLE:
        for here, dirs, files in os.walk(root / folder):
            found |= {os.path.relpath(os.path.join(here, name), root) for name in dirs + files}
    return found


def reset(root: Path, baseline: set[str]) -> None:
    """Remove what accepted writes created, so every batch sees the same tree."""
    for rel in sorted(contents(root) - baseline, reverse=True):  # children before their folders
        target = root / rel
        shutil.rmtree(target) if target.is_dir() and not target.is_symlink() else target.unlink()


def test_fuzzed_paths_never_escape_or_crash(world):
    ws, base, markers = world["ws"], world["base"], world["markers"]
    root = ws.paths.root
    beside_before, outside_before = sorted(os.listdir(base)), tree(base / "outside")
    denied_before = {area: tree(root / area, skip=CHURN, top=root) for area in DENIED}
    tally = {"paths": 0, "accepted": 0}
    started = time.monotonic()

    @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
    @given(
        wild=st.lists(CALLS, min_size=BATCH - NEARBY, max_size=BATCH - NEARBY),
        near=st.lists(NEAR_CALLS, min_size=NEARBY, max_size=NEARBY),
    )
    def batch(wild, near):
        for role, op, path in wild + near:
            tally["paths"] += 1
            try:
                out = run_call(world["scopes"][role], op, path)
            except ToolError:
                continue
            tally["accepted"] += 1
            check_accepted(root, role, op, path, out, markers)
        for area in DENIED:
            assert tree(root / area, skip=CHURN, top=root) == denied_before[area], f"{area} changed"
        assert sorted(os.listdir(base)) == beside_before and tree(base / "outside") == outside_before
        reset(root, world["baseline"])

    batch()
    elapsed = time.monotonic() - started
    print(f"\nfuzzed {tally['paths']} paths ({tally['accepted']} accepted) in {elapsed:.1f} s")
    assert tally["paths"] >= 10_000
    assert tally["accepted"] > 500  # the property has something to bite on
    report = verify_run(root)
    assert report.clean, report.problems

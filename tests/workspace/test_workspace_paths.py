"""Property tests: no path a role's scope accepts ever resolves outside what
the role may touch. The oracle below is written independently of
permissions.yaml: plain lists of real folders/files per role."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aiscientist.task import load_task
from aiscientist.workspace import PermissionDenied, ToolError, Workspace
from aiscientist.workspace.eventlog import read_events

TINY = Path(__file__).parents[1] / "fixtures" / "tiny" / "task.yaml"

# role -> (folders/files it may read, files/folders it may write), for each permission set.
ORACLE = {
    "file_bus": {
        "implementation": (
            [
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
            ["submission/train.py", "submission/config.py"],
        ),
        "comprehension": (["task", "paper_analysis", "submission", "WORKSPACE.md"], ["paper_analysis"]),
        "helper": (
            ["task", "paper_analysis", "plan", "submission", "experiments", "scratch", "WORKSPACE.md"],
            ["scratch"],
        ),
        "orchestrator": (
            [
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
            [],
        ),
        "agent": (["task", "submission", "scratch"], ["submission/train.py", "submission/config.py", "scratch"]),
    },
    "file_bus_off": {
        "implementation": (["task", "submission"], ["submission/train.py", "submission/config.py"]),
        "comprehension": (["task", "paper_analysis"], ["paper_analysis"]),
        "prioritization": (["task", "plan"], ["plan"]),
    },
}
NEVER = [
    ".pristine",
    "state",
    "logs/events.jsonl",
    "logs/llm_calls.jsonl",
    "submission/.git",
    "submission/heldout/seed.json",
    "submission/evaluate.py:w",
    "submission/data.py:w",
]

SEGMENTS = [
    "",
    ".",
    "..",
    "submission",
    "plan",
    "scratch",
    "task",
    "paper_analysis",
    "experiments",
    "logs",
    "state",
    ".pristine",
    ".git",
    "files",
    "manifest.json",
    "events.jsonl",
    "exp_log.md",
    "train.py",
    "config.py",
    "evaluate.py",
    "data.py",
    "heldout",
    "seed.json",
    "out_dir",
    "out_file",
    "hard_out",
    "hard_protected",
    "fifo",
    "to_pristine",
    "to_protected",
    "to_train",
    "to_state",
    "loop",
    "~",
    "etc",
    "passwd",
]


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """A run folder with symlinks planted inside it, pointing out of it and
    into places no role may reach."""
    base = tmp_path_factory.mktemp("paths")
    outside = base / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret\n")
    runs = {}
    for set_name in ORACLE:
        ws = Workspace.create(load_task(TINY), base / set_name, file_bus=set_name == "file_bus", sandbox="local")
        root = ws.paths.root
        for folder in ("submission", "scratch", "plan", "paper_analysis"):
            (root / folder / "out_dir").symlink_to(outside)
            (root / folder / "out_file").symlink_to(outside / "secret.txt")
            (root / folder / "to_pristine").symlink_to(root / ".pristine")
            (root / folder / "to_protected").symlink_to(root / "submission" / "evaluate.py")
            (root / folder / "to_state").symlink_to("../state")
            (root / folder / "to_train").symlink_to(root / "submission" / "train.py")
            (root / folder / "loop").symlink_to("loop")
        (root / "submission" / "heldout" / "seed.json").write_text("{}")  # a hidden asset that leaked in
        os.link(outside / "secret.txt", root / "scratch" / "hard_out")  # 3 links once both runs exist
        os.link(root / "submission" / "evaluate.py", root / "submission" / "hard_protected")
        os.mkfifo(root / "scratch" / "fifo")
        runs[set_name] = ws
    yield runs
    shutil.rmtree(base, ignore_errors=True)


NAMES = st.one_of(
    st.sampled_from(SEGMENTS),
    st.sampled_from(SEGMENTS),
    st.sampled_from(SEGMENTS),
    st.text(min_size=1, max_size=12),
    st.text(alphabet="ßé字🙂\u202e\u0301x", min_size=1, max_size=6),
    st.integers(200, 300).map(lambda n: "n" * n),
)
LEADS = st.sampled_from(["", "", "", "", "", "", "./", "/", "//"])
# Mostly paths that start in a real area (so that many are accepted and the
# property has something to bite on), some entirely arbitrary.
structured = st.builds(
    lambda lead, area, rest: lead + "/".join([area, *rest]),
    LEADS,
    st.sampled_from(
        [
            "task",
            "paper_analysis",
            "plan",
            "submission",
            "experiments",
            "logs",
            "scratch",
            "state",
            ".pristine",
            "WORKSPACE.md",
            ".",
        ]
    ),
    st.lists(NAMES, max_size=4),
)
wild = st.builds(lambda lead, parts: lead + "/".join(parts), LEADS, st.lists(NAMES, min_size=1, max_size=6))
paths = st.one_of(structured, structured, structured, wild)


def allowed(root: Path, real: str, areas: list[str]) -> bool:
    rel = (
        Path(real).relative_to(os.path.realpath(root)).as_posix()
        if Path(real).is_relative_to(os.path.realpath(root))
        else None
    )
    if rel is None:
        return False
    return any(rel == a or rel.startswith(a + "/") for a in areas)


def never(rel: str, write: bool) -> bool:
    for entry in NEVER:
        target, _, mode = entry.partition(":")
        if (rel == target or rel.startswith(target + "/")) and (not mode or write):
            return True
    return False


def attempt(scope, op: str, path: str) -> bool:
    """True when the scope accepted the path (the operation may still fail
    for an ordinary reason such as a missing file)."""
    try:
        if op == "read":
            scope.read(path)
        elif op == "list":
            scope.list(path)
        else:
            scope.write(path, "x\n")
    except PermissionDenied:
        return False
    except ToolError:
        return True
    return True


LINKS = [
    "out_dir",
    "out_file",
    "to_pristine",
    "to_protected",
    "to_state",
    "to_train",
    "loop",
    "hard_out",
    "hard_protected",
    "fifo",
]
# Through one of the planted links, then on into what lies behind it.
linked = st.builds(
    lambda lead, area, link, rest: lead + "/".join([area, link, *rest]),
    LEADS,
    st.sampled_from(["submission", "scratch", "plan", "paper_analysis"]),
    st.sampled_from(LINKS),
    st.lists(
        st.one_of(
            st.sampled_from(
                ["manifest.json", "files", "secret.txt", "evaluate.py", "workspace.json", "logs", ".", ".."]
            ),
            NAMES,
        ),
        max_size=2,
    ),
)


def near(areas: list[str]) -> st.SearchStrategy[str]:
    """Paths that start inside one of `areas`, then wander (links, dots, names)."""
    return st.builds(
        lambda lead, area, rest: lead + "/".join([area, *rest]),
        LEADS,
        st.sampled_from(areas),
        st.lists(NAMES, max_size=3),
    )


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(set_name=st.sampled_from(sorted(ORACLE)), data=st.data())
def test_no_accepted_path_leaves_the_roles_area(planted, set_name, data):
    ws = planted[set_name]
    role = data.draw(st.sampled_from(sorted(ORACLE[set_name])))
    op = data.draw(st.sampled_from(["read", "write", "list"]))
    read_areas, write_areas = ORACLE[set_name][role]
    nearby = near((write_areas if op == "write" else read_areas) or ["scratch"])
    path = data.draw(st.one_of(nearby, linked, paths))
    root = ws.paths.root
    if not attempt(ws.scope(role), op, path):
        return
    real = os.path.realpath(root / path.lstrip("/")) if not path.startswith("/") else path
    rel = (
        Path(real).relative_to(os.path.realpath(root)).as_posix()
        if Path(real).is_relative_to(os.path.realpath(root))
        else None
    )
    assert rel is not None, f"{role} {op} {path!r} resolved outside the run folder: {real}"
    if op == "list":
        assert rel == "." or any(a.startswith(rel + "/") or allowed(root, real, [a]) for a in read_areas), (
            role,
            path,
            rel,
        )
        assert not never(rel, write=False) or rel == ".", (role, path, rel)
    else:
        areas = write_areas if op == "write" else read_areas
        assert allowed(root, real, areas), f"{role} {op} {path!r} accepted but resolves to {rel}"
        assert not never(rel, write=op == "write"), f"{role} {op} {path!r} reached {rel}"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(path=paths)
def test_listings_and_searches_show_only_readable_paths(planted, path):
    ws = planted["file_bus"]
    scope = ws.scope("comprehension")
    read_areas = ORACLE["file_bus"]["comprehension"][0]
    for action in (
        lambda: scope.list(path),
        lambda: [hit.split(":", 1)[0] for hit in scope.search("secret|import|seed", path)],
    ):
        try:
            shown = action()
        except ToolError:
            continue
        for entry in shown:
            if entry.startswith("[..."):
                continue
            rel = entry.rstrip("/")
            real = os.path.realpath(ws.paths.root / rel)
            if not entry.endswith("/"):
                assert allowed(ws.paths.root, real, read_areas) and not never(rel, write=False), (path, entry)


def test_refusals_are_specific_recorded_and_not_crashes(planted):
    ws = planted["file_bus"]
    impl = ws.scope("implementation")
    cases = {
        ("write", "submission/evaluate.py"): "implementation may not write submission/evaluate.py: protected file",
        ("write", "/etc/passwd"): "implementation may not write /etc/passwd: absolute paths are not allowed",
        ("read", "submission/../.pristine/manifest.json"): "'..' is not allowed",
        ("read", ".pristine/manifest.json"): "pristine copies of protected files are off limits",
        ("read", "submission/out_file"): "it leads outside the workspace (symlink)",
        ("read", "plan/to_pristine/manifest.json"): "it leads to .pristine/manifest.json: pristine copies",
        (
            "write",
            "scratch/to_protected",
        ): "implementation may not write scratch/to_protected: outside the files this role may write",
        ("write", "submission/to_protected"): "outside the files this role may write",
        ("read", "submission/heldout/seed.json"): "hidden test asset",
        ("write", "logs/exp_log.md"): "logs are append-only (use append_log)",
        (
            "write",
            "plan/prioritized_tasks.md",
        ): "outside the files this role may write (submission/train.py, submission/config.py)",
        ("read", "state/workspace.json"): "outside the areas this role may read",
        ("write", "scratch/" + "n" * 300): "longer than 255 bytes",
        (
            "read",
            "scratch/hard_out",
        ): "implementation may not read scratch/hard_out: the file has 3 hard links (it may alias another file)",
        (
            "read",
            "submission/hard_protected",
        ): "implementation may not read submission/hard_protected: the file has 2 hard links",
    }
    before = sum(1 for e in read_events(ws.paths.root) if e["kind"] == "access.denied")
    for (op, path), message in cases.items():
        with pytest.raises(PermissionDenied, match=None) as info:
            impl.read(path) if op == "read" else impl.write(path, "x")
        assert message in str(info.value), (op, path, str(info.value))
    denied = [e for e in read_events(ws.paths.root) if e["kind"] == "access.denied"]
    assert len(denied) - before == len(cases)
    assert [(e["role"], e["payload"]["op"], e["payload"]["path"]) for e in denied[-len(cases) :]] == [
        ("implementation", op, path[:200]) for op, path in cases
    ]
    with pytest.raises(PermissionDenied, match="may not append to exp_log: this role may not append"):
        impl.append("exp_log", "x")
    with pytest.raises(PermissionDenied, match="exceeds the 1000000-byte write limit"):
        impl.write("submission/config.py", "x" * 1_000_001)
    with pytest.raises(ValueError, match="unknown role 'nobody'"):
        ws.scope("nobody")
    helper = ws.scope("helper")
    with pytest.raises(PermissionDenied, match="helper may not read scratch/hard_out: the file has 3 hard links"):
        helper.read("scratch/hard_out")
    with pytest.raises(PermissionDenied, match="helper may not read scratch/fifo: not a regular file"):
        helper.read("scratch/fifo")
    assert not {"scratch/hard_out", "scratch/fifo"} & set(helper.list("scratch"))
    assert helper.search("secret", "scratch") == []


def test_an_editable_name_that_is_a_link_to_a_protected_file_is_refused(planted):
    ws = planted["file_bus"]
    config = ws.paths.submission / "config.py"
    saved = config.read_bytes()
    config.unlink()
    config.symlink_to("evaluate.py")
    try:
        with pytest.raises(
            PermissionDenied,
            match="may not write submission/config.py: it leads to submission/evaluate.py: protected file",
        ):
            ws.scope("implementation").write("submission/config.py", "pwned")
    finally:
        config.unlink()
        config.write_bytes(saved)
    assert ws.engine.tampered_files() == []

"""The invariant of issue 39, checked: host code touches files only through aiscientist/util/untrusted,
except in the reviewed modules below, which touch host-owned paths only.

Every folder a sandbox invocation can write (submission, scratch, the hidden-test, score and grading
copies, a handed-over run folder) is read, written, walked and removed through `util.untrusted`
(no link followed, nothing blocking, iterative, bounded). This test scans aiscientist/ and bench/ (the
AST) for raw file-system calls — builtin `open`, `Path.read_*`/`write_*`/`open`/`unlink`/`rmdir`/
`iterdir`/`glob`/`rglob`, `os.walk`/`listdir`/`system`/`popen`, any `shutil.*` or `subprocess.*` —
and allows them only in the modules of ALLOWED, each pinned to its count of such calls with the reason
its paths are host-owned. A raw call in another module fails with its file:line; one more in a listed
module fails until it is reviewed and the pin raised (one less: lower the pin, the list stays tight).
Code that runs inside a sandbox (task repositories, the peers' drivers, the workspace template) is
not host code and is not scanned.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ("aiscientist", "bench")
SANDBOX_SIDE = ("bench/tasks/", "bench/peers/drivers/", "aiscientist/workspace_template/")
PATH_METHODS = {
    "read_text",
    "read_bytes",
    "write_text",
    "write_bytes",
    "open",
    "unlink",
    "rmdir",
    "iterdir",
    "glob",
    "rglob",
}
OS_CALLS = {"walk", "listdir", "system", "popen"}
NOT_PATHS = {"os", "re", "fnmatch", "webbrowser", "glob", "untrusted", "tarfile", "zipfile"}

RECORDS = (
    "host records (run folder state/, experiments/, logs/; bench results), outside every sandbox's writable mounts"
)
TASK = "task definitions, configs and packaged resources the user gave, read or made before any sandbox runs"
USER = "the output folder the user named (an emptiness check before a run starts)"
TOOL = "starts or installs a host tool (sandbox backend, conda, model server, observer) on host-owned paths"
SCRATCH = "a scratch folder the host lays out before any sandbox writes it (removed by untrusted.scratch_folder)"
API = "reads through a descriptor util/untrusted opened (no link followed), or pristine copies (host-owned)"
PEERS = "the bridge's request files in the peer's folder state/agent/ (size-limited before they are read)"
NOT_IO = "not file I/O: a method of its own named open"
CGROUP = "the kernel's control-group files under /sys/fs/cgroup (host-owned; a sandbox cannot write them)"
LIBRARY = "the interpreter's library folders and the user's cache folder (no isolating sandbox writes either)"

ALLOWED: dict[str, tuple[int, str]] = {
    "aiscientist/agent/context.py": (1, RECORDS),
    "aiscientist/agent/experiment_tool.py": (2, RECORDS),
    "aiscientist/agent/journal.py": (3, RECORDS),
    "aiscientist/cli/baseline.py": (1, USER),
    "aiscientist/cli/guide.py": (1, TASK),
    "aiscientist/cli/solve.py": (2, USER),
    "aiscientist/cli/task_init.py": (3, TASK),
    "aiscientist/config.py": (1, TASK),
    "aiscientist/experiment/engine.py": (8, RECORDS),
    "aiscientist/experiment/evidence.py": (2, RECORDS),
    "aiscientist/experiment/finish.py": (1, RECORDS),
    "aiscientist/experiment/hidden.py": (3, SCRATCH),
    "aiscientist/experiment/integrity.py": (3, API),
    "aiscientist/experiment/repeats.py": (1, RECORDS),
    "aiscientist/experiment/runenv.py": (1, TOOL),
    "aiscientist/experiment/scoring.py": (2, SCRATCH),
    "aiscientist/experiment/setupfiles.py": (1, RECORDS),
    "aiscientist/experiment/snapshots.py": (8, RECORDS),
    "aiscientist/llm/budget.py": (1, RECORDS),
    "aiscientist/llm/config.py": (1, TASK),
    "aiscientist/llm/local/gguf.py": (7, TOOL),
    "aiscientist/llm/local/server.py": (3, TOOL),
    "aiscientist/llm/provider/backends.py": (1, TASK),
    "aiscientist/llm/store.py": (4, RECORDS),
    "aiscientist/orchestrator/arms.py": (2, RECORDS),
    "aiscientist/orchestrator/preflight.py": (2, TOOL),
    "aiscientist/orchestrator/run.py": (6, RECORDS),
    "aiscientist/records/cell.py": (3, RECORDS),
    "aiscientist/records/ledger.py": (3, RECORDS),
    "aiscientist/records/paths.py": (3, RECORDS),
    "aiscientist/records/result.py": (1, RECORDS),
    "aiscientist/records/step.py": (3, RECORDS),
    "aiscientist/records/timing.py": (2, RECORDS),
    "aiscientist/records/tree.py": (1, RECORDS),
    "aiscientist/resources.py": (1, TASK),
    "aiscientist/sandbox/bwrap.py": (3, TOOL),
    "aiscientist/sandbox/bytecode.py": (3, LIBRARY),
    "aiscientist/sandbox/cgroup.py": (8, CGROUP),
    "aiscientist/sandbox/interpreter.py": (2, TOOL),
    "aiscientist/sandbox/local.py": (2, TOOL),
    "aiscientist/specialists/base.py": (1, RECORDS),
    "aiscientist/specialists/experimentation.py": (1, RECORDS),
    "aiscientist/tracking/base.py": (3, RECORDS),
    "aiscientist/task/checks.py": (1, TASK),
    "aiscientist/task/fml.py": (2, TASK),
    "aiscientist/task/imports.py": (1, TASK),
    "aiscientist/task/load.py": (2, TASK),
    "aiscientist/task/model.py": (1, TASK),
    "aiscientist/util/archive.py": (1, API),
    "aiscientist/util/untrusted/descriptors.py": (1, API),
    "aiscientist/util/untrusted/walk.py": (1, API),
    "aiscientist/workspace/eventlog.py": (4, RECORDS),
    "aiscientist/workspace/fswatch.py": (1, TOOL),
    "aiscientist/workspace/guidance.py": (2, RECORDS),
    "aiscientist/workspace/permissions.py": (1, RECORDS),
    "aiscientist/workspace/scope.py": (1, API),
    "aiscientist/workspace/watcher.py": (7, RECORDS),
    "aiscientist/workspace/workspace.py": (12, RECORDS),
    "aiscientist/workspace/wsmap.py": (2, RECORDS),
    "bench/agents/ai_scientist.py": (1, RECORDS),
    "bench/agents/aide.py": (1, RECORDS),
    "bench/agents/external.py": (5, TOOL),
    "bench/agents/search/aira.py": (2, NOT_IO),
    "bench/agents/search/common.py": (1, RECORDS),
    "bench/fml/export.py": (8, RECORDS),
    "bench/fml/results.py": (7, TASK),
    "bench/grid/progress.py": (2, RECORDS),
    "bench/grid/runner.py": (13, RECORDS),
    "bench/grid/timing.py": (2, RECORDS),  # the cell's timing.json, beside ws/: written by the host only
    "bench/paper/judge_eval.py": (2, SCRATCH),
    "bench/paper/rubric.py": (2, TASK),
    "bench/peers/bridge.py": (1, PEERS),
    "bench/peers/serve.py": (1, RECORDS),
    "bench/peers/specs.py": (2, TOOL),
    "bench/scoring/contribution_judge.py": (2, RECORDS),
    "bench/scoring/embed.py": (1, RECORDS),
    "bench/scoring/report.py": (9, RECORDS),
}


def raw_calls(path: Path) -> list[tuple[int, str]]:
    """(line, call) of every raw file-system call in one module."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id == "open":
            found.append((node.lineno, "open"))
        elif isinstance(func, ast.Attribute):
            base = func.value.id if isinstance(func.value, ast.Name) else None
            if base in ("shutil", "subprocess") or (base == "os" and func.attr in OS_CALLS):
                found.append((node.lineno, f"{base}.{func.attr}"))
            elif func.attr in PATH_METHODS and base not in NOT_PATHS:
                found.append((node.lineno, f".{func.attr}"))
    return sorted(found)


def _modules() -> dict[str, list[tuple[int, str]]]:
    calls = {}
    for top in SCANNED:
        for path in sorted((ROOT / top).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if not rel.startswith(SANDBOX_SIDE) and (found := raw_calls(path)):
                calls[rel] = found
    return calls


def test_raw_file_calls_only_in_reviewed_host_modules() -> None:
    problems = []
    for rel, found in _modules().items():
        pinned = ALLOWED.get(rel, (0, ""))[0]
        if len(found) > pinned:
            where = ", ".join(f"{rel}:{line} {call}" for line, call in found)
            problems.append(
                f"{rel}: {len(found)} raw file-system call(s), {pinned} reviewed ({where}); use aiscientist.util."
                "untrusted, or (host-owned paths only) review and pin the module in tests/test_raw_io.py"
            )
        elif len(found) < pinned:
            problems.append(f"{rel}: {len(found)} raw call(s) now, {pinned} pinned: lower the pin")
    gone = sorted(set(ALLOWED) - set(_modules()))
    problems += [f"{rel}: no raw call left (or gone): remove it from ALLOWED" for rel in gone]
    assert not problems, "\n".join(problems)


def test_the_scan_sees_a_raw_call(tmp_path: Path) -> None:
    source = "from pathlib import Path\nimport shutil, subprocess\nPath('x').read_text()\nshutil.rmtree('y')\n"
    source += "subprocess.run(['git', 'status'])\nopen('z')\n"
    probe = tmp_path / "probe.py"
    probe.write_text(source)
    assert [call for _, call in raw_calls(probe)] == [".read_text", "shutil.rmtree", "subprocess.run", "open"]

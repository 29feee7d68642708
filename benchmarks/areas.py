"""Nothing a sandbox writes lands outside its areas (issue #39): `solve` (3 steps), `solve --resume`
(one more), a `bench run` cell with a peer agent plus `bench report`, and `grade` of a submission,
each run as a user runs it (`python -m aiscientist ...`, offline model, bwrap sandbox) on a hostile
copy of the tiny task: its step commands (and the submission's reproduce.sh) also try to write into
the home folder, /tmp, the run folder's host-owned areas (logs/, state/, .pristine/, task/, and
appends to its event log and manifest), the task's source repository and the working folder.

Before and after each scenario it lists (names, sizes, mtimes; bounded; links never followed) the
places that must not change and checks the run's hash chains (`aiscientist verify`). One JSON line a
scenario: scenario, wall_s, steps, escaped (changed paths outside the areas; expected empty),
attempts / attempts_blocked (hostile writes made / failed; a write that lands in the sandbox's own
private /tmp is contained, not blocked), verified, unattributed (changes in the shared home and /tmp
by other processes of the machine, not named by this run's token; the first 10); then a summary line. Exit 1 if
anything escaped.

    python benchmarks/areas.py                  # all four, about 2 minutes
    python benchmarks/areas.py --only solve     # the 3-step solve alone
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import yaml

from aiscientist.records.cell import BaselinePaths, CellPaths
from aiscientist.records.paths import STDOUT, RunPaths
from aiscientist.sandbox import bwrap_works
from aiscientist.util import untrusted
from bench.paper.reproduce import LOG_COPY, SCRIPT
from bench.peers.serve import LoopbackServer
from bench.peers.specs import PeerEnvError, ensure

ROOT = Path(__file__).resolve().parents[1]
TINY = ROOT / "tests" / "fixtures" / "tiny"
PAPER = ROOT / "bench" / "papers" / "knn-scaling"
PEER = "mini-swe-agent"
TOKEN = f"aisci-escape-{os.getpid()}-{time.time_ns() % 10**9}"  # names every hostile write of this run
MARK = "AISCI-ATTEMPT"
LIMIT = 20_000  # entries listed a place at most
SCENARIOS = ("solve", "resume", "bench", "grade")
ESCAPE = f"""attempt() {{ if (printf 'x\\n' > "$1") 2>/dev/null; then echo "{MARK} landed $1"; \
else echo "{MARK} blocked $1"; fi; }}
append() {{ if [ -f "$1" ] && (printf 'x\\n' >> "$1") 2>/dev/null; then echo "{MARK} landed $1"; \
else echo "{MARK} blocked $1"; fi; }}
"""

Listing = dict[str, tuple[str, int, int]]


def listing(root: Path, deep: bool) -> Listing:
    """Each entry's (kind, size, mtime) by its path below `root`: its top level, or all of it when
    `deep`; lstat only, at most LIMIT entries."""
    found: Listing = {}
    stack = [root]
    while stack and len(found) < LIMIT:
        folder = stack.pop()
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    info = entry.stat(follow_symlinks=False)
                    kind = "d" if stat.S_ISDIR(info.st_mode) else "l" if stat.S_ISLNK(info.st_mode) else "f"
                    found[str(Path(entry.path).relative_to(root))] = (
                        kind,
                        info.st_size * (kind != "d"),
                        info.st_mtime_ns,
                    )
                    if deep and kind == "d":
                        stack.append(Path(entry.path))
        except OSError:
            continue
    return found


def changed(before: Listing, after: Listing) -> list[str]:
    return sorted(name for name in before.keys() | after.keys() if before.get(name) != after.get(name))


class Places:
    """The places that must not change: shared ones (home, /tmp: only entries named by TOKEN count,
    other processes share them), private ones (any change counts) and run folders (a TOKEN name in a
    host-owned area counts; their task/ must not change once written)."""

    def __init__(self, base: Path, private: list[Path], runs: list[Path]):
        self.base, self.private, self.runs = base, private, runs
        self.shared = [Path.home(), Path("/tmp")]
        self.before = self._list()

    def _list(self) -> dict[Path, Listing]:
        lists = {p: listing(p, deep=False) for p in self.shared}
        lists.update({p: listing(p, deep=True) for p in self.private})
        lists.update({RunPaths(r).task: listing(RunPaths(r).task, deep=True) for r in self.runs})
        return lists

    def escaped(self) -> tuple[list[str], list[str]]:
        """(escaped, unattributed) paths since the listing made at construction."""
        after, escaped, unattributed = self._list(), [], []
        for place, before in self.before.items():
            for name in changed(before, after[place]):
                path = place / name
                if place not in self.shared or TOKEN in name:
                    escaped.append(str(path))
                elif self.base not in (path, *path.parents):  # this run's own folder may lie in /tmp
                    unattributed.append(str(path))
        for run in self.runs:
            paths = RunPaths(run)
            for area in (paths.logs, paths.state, paths.pristine, paths.task):
                escaped += [str(area / n) for n in listing(area, deep=True) if TOKEN in n]
        return sorted(set(escaped)), unattributed


def hostile_script(targets: list[Path], appends: list[Path]) -> str:
    """Shell lines trying to write a TOKEN file into each target folder and to append to each existing
    file, each printing whether it landed."""
    lines = [ESCAPE, f'attempt "$HOME/{TOKEN}-env"', f'attempt "/tmp/{TOKEN}"', f'attempt "{Path.home()}/{TOKEN}"']
    lines += [f'attempt "{target}/{TOKEN}"' for target in targets] + [f'append "{path}"' for path in appends]
    return "\n".join(lines) + "\ntrue\n"


def run_targets(run: Path, source: Path, work: Path) -> tuple[list[Path], list[Path]]:
    """A run's host-owned areas (and one relative way in from submission/), the task's source repository
    and the working folder; appends to the event log, the protected files' manifest and the source."""
    paths = RunPaths(run)
    targets = [paths.logs, paths.state, paths.pristine, paths.task, Path("..", paths.logs.name), source, work]
    return targets, [paths.events, paths.pristine_manifest, source / "train.py"]


def hostile_task(folder: Path, name: str, run: Path, work: Path) -> Path:
    """A copy of the tiny task whose step commands (and hidden test) also run the hostile script."""
    shutil.copytree(TINY, folder)
    spec = yaml.safe_load((folder / "task.yaml").read_text())
    source = folder / spec["repository"]
    (source / "escape.sh").write_text(hostile_script(*run_targets(run, source, work)))
    spec.update(name=name, commands=[*spec["commands"], "sh escape.sh"])
    spec["test_commands"] = [*spec["test_commands"], "sh escape.sh"]
    (folder / "task.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    return folder / "task.yaml"


def attempts(text: str) -> tuple[int, int]:
    lines = [line.split()[1] for line in text.splitlines() if line.startswith(MARK)]
    return len(lines), lines.count("blocked")


def run_attempts(run: Path) -> tuple[int, int, int]:
    """(steps, attempts, blocked) from the run's step folders' stdout, read as untrusted bytes."""
    records = RunPaths(run).step_records()
    made = blocked = 0
    for record in records:
        try:
            text = untrusted.read_file(record.parent, STDOUT, 1 << 20).decode(errors="replace")
        except OSError:
            continue
        made, blocked = made + attempts(text)[0], blocked + attempts(text)[1]
    return len(records), made, blocked


class Scenarios:
    def __init__(self, base: Path, sandbox: str):
        self.base, self.sandbox, self.work = base, sandbox, base / "work"
        self.work.mkdir()
        (base / "host-tmp").mkdir()
        self.env = {**os.environ, "TMPDIR": str(base / "host-tmp"), "PYTHONPATH": os.pathsep.join(sys.path)}

    def cli(self, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [sys.executable, "-m", "aiscientist", *args],
            cwd=self.work, env={**self.env, **(env or {})}, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        if done.returncode:
            print(
                f"  `aiscientist {' '.join(args[:2])}` exited {done.returncode}: {done.stderr[-600:]}", file=sys.stderr
            )
        return done

    def verify(self, run: Path) -> bool:
        return self.cli("verify", str(run)).returncode == 0

    def report(self, scenario: str, places: Places, started: float, steps: int, made: int, blocked: int,
               verified: bool) -> dict:  # fmt: skip
        escaped, unattributed = places.escaped()
        row = {"scenario": scenario, "wall_s": round(time.perf_counter() - started, 1), "steps": steps,
               "escaped": escaped, "attempts": made, "attempts_blocked": blocked, "verified": verified,
               "unattributed": unattributed[:10], "sandbox": self.sandbox}  # fmt: skip
        print(json.dumps(row), flush=True)
        return row

    def solve(self) -> dict:
        run = self.base / "solve-run"
        task = hostile_task(self.base / "solve-task", "tiny-hostile", run, self.work)
        places = Places(self.base, [task.parent, self.work], [])
        started = time.perf_counter()
        self.cli("solve", str(task), "--model", "offline", "--steps", "3", "--sandbox", self.sandbox,
                 "--run-dir", str(run))  # fmt: skip
        places.runs = [run]
        return self.report("solve", places, started, *run_attempts(run), self.verify(run))

    def resume(self) -> dict:
        run = self.base / "solve-run"
        task = self.base / "solve-task" / "task.yaml"
        places = Places(self.base, [task.parent, self.work], [run])
        steps_before = run_attempts(run)
        started = time.perf_counter()
        # a finished run continues only with a larger budget: --steps is the new total, one more than done
        self.cli("solve", "--resume", str(run), "--steps", str(steps_before[0] + 1), "--sandbox", self.sandbox)
        steps, made, blocked = (a - b for a, b in zip(run_attempts(run), steps_before, strict=True))
        return self.report("resume", places, started, steps, made, blocked, self.verify(run))

    def bench(self) -> dict | None:
        try:
            ensure(PEER)
        except PeerEnvError as err:
            print(f"bench: skipped, no peer installed ({err})", flush=True)
            return None
        out, name, agent = self.base / "bench-out", "tiny-hostile-peer", f"peer-{PEER}"
        run = CellPaths.of(out, name, agent, 1).ws
        task = hostile_task(self.base / "bench-task", name, run, self.work)
        places = Places(self.base, [task.parent, self.work], [])
        started = time.perf_counter()
        with ScriptedModel() as model:
            self.cli("bench", "run", "--agents", agent, "--tasks", str(task), "--rounds", "1", "--steps", "1",
                     "--model", "openai/scripted", "--judge-model", "offline", "--out", str(out), "--sandbox",
                     self.sandbox, "--option", f"{agent}.api_base={model.api_base}", "--no-progress",
                     "--embedder", "minilm", "--no-report", env={"OPENAI_API_KEY": "sk-loopback"})  # fmt: skip
        reported = self.cli("bench", "report", str(out)).returncode == 0
        baseline = BaselinePaths.of(out, name).ws  # the grid's shared baseline run: its step is hostile too
        places.runs = [r for r in (run, baseline) if r.is_dir()]
        steps, made, blocked = run_attempts(run)
        made, blocked = (a + b for a, b in zip((made, blocked), run_attempts(baseline)[1:], strict=True))
        return self.report("bench", places, started, steps, made, blocked, reported and self.verify(run))

    def grade(self) -> dict:
        folder = self.base / "grading"
        submission, paper, out = folder / "paper-code", folder / "paper", folder / "out"
        shutil.copytree(PAPER, paper)
        submission.mkdir(parents=True)
        script = hostile_script([submission, paper, out, self.work], [paper / "rubric.json"])
        (submission / SCRIPT).write_text(f"{script}echo done\n")
        places = Places(self.base, [submission, paper, self.work], [])
        started = time.perf_counter()
        done = self.cli("grade", str(submission), "--paper", str(paper), "--judge-model", "offline", "--out", str(out),
                        "--sandbox", self.sandbox)  # fmt: skip
        try:
            log = untrusted.read_file(out, LOG_COPY, 1 << 20).decode(errors="replace")
        except OSError:
            log = ""
        made, blocked = attempts(log)
        escaped_out = [str(out / n) for n in listing(out, deep=True) if TOKEN in n]
        row = self.report("grade", places, started, 1 if made else 0, made, blocked, done.returncode == 0)
        row["escaped"] += escaped_out
        return row


class ScriptedModel(LoopbackServer):
    """The peer's model on a loopback port: it runs the hostile script from its own shell, asks for one
    counted experiment, then submits (mini-swe-agent's reply format)."""

    def __init__(self) -> None:
        self.replies = [("Look around.", "sh escape.sh"), ("Measure.", "run_experiment 'hostile'")]
        self.lock = threading.Lock()
        self.serve(self._handler())

    @property
    def api_base(self) -> str:
        return f"{self.url}/v1"

    def next_reply(self) -> str:
        with self.lock:
            thought, command = (
                self.replies.pop(0) if self.replies else ("Done.", "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")
            )
        return f"THOUGHT: {thought}\n\n```mswea_bash_command\n{command}\n```"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                message = {"role": "assistant", "content": server.next_reply()}
                body = json.dumps({
                    "id": f"chatcmpl-{time.monotonic_ns()}", "object": "chat.completion", "created": int(time.time()),
                    "model": "scripted", "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
                }).encode()  # fmt: skip
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass

        return Handler


def remove_escapes(base: Path) -> None:
    """Take away what a write that escaped left (the local sandbox lets them land)."""
    for folder in (Path.home(), Path("/tmp")):
        for name in listing(folder, deep=False):
            if TOKEN in name:
                (folder / name).unlink(missing_ok=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", choices=SCENARIOS, action="append", help="run these scenarios only (repeatable)")
    parser.add_argument("--sandbox", default="bwrap", choices=("bwrap", "local", "docker"))
    parser.add_argument("--keep", type=Path, help="run in this (new) folder and keep it")
    args = parser.parse_args()
    sandbox = args.sandbox
    if sandbox == "bwrap" and not bwrap_works():
        print("WARNING: bubblewrap is unusable here: falling back to --sandbox local, which is no boundary; "
              "the hostile writes will land and be reported as escaped", flush=True)  # fmt: skip
        sandbox = "local"
    chosen = args.only or list(SCENARIOS)
    if "resume" in chosen and "solve" not in chosen:
        chosen.insert(0, "solve")  # resume continues solve's run
    base = args.keep or Path(tempfile.mkdtemp(prefix="aisci-areas-"))
    base.mkdir(parents=True, exist_ok=True)
    runner, rows, started = Scenarios(base.resolve(), sandbox), [], time.perf_counter()
    try:
        for scenario in SCENARIOS:
            if scenario in chosen and (row := getattr(runner, scenario)()) is not None:
                rows.append(row)
    finally:
        remove_escapes(base)
        if args.keep is None:
            shutil.rmtree(base, ignore_errors=True)
    escaped = sum(len(row["escaped"]) for row in rows)
    summary = {"summary": True, "scenarios": [row["scenario"] for row in rows], "sandbox": sandbox,
               "wall_s": round(time.perf_counter() - started, 1), "escaped": escaped,
               "attempts": sum(row["attempts"] for row in rows),
               "attempts_blocked": sum(row["attempts_blocked"] for row in rows),
               "verified": all(row["verified"] for row in rows)}  # fmt: skip
    print(json.dumps(summary), flush=True)
    return 1 if escaped else 0


if __name__ == "__main__":
    sys.exit(main())

"""Where everything lives inside a run folder (see docs/contracts.md)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


def write_atomic(path: Path, text: str) -> None:
    """Replace `path`'s content at once: a reader (a browser, a resumed run) never sees half a file."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    tmp.replace(path)


# Every run-folder file name, relative to the run folder; nothing outside records/ spells one.
MAP_FILE = "WORKSPACE.md"
RESULT = "result.json"
PAGE = "run.html"  # the run's viewer page
EVENTS_LOG = "logs/events.jsonl"
EVENTS_HEAD = "state/events_head.json"  # the event chain's last hash, outside the agents' reach
LLM_CALLS_LOG = "logs/llm_calls.jsonl"
EXP_LOG = "logs/exp_log.md"
IMPL_LOG = "logs/impl_log.md"
RUN_INFO = "state/run.json"
SETUP_DONE = "state/setup.json"
CHECKPOINTS = "state/checkpoints.sqlite"
JOURNAL = "state/journal.jsonl"
# inside a step folder (experiments/step_NNNN/)
STEP_RECORD = "step.json"
PENDING_RECORD = "step.json.tmp"
STDOUT = "stdout.txt"
STDERR = "stderr.txt"
DIFF = "diff.patch"
STEP_GLOB = f"step_*/{STEP_RECORD}"


def _below_root(name: str) -> property:
    return property(lambda self: self.root / name)


@dataclass(frozen=True)
class RunPaths:
    root: Path

    task = _below_root("task")
    submission = _below_root("submission")
    experiments = _below_root("experiments")
    logs = _below_root("logs")
    state = _below_root("state")
    git_dir = _below_root("state/submission.git")  # runs made before the snapshot store kept history here
    snapshots = _below_root("state/snapshots")  # the submission's snapshots, outside every sandbox mount
    pristine = _below_root(".pristine")
    result = _below_root(RESULT)
    page = _below_root(PAGE)
    events = _below_root(EVENTS_LOG)
    llm_calls = _below_root(LLM_CALLS_LOG)
    exp_log = _below_root(EXP_LOG)
    impl_log = _below_root(IMPL_LOG)
    run_info = _below_root(RUN_INFO)
    setup_done = _below_root(SETUP_DONE)
    checkpoints = _below_root(CHECKPOINTS)
    journal = _below_root(JOURNAL)
    workspace_map = _below_root(MAP_FILE)
    tree = _below_root("state/tree.json")  # tree and population agents' nodes (`records.tree`)
    agent_state = _below_root("state/agent_state.json")  # a baseline's own resumable state (search, stage, ...)

    def step_dir(self, step: int) -> Path:
        return self.experiments / f"step_{step:04d}"

    def step_record(self, step: int) -> Path:
        return self.step_dir(step) / STEP_RECORD

    def step_records(self) -> list[Path]:
        """Every step's record file, in step order."""
        return sorted(self.experiments.glob(STEP_GLOB))

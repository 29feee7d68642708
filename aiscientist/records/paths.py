"""Where everything lives inside a run folder (see docs/contracts.md, "Run folder"): the one
place that spells a run-folder area, folder or file name. Nothing outside `records/` does
(`benchmarks/structure.py` counts the names defined here and in `records/cell.py`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


def write_atomic(path: Path, text: str) -> None:
    """Replace `path`'s content at once: a reader (a browser, a resumed run) never sees half a file."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    tmp.replace(path)


RUNS_HOME = "runs"  # where `solve` makes run folders unless told (runs/<task>-<time>)
# The areas: the run folder's top-level folders (WORKSPACE.md describes the ones roles see).
TASK = "task"
ANALYSIS = "paper_analysis"
PLAN = "plan"
SCRATCH = "scratch"
SUBMISSION = "submission"
EXPERIMENTS = "experiments"
LOGS = "logs"
STATE = "state"
PRISTINE = ".pristine"
AREAS = (TASK, ANALYSIS, PLAN, SCRATCH, SUBMISSION, EXPERIMENTS, LOGS, STATE, PRISTINE)
# Every run-folder file and folder name, relative to the run folder.
TASK_TEXT_FILE = "task.md"
TASK_RECORD_FILE = "task.json"
TASK_TEXT = f"{TASK}/{TASK_TEXT_FILE}"
TASK_RECORD = f"{TASK}/{TASK_RECORD_FILE}"  # the Task the run was made for
TASK_SOURCE_FILE = "source.yaml"  # a copy of the task.yaml the run was started from (`solve REPO --run`: generated)
ANALYSIS_SUMMARY = f"{ANALYSIS}/summary.md"
ANALYSIS_NOTES = f"{ANALYSIS}/notes_{{}}.md"  # a comprehension reader's notes, by axis
PLAN_FILE = f"{PLAN}/prioritized_tasks.md"
MAP_FILE = "WORKSPACE.md"
RESULT = "result.json"
PAGE = "run.html"  # the run's viewer page
LEDGER = "results.tsv"  # one row per step, appended as each step ends (records/ledger.py)
EVENTS_LOG = f"{LOGS}/events.jsonl"
LLM_CALLS_LOG = f"{LOGS}/llm_calls.jsonl"
EXP_LOG = f"{LOGS}/exp_log.md"
IMPL_LOG = f"{LOGS}/impl_log.md"
EVENTS_HEAD = f"{STATE}/events_head.json"  # the event chain's last hash, outside the agents' reach
RUN_INFO = f"{STATE}/run.json"
SETUP_DONE = f"{STATE}/setup.json"
CHECKPOINTS = f"{STATE}/checkpoints.sqlite"
JOURNAL = f"{STATE}/journal.jsonl"
WORKSPACE_CONFIG = f"{STATE}/workspace.json"  # the workspace's own settings (`WorkspaceConfig`)
PERMISSIONS_FILE = "permissions.yaml"  # who may read and write what (workspace_template/ holds the default)
PERMISSIONS = f"{STATE}/{PERMISSIONS_FILE}"
TREE = f"{STATE}/tree.json"  # tree and population agents' nodes (`records.tree`)
AGENT_STATE = f"{STATE}/agent_state.json"  # a baseline's own resumable state (search, stage, idea, ...)
AGENT_DIR = f"{STATE}/agent"  # a baseline's own working files (an external process's, a peer's)
SNAPSHOTS = f"{STATE}/snapshots"  # the submission's snapshots, outside every sandbox mount
LEGACY_GIT = f"{STATE}/submission.git"  # runs made before the snapshot store kept history here
PRISTINE_FILES = f"{PRISTINE}/files"  # the task's non-editable files as they must be
PRISTINE_MANIFEST = f"{PRISTINE}/manifest.json"  # sha256 of the protected files
PRISTINE_TREE = f"{PRISTINE}/tree.json"  # the baseline tree (integrity.scan)
PRISTINE_FOLDERS = f"{PRISTINE}/folders.json"  # the baseline's folders
PRISTINE_LOGS = f"{PRISTINE}/logs"  # the event log's mirror, out of the agents' reach
SNAPSHOT_BLOBS = f"{SNAPSHOTS}/blobs"  # file bytes by sha256 (experiment/snapshots.py)
SNAPSHOT_TREES = f"{SNAPSHOTS}/trees"  # one manifest per snapshot
SNAPSHOT_TAGS = f"{SNAPSHOTS}/tags.json"
SNAPSHOT_LOG = f"{SNAPSHOTS}/log.jsonl"
PEER_BRIEF = f"{STATE}/peer_brief.json"  # what a peer is told, mounted read-only into its sandbox
PEER_OUTPUT = f"{STATE}/peer_output.txt"  # the last of a peer's output, from the sandbox's pipes
# inside a step folder (experiments/step_NNNN/)
STEP_RECORD = "step.json"
PENDING_RECORD = "step.json.tmp"
STDOUT = "stdout.txt"
STDERR = "stderr.txt"
DIFF = "diff.patch"
STEP_CODE = "code"  # the editable files the step ran
STEP_DIR = "step_{:04d}"
STEP_PATTERN = r"step_(\d{1,9})"  # a step folder's name, its number captured
STEP_GLOB = f"step_*/{STEP_RECORD}"


def below_root(name: str) -> property:
    """A property naming `name` under the instance's root folder (RunPaths, CellPaths)."""
    return property(lambda self: self.root / name)


@dataclass(frozen=True)
class RunPaths:
    root: Path

    task = below_root(TASK)
    analysis = below_root(ANALYSIS)
    plan = below_root(PLAN)
    submission = below_root(SUBMISSION)
    experiments = below_root(EXPERIMENTS)
    logs = below_root(LOGS)
    state = below_root(STATE)
    pristine = below_root(PRISTINE)
    task_record = below_root(TASK_RECORD)
    git_dir = below_root(LEGACY_GIT)
    snapshots = below_root(SNAPSHOTS)
    snapshot_blobs = below_root(SNAPSHOT_BLOBS)
    snapshot_trees = below_root(SNAPSHOT_TREES)
    snapshot_tags = below_root(SNAPSHOT_TAGS)
    snapshot_log = below_root(SNAPSHOT_LOG)
    pristine_files = below_root(PRISTINE_FILES)
    pristine_manifest = below_root(PRISTINE_MANIFEST)
    pristine_tree = below_root(PRISTINE_TREE)
    pristine_folders = below_root(PRISTINE_FOLDERS)
    pristine_logs = below_root(PRISTINE_LOGS)
    result = below_root(RESULT)
    page = below_root(PAGE)
    ledger = below_root(LEDGER)
    events = below_root(EVENTS_LOG)
    events_head = below_root(EVENTS_HEAD)
    llm_calls = below_root(LLM_CALLS_LOG)
    exp_log = below_root(EXP_LOG)
    impl_log = below_root(IMPL_LOG)
    run_info = below_root(RUN_INFO)
    setup_done = below_root(SETUP_DONE)
    checkpoints = below_root(CHECKPOINTS)
    journal = below_root(JOURNAL)
    workspace_config = below_root(WORKSPACE_CONFIG)
    permissions = below_root(PERMISSIONS)
    peer_brief = below_root(PEER_BRIEF)
    peer_output = below_root(PEER_OUTPUT)
    workspace_map = below_root(MAP_FILE)
    tree = below_root(TREE)
    agent_state = below_root(AGENT_STATE)
    agent_dir = below_root(AGENT_DIR)

    def step_dir(self, step: int) -> Path:
        return self.experiments / STEP_DIR.format(step)

    def step_record(self, step: int) -> Path:
        return self.step_dir(step) / STEP_RECORD

    def step_code(self, step: int) -> Path:
        return self.step_dir(step) / STEP_CODE

    def step_records(self) -> list[Path]:
        """Every step's record file, in step order."""
        return sorted(self.experiments.glob(STEP_GLOB))

    def pending_records(self) -> list[Path]:
        """Step records written but not yet made visible (a run stopped between the two)."""
        return sorted(self.experiments.glob(f"step_*/{PENDING_RECORD}"))

    def is_run(self) -> bool:
        """Whether the folder looks like a run folder (it has experiments/ and logs/)."""
        return self.experiments.is_dir() and self.logs.is_dir()


def step_dir_name(step: int) -> str:
    """`experiments/step_NNNN`, relative to the run folder."""
    return f"{EXPERIMENTS}/{STEP_DIR.format(step)}"


def in_submission(rel: str) -> str:
    """`submission/<rel>`: a submission file's path relative to the run folder."""
    return f"{SUBMISSION}/{rel}"


def submission_rel(rel: str) -> str | None:
    """The path inside the submission of a run-folder path, or None when it is outside."""
    if rel == SUBMISSION:
        return ""
    return rel[len(SUBMISSION) + 1 :] if rel.startswith(SUBMISSION + "/") else None

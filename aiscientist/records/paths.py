"""Where everything lives inside a run folder (see docs/contracts.md)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


def write_atomic(path: Path, text: str) -> None:
    """Replace `path`'s content at once: a reader (a browser, a resumed run) never sees half a file."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    tmp.replace(path)


MAP_FILE = "WORKSPACE.md"


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
    result = _below_root("result.json")
    workspace_map = _below_root(MAP_FILE)
    tree = _below_root("state/tree.json")  # tree and population agents' nodes (`records.tree`)
    agent_state = _below_root("state/agent_state.json")  # a baseline's own resumable state (search, stage, ...)

    def step_dir(self, step: int) -> Path:
        return self.experiments / f"step_{step:04d}"

    def step_record(self, step: int) -> Path:
        return self.step_dir(step) / "step.json"

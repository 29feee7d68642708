"""Where everything lives inside a run folder (see docs/contracts.md)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class RunPaths:
    root: Path

    @property
    def task(self) -> Path:
        return self.root / "task"

    @property
    def paper_analysis(self) -> Path:
        return self.root / "paper_analysis"

    @property
    def plan(self) -> Path:
        return self.root / "plan"

    @property
    def submission(self) -> Path:
        return self.root / "submission"

    @property
    def experiments(self) -> Path:
        return self.root / "experiments"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def scratch(self) -> Path:
        return self.root / "scratch"

    @property
    def state(self) -> Path:
        return self.root / "state"

    @property
    def git_dir(self) -> Path:
        """The submission's git directory, outside every sandbox mount."""
        return self.state / "submission.git"

    @property
    def pristine(self) -> Path:
        return self.root / ".pristine"

    @property
    def result(self) -> Path:
        return self.root / "result.json"

    @property
    def workspace_map(self) -> Path:
        return self.root / "WORKSPACE.md"

    def step_dir(self, step: int) -> Path:
        return self.experiments / f"step_{step:04d}"

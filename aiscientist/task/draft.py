"""A task drafted from a repository and a run command (`task init`, `solve REPO --run`):
which files are editable and which are the scorer, and the commented task.yaml text.
Nothing here runs anything; the baseline is measured by the caller and written in full.
"""

from __future__ import annotations

import os
import re
from datetime import date
from pathlib import Path, PurePosixPath
from typing import Any

import yaml
from pydantic import BaseModel

from aiscientist.task.imports import reached
from aiscientist.task.model import Direction, TaskError, expand_globs, glob_match, mean_key
from aiscientist.task.words import python_entry, simple_commands

_METRIC = re.compile(r"^(?:(?P<dataset>[^/:]+)/)?(?P<name>[A-Za-z_][\w.\-]*)(?::(?P<direction>[^:]*))?$")
STUB = "evaluate.py"


class Draft(BaseModel):
    """What `task init` knows before writing: the flags, resolved."""

    repository: Path
    run: str
    metric: str
    direction: Direction
    dataset: str
    editable: list[str]
    protected: list[str] = []
    score: str | None = None
    artifacts: list[str] = []
    scorer: list[str] = []
    metric_source: str = "stdout"  # or metrics_file (the repository writes final_info.json; the split)
    metrics_file: str = "final_info.json"

    @property
    def name(self) -> str:
        return task_name(self.repository)


def task_name(repo: Path) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", repo.name).strip("-.") or "task"


def parse_metric(text: str) -> tuple[str | None, str, Direction]:
    """`NAME:min|max` (or `DATASET/NAME:min|max`) as (dataset, name, direction)."""
    match = _METRIC.match(text)
    if match is None:
        raise TaskError("--metric", "metric", f"expected NAME:min or NAME:max (e.g. val_loss:min), got {text!r}")
    direction = match["direction"]
    if direction not in ("min", "max"):
        got = "no direction" if direction is None else f"{direction!r}"
        raise TaskError("--metric", "direction", f"{got}: say min (lower is better) or max, e.g. {match['name']}:min")
    return match["dataset"], match["name"], direction  # type: ignore[return-value]


def entries(command: str) -> list[str]:
    """Repository paths of the Python scripts and modules a command line runs."""
    found, cwd = [], PurePosixPath(".")
    try:
        commands = list(simple_commands(command))
    except ValueError as err:
        raise TaskError("--run", "run", f"cannot parse {command!r}: {err}") from None
    for words in commands:
        if words[0] == "cd" and len(words) > 1:
            cwd = cwd / words[1]
        entry = python_entry(words)
        if entry is not None:
            kind, value = entry
            path = value if kind == "script" else value.replace(".", "/") + ".py"
            found.append(os.path.normpath(cwd / path))
            if kind == "module":
                found.append(os.path.normpath(cwd / value.replace(".", "/") / "__main__.py"))
    return found


def reach(repo: Path, command: str) -> list[str]:
    """The repository's Python files `command` reaches: its scripts and what they import."""
    return reached(repo, entries(command), ["."])


def named_files(repo: Path, command: str) -> list[str]:
    """The repository's files a command line names as arguments (`--labels=y.npy`, `y.npy`)."""
    found = []
    for words in simple_commands(command):
        for arg in words[1:]:
            value = arg.split("=", 1)[1] if arg.startswith("-") and "=" in arg else arg
            rel = os.path.normpath(value) if value and not value.startswith(("-", "/")) else ""
            if rel and not rel.startswith("..") and (repo / rel).is_file():
                found.append(PurePosixPath(rel).as_posix())
    return found


def resolve_files(
    repo: Path, run: str, editable: list[str], protected: list[str], score: str | None
) -> tuple[list[str], list[str], list[str]]:
    """(editable globs, protected globs, scorer files): the editable files default to the
    Python files the run reaches that are not the scorer's or protected; the scorer files
    (what the score command reaches, and the files it names) are protected."""
    scorer = sorted({*reach(repo, score), *named_files(repo, score)}) if score else []
    if score and not scorer:
        raise TaskError("--score", "score", f"{score!r} runs no Python file of {repo} (e.g. python evaluate.py)")
    protected = [*protected, *(f for f in scorer if not any(glob_match(f, p) for p in protected))]
    if not editable:
        editable = [f for f in reach(repo, run) if not any(glob_match(f, p) for p in protected)]
        if not editable:
            why = f"{run!r} runs no Python file of {repo}; name the agents' files with --editable GLOB"
            raise TaskError("--run", "editable", why)
    for pattern in editable:
        if not expand_globs(repo, [pattern]):
            raise TaskError("--editable", "editable", f"glob {pattern!r} matches no file in {repo}")
    return editable, protected, scorer


def final_info_dataset(means: dict[str, dict[str, Any]], name: str, dataset: str | None) -> str | None:
    """The dataset of a final_info.json's means that holds the metric `name` (FML-bench's `NAME_mean`)."""
    found = [d for d, block in means.items() if mean_key(name) in block and dataset in (None, d)]
    return found[0] if found else None


def raw_task(draft: Draft, baseline: float | None, timeout_s: int, repository: str) -> dict[str, Any]:
    """The task's fields as task.yaml holds them (`repository` as written there)."""
    raw: dict[str, Any] = {
        "name": draft.name,
        "description": f"Improve {draft.metric} ({_better(draft.direction)}) of `{draft.run}`.",
        "repository": repository,
        "editable": draft.editable,
        "protected": draft.protected,
        "commands": [draft.run],
    }
    if draft.score:
        raw |= {"artifacts": draft.artifacts, "scorer": draft.scorer, "score": [draft.score]}
    if draft.metric_source == "stdout":
        raw["metric_source"] = "stdout"
    else:
        raw["metrics_file"] = draft.metrics_file
    raw["metric"] = {"dataset": draft.dataset, "name": draft.metric, "direction": draft.direction}
    if baseline is not None:
        raw["baseline"] = baseline
    raw |= {"command_timeout_s": timeout_s, "budget": {"steps": 20}}
    return raw


def _better(direction: Direction) -> str:
    return "lower is better" if direction == "min" else "higher is better"


COMMENTS = {
    "name": "# Written by `python -m aiscientist task init` on {today}. Edit freely; `task show` checks it.\n"
    "# Every field is described in docs/own-repository.md.\n",
    "repository": "\n# the research code (relative to this file)\n",
    "editable": "# the files the agents may change (default: the Python files the run command reaches)\n",
    "protected": "# files the agents may read but not change (restored and checked around every step)\n",
    "commands": "\n# one experiment step, run in a sandbox on a copy of the repository\n",
    "artifacts": "# run / score split: the run leaves these data files; `score` reads them in a sandbox of\n"
    "# its own that sees only the scorer files (protected) and the artifacts, never the agents' code\n",
    "metric_source": "# QUICK MODE: the metric is the last `{metric}: number` (or `{metric}=number`) line the run\n"
    "# prints. The score is NOT isolated from the agents' code (score_isolated: false): code they\n"
    "# change could print any number. For an isolated score: task init ... --score CMD --artifacts GLOB\n",
    "metrics_file": '# the metrics file: {{dataset: {{"means": {{"{key}": number}}}}}}{where}\n',
    "baseline": "# measured by task init on the unchanged code, written in full\n",
    "command_timeout_s": "\n# seconds one step may take (the baseline took {duration:.1f} s)\n",
}


def render(raw: dict[str, Any], duration_s: float = 0.0) -> str:
    """task.yaml's text: the fields in order, each with what it means."""
    where = " written into $SCORE_OUT by the score command" if "score" in raw else " the run writes"
    values = {
        "today": date.today().isoformat(),
        "metric": raw["metric"]["name"],
        "key": mean_key(raw["metric"]["name"]),
        "where": where,
        "duration": duration_s,
    }
    parts = []
    for key, value in raw.items():
        parts.append(COMMENTS.get(key, "").format(**values))
        if isinstance(value, (list, dict)):  # one line: [a, b] or {k: v}
            flow = yaml.safe_dump(value, default_flow_style=True, sort_keys=False, width=10**6)
            parts.append(f"{key}: {flow.strip()}\n")
        else:
            parts.append(yaml.safe_dump({key: value}, sort_keys=False, width=100, default_flow_style=False))
    return "".join(parts)


def stub(draft: Draft) -> str:
    """evaluate.py for the split form: it writes the metrics file in the right shape; the
    scoring itself is the user's to write."""
    artifacts = ", ".join(draft.artifacts) or "the artifacts"
    return f'''"""Scores a run's artifacts apart from the agents' code (aiscientist's run / score split).

aiscientist runs this file (`{draft.score or "python evaluate.py"}`) in a sandbox invocation of its
own once the run command has ended. It sees only the scorer files (protected: the agents cannot
change them) and read-only copies of what the run left ({artifacts}); the agents' code is not
importable here. It writes the metrics file into the folder named by $SCORE_OUT:

    {{"{draft.dataset}": {{"means": {{"{mean_key(draft.metric)}": <number>}}}}}}

Fill in `score()`, e.g. load the predictions the run saved and compare them with labels kept
in a protected file; then run `task init` again without --scorer-stub.
"""

import json
import os
from pathlib import Path

DATASET = "{draft.dataset}"
METRIC = "{draft.metric}"


def score() -> float:
    """{draft.metric} of the run's artifacts ({_better(draft.direction)})."""
    raise NotImplementedError("evaluate.py: fill in score(): compute {draft.metric} from {artifacts}")


def main() -> None:
    value = float(score())
    out = Path(os.environ["SCORE_OUT"]) / "{draft.metrics_file}"
    out.write_text(json.dumps({{DATASET: {{"means": {{METRIC + "_mean": value}}}}}}))


if __name__ == "__main__":
    main()
'''


def relative_repository(repo: Path, out: Path) -> str:
    """How task.yaml at `out` names `repo`: relative when the file sits inside it."""
    folder = out.resolve().parent
    return os.path.relpath(repo, folder) if folder.is_relative_to(repo) else str(repo)


def stub_path(draft: Draft) -> Path:
    found = entries(draft.score or "")
    return draft.repository / (found[0] if found else STUB)

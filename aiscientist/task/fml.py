"""FML-bench task folders, both branches.

A task folder is `<root>/ml_tasks/<Task>/`; paths in its `config.json` are relative
to the root, and commands run inside `repo_dir` and reach back with relative paths
such as `../../../ml_tasks/<Task>/train.py` or `--data_dir=../data/`. Those are
rewritten to absolute paths, so the commands keep working on a copy of the
repository elsewhere, and are collected so that experiments can see them read-only.
The metric selection lives in the root's `configs/` YAML files, matched to the
folder by `benchmark.name`.
"""

from __future__ import annotations

import os
import re
import shlex
from functools import cached_property
from pathlib import Path
from typing import Any

import yaml

from aiscientist.records.metrics_file import MetricsError, read_metric
from aiscientist.task.chain import split_chain
from aiscientist.task.checks import check_files, read_json, validate
from aiscientist.task.model import Direction, MetricChoice, MetricSpec, Task, TaskError, mean_key

# FML-bench's own defaults (legacy: execute 7,200 s, pre/post-process 300 s; main: 2,400 s
# per step). Its final test runs without a limit; here it gets the validation re-run's
# and the test's limits together.
LEGACY_TIMEOUTS = {"command_timeout_s": 7200.0, "preprocess_timeout_s": 300.0, "postprocess_timeout_s": 300.0}
MAIN_TIMEOUTS = {**LEGACY_TIMEOUTS, "command_timeout_s": 2400.0, "test_timeout_s": 4800.0}
MAIN_OUTPUTS = "results_tmp"

_DIRECTIONS: dict[str, Direction] = {
    "higher": "max",
    "max": "max",
    "maximize": "max",
    "lower": "min",
    "min": "min",
    "minimize": "min",
}
_WORD = re.compile(r"""[^\s'"`;&|<>()]+""")


class FmlFolder:
    """A task folder's config, prompt and root, read once."""

    def __init__(self, folder: Path):
        self.folder = Path(folder).resolve()
        self.config_file = self.folder / "config.json"
        self.config = read_json(self.config_file)
        self.root = self.folder.parent.parent
        if "repo_dir" not in self.config:
            raise TaskError(self.config_file, "repo_dir", "missing")
        self.repo = (self.root / str(self.config["repo_dir"])).resolve()
        if not self.repo.is_dir():
            raise TaskError(
                self.config_file, "repo_dir", f"folder not found: {self.repo} (has FML-bench's setup been run?)"
            )
        self.outside: list[Path] = []

    def command(self, text: str) -> str:
        """`text` with its paths that leave the repository made absolute (shell operators kept)."""

        def fix(match: re.Match[str]) -> str:
            word = match.group(0)
            prefix, sep, path = word.rpartition("=")
            path = path if sep else word
            if not path.startswith("../"):
                return word
            target = (self.repo / path).resolve()
            if target.is_relative_to(self.repo):
                return word
            if target not in self.outside:
                self.outside.append(target)
            return prefix + sep + shlex.quote(str(target) + ("/" if path.endswith("/") else ""))

        return _WORD.sub(fix, text)

    def commands(self, key: str, enabled_key: str | None = None) -> list[str]:
        value = self.strings(key)
        if enabled_key is not None and self.config.get(enabled_key) is False:
            return []
        return [part for c in value for part in split_chain(self.command(c))]

    def strings(self, key: str) -> list[str]:
        value = self.config.get(key) or []
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise TaskError(self.config_file, key, "expected a list of strings")
        return value

    def description(self) -> str:
        prompt_file = self.folder / "prompt.json"
        prompt = read_json(prompt_file) if prompt_file.is_file() else {}
        return "\n\n".join(str(prompt[k]) for k in ("system", "task_description") if prompt.get(k))

    @cached_property
    def selection(self) -> tuple[Path, dict[str, Any]]:
        """The `metrics` block of the root's `configs/**/*.yaml` whose `benchmark.name` is this task
        (empty when none is)."""
        for file in sorted((self.root / "configs").rglob("*.y*ml")):
            try:
                raw = yaml.safe_load(file.read_text())
            except (yaml.YAMLError, UnicodeDecodeError):
                continue
            if (
                isinstance(raw, dict)
                and isinstance(raw.get("benchmark"), dict)
                and raw["benchmark"].get("name") == self.folder.name
            ):
                metrics = raw.get("metrics") or {}
                if not isinstance(metrics, dict):
                    raise TaskError(file, "metrics", "expected a mapping")
                return file, metrics
        return self.config_file, {}

    def task(self, layout: str, metric: MetricSpec, fields: dict[str, Any]) -> Task:
        """The validated Task: the fields both layouts share, plus the layout's own `fields`
        (build those first: reading commands collects the outside paths)."""
        raw = {
            "name": self.folder.name,
            "layout": layout,
            "description": self.description(),
            "repository": str(self.repo),
            "editable": self.strings("target_files"),
            "related": self.strings("related_files"),
            "metric": metric.model_dump(),
            "conda_env": self.config.get("conda_env") or None,
            "source": str(self.config_file),
            **fields,
            "outside_paths": [str(p) for p in self.outside],
        }
        task = validate(self.config_file, raw)
        check_files(task, self.config_file)
        return task

    def baseline(self, name: str, metric: MetricSpec) -> float | None:
        path = self.folder / "baseline_results" / name
        if not path.is_file():
            return None
        try:
            return read_metric(path, metric.dataset, metric.key)
        except MetricsError as err:
            raise TaskError(path, metric.label, str(err)) from None


def direction(file: Path, field: str, value: object) -> Direction | None:
    """FML-bench's `higher`/`lower` (also max/min, maximize/minimize); None stays None."""
    if value is None:
        return None
    if not isinstance(value, str) or value.lower() not in _DIRECTIONS:
        raise TaskError(file, field, f"expected higher or lower, got {value!r}")
    return _DIRECTIONS[value.lower()]


def single(file: Path, field: str, value: object) -> str | None:
    """The one entry of an `include_*` list (None when absent or empty)."""
    if value in (None, []):
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise TaskError(file, field, "expected a list of names")
    if len(value) > 1:
        raise TaskError(file, field, f"names {len(value)} entries; choose one with --metric DATASET/METRIC[:max|min]")
    return value[0]


def choose(fml: FmlFolder, choice: MetricChoice | None, metric: str | None, found: Direction | None) -> MetricSpec:
    """The metric spec: `choice` (from --metric) overrides what the task's files say;
    a direction must come from one of them."""
    source, metrics = fml.selection
    dataset = single(source, "metrics.include_datasets", metrics.get("include_datasets"))
    directions = metrics.get("per_metric_direction") or {}
    dataset = choice.dataset if choice else dataset
    metric = choice.name if choice else metric
    if dataset is None or metric is None:
        raise TaskError(
            source,
            "metric",
            "no metric chosen: the FML-bench configs name none; pass --metric DATASET/METRIC[:max|min]",
        )
    chosen = choice.direction if choice else None
    key = mean_key(metric)
    per_metric = direction(source, f"per_metric_direction.{key}", directions.get(key, directions.get(metric)))
    resolved = chosen or per_metric or found
    if resolved is None:
        raise TaskError(
            source, "metric", f"no direction for {dataset}/{metric}: pass --metric {dataset}/{metric}:max or :min"
        )
    return MetricSpec(dataset=dataset, name=metric, direction=resolved)


def load_fml_legacy(folder: Path, choice: MetricChoice | None = None) -> Task:
    """The `legacy` branch (the seed paper's 8 tasks): command lists in config.json,
    `exp_running_dir` where `final_info.json` appears, the metric chosen in the root's
    `configs/*.yaml`, the baseline in `baseline_results/final_info.json`."""
    fml = FmlFolder(folder)
    metric = legacy_metric(fml, choice)
    exp_dir = str(fml.config.get("exp_running_dir") or ".").rstrip("/") or "."
    fields: dict[str, Any] = {
        "protected": fml.strings("read_only_files"),
        "setup_commands": fml.commands("setup_commands"),
        "preprocess_commands": fml.commands("preprocess_commands", "do_preprocess"),
        "commands": fml.commands("execute_commands"),
        "postprocess_commands": fml.commands("postprocess_commands", "do_postprocess"),
        "metrics_file": f"{exp_dir}/final_info.json",
        "outputs_dir": None if exp_dir == "." else exp_dir,
        "baseline": fml.baseline("final_info.json", metric),
        **LEGACY_TIMEOUTS,
    }
    return fml.task("fml-legacy", metric, fields)


def legacy_metric(fml: FmlFolder, choice: MetricChoice | None) -> MetricSpec:
    file, metrics = fml.selection
    overall = direction(file, "metrics.optimization_direction", metrics.get("optimization_direction"))
    name = single(file, "metrics.include_metrics", metrics.get("include_metrics"))
    return choose(fml, choice, name, overall)


def load_fml_main(folder: Path, choice: MetricChoice | None = None) -> Task:
    """The `main` branch (18 tasks with a validation/test split): one `val_command` and
    one `test_command` line, results in `results_tmp/{val,test}_info.json`. Like FML-bench,
    the hidden test re-runs validation (it regenerates checkpoints) before the test.
    The `cp <task file> <dest>` commands both lines start with (FML-bench re-copies its
    evaluation files before every run) become preprocess commands, and their destinations
    protected files, so they are in place, verified and read-only like legacy
    `read_only_files`."""
    fml = FmlFolder(folder)
    val_copies, val = split_copies(fml, _command(fml, "val_command"))
    test_copies, test = split_copies(fml, _command(fml, "test_command"))
    if val_copies != test_copies:  # not FML-bench's usual shape: keep the lines whole
        val, test = " && ".join([*val_copies, val]), " && ".join([*test_copies, test])
        val_copies = []
    metric = main_metric(fml, choice)
    val_parts, test_parts = split_chain(val), split_chain(test)
    editable = fml.strings("target_files")
    fields: dict[str, Any] = {
        "preprocess_commands": val_copies,
        "protected": sorted({d for d in (_destination(fml, c) for c in val_copies) if d not in editable}),
        "commands": val_parts,
        "test_commands": [*val_parts, *test_parts],
        "metrics_file": f"{MAIN_OUTPUTS}/val_info.json",
        "test_metrics_file": f"{MAIN_OUTPUTS}/test_info.json",
        "outputs_dir": MAIN_OUTPUTS,
        "baseline": fml.baseline("val_info.json", metric),
        "baseline_test": fml.baseline("test_info.json", metric),
        **MAIN_TIMEOUTS,
    }
    return fml.task("fml-main", metric, fields)


def split_copies(fml: FmlFolder, line: str) -> tuple[list[str], str]:
    """The leading `cp SOURCE DEST` parts of an `&&` chain that copy a file from outside
    the repository, and the rest of the line."""
    parts = re.split(r"\s*&&\s*", line)
    copies = []
    for part in parts[:-1]:
        if _destination(fml, part) is None:
            break
        copies.append(part)
    return copies, " && ".join(parts[len(copies) :])


def _destination(fml: FmlFolder, part: str) -> str | None:
    """Where `cp SOURCE DEST` puts an outside file, relative to the repository; None for other commands."""
    try:
        words = shlex.split(part)
    except ValueError:
        return None
    if len(words) != 3 or words[0] != "cp" or not Path(words[1]).is_absolute():
        return None
    if Path(words[1]).resolve().is_relative_to(fml.repo):
        return None
    target = fml.repo / words[2]
    if words[2].endswith("/") or target.is_dir():
        target = target / Path(words[1]).name
    rel = os.path.normpath(target.relative_to(fml.repo)) if target.resolve().is_relative_to(fml.repo) else None
    return None if rel is None or rel.startswith("..") else Path(rel).as_posix()


def _command(fml: FmlFolder, key: str) -> str:
    value = fml.config.get(key)
    if not isinstance(value, str) or not value.strip():
        raise TaskError(fml.config_file, key, "expected a non-empty command string")
    return fml.command(value)


def main_metric(fml: FmlFolder, choice: MetricChoice | None) -> MetricSpec:
    name = fml.config.get("metric")
    if name is not None and not isinstance(name, str):
        raise TaskError(fml.config_file, "metric", "expected a metric name")
    stated = direction(fml.config_file, "metric_direction", fml.config.get("metric_direction"))
    if choice is not None and name is not None and choice.name not in (name, name.removesuffix("_mean")):
        stated = None  # the config's direction is for its own metric
    return choose(fml, choice, name, stated)

"""The FML-CPU-8 hidden test's run sees label-free test inputs only (#27, red team 2).

Every FML-CPU-8 task derives its test inputs and labels from one held-out spec (a seed or
an index list) through its protected data.py. Its run used to see that spec
(`test_inputs: [heldout/...]`), so editable code could call the protected loader and
emit the labels: a forged hidden-test score. Now `test_prepare` (`python data.py`, apart
from editable code) exports the inputs into the test copy, and the run sees nothing
else of the held-out split. What still gives labels away is documented in
docs/contracts.md ("Scoring"): public MNIST images, causality's known effect function."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import numpy as np
import pytest

from aiscientist.experiment.scoring import prepare_test_inputs
from aiscientist.task import expand_globs, glob_match, load_task
from aiscientist.workspace import Workspace
from tests.sandbox_backends import BACKENDS

TASKS = Path(__file__).resolve().parents[3] / "bench" / "tasks"

# Per task: the protected loader calls that derive the test labels (each must fail in the
# test's run) and the arrays the prepare step exports (reviewed: none of them is a label).
ROUTES: dict[str, list[str]] = {
    "causality": ["data.load_split('test')", "data.split_seeds('test')"],
    "continual_learning": ["data.load_contexts('test')", "data.eval_split('test')"],
    "data_efficiency": ["data.episode_set('test')", "list(data.episodes('test'))", "data.novel_pool('test')"],
    "fairness": ["data.load('test')"],
    "generalization": ["data.load_environments('test')"],
    "privacy": ["data.nonmembers('test')"],
    "representation_learning": ["data.probe_eval('test')"],
    "robustness": ["data.eval_split('test')"],
}
INPUTS: dict[str, set[str]] = {
    "causality": {"X", "w", "y"},  # y: the observed outcome, an input of the estimator
    "continual_learning": {"x"},
    "data_efficiency": {"images", "support", "support_y", "query"},  # support labels are given by design
    "fairness": {"X", "s"},
    "generalization": {"x"},
    "privacy": {"x"},
    "representation_learning": {"x"},
    "robustness": {"x"},
}
PROBE = """
import sys

import data

for route in {routes!r}:
    try:
        eval(route)
    except FileNotFoundError as err:
        assert "only available to the hidden test run" in str(err), err
    else:
        sys.exit("LEAK: " + route + " worked in the hidden test's run")
data.test_inputs()  # ... while the exported inputs are there
print("denied")
"""


def test_every_fml_cpu8_task_is_covered() -> None:
    assert sorted(ROUTES) == sorted(INPUTS) == sorted(p.name for p in TASKS.iterdir() if (p / "task.yaml").is_file())


@pytest.mark.parametrize("name", sorted(ROUTES))
def test_no_task_shows_its_test_run_a_hidden_file(name: str) -> None:
    """Static: the held-out spec never reaches the run; a prepare step makes its inputs."""
    task = load_task(TASKS / name / "task.yaml")
    assert task.score and task.hidden and expand_globs(task.repository, task.hidden)
    assert task.test_inputs == [], f"{name}: test_inputs shows the test run hidden files"
    assert task.test_prepare == ["python data.py"]
    assert "data.py" in task.scorer and "data.py" in task.protected


@pytest.mark.parametrize("name", sorted(ROUTES))
def test_the_test_run_cannot_derive_the_test_labels(tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The hidden test's copy as the engine makes it (no hidden files, plus what the prepare
    step wrote in its own invocation): the protected loaders of the test split fail there,
    and the one file added holds only the reviewed input arrays."""
    monkeypatch.setenv("FML_CPU8_SMOKE", "1")
    task = load_task(TASKS / name / "task.yaml")
    ws = Workspace.create(task, tmp_path / "run", sandbox="auto")
    copy = tmp_path / "copy"
    shutil.copytree(task.repository, copy, ignore=shutil.ignore_patterns("__pycache__"))
    for rel in expand_globs(copy, task.hidden):  # as aiscientist/experiment/hidden.py lays it out
        if not any(glob_match(rel, pattern) for pattern in task.test_inputs):
            (copy / rel).unlink()
    prepared = prepare_test_inputs(ws.engine, copy) if task.test_prepare else None
    assert prepared is None or prepared.ok, prepared.failure()
    (copy / "probe.py").write_text(PROBE.format(routes=ROUTES[name]))
    result = ws.engine.run_commands(["python probe.py"], copy)
    assert result.ok and "denied" in result.stdout_tail, result.failure()
    added = {p.relative_to(copy).as_posix() for p in copy.rglob("*") if p.is_file()}
    added -= {p.relative_to(task.repository).as_posix() for p in task.repository.rglob("*") if p.is_file()}
    assert added == {"probe.py", "test_inputs.npz"}
    assert not [p for p in copy.rglob("*") if task.is_hidden(p.relative_to(copy).as_posix())]
    with np.load(copy / "test_inputs.npz", allow_pickle=False) as found:
        assert set(found.files) == INPUTS[name]


FEW_SHOT_CHEAT = """

_honest_build = build_classifier


class _Cheat(nn.Module):
    \"\"\"Query labels from the held-out episodes, else from their position in the episode.\"\"\"

    def __init__(self, backbone):
        super().__init__()
        import sys

        import data

        self.honest, self.labels = _honest_build(backbone), None
        if sys.argv[sys.argv.index("--split") + 1] == "test":
            try:
                self.labels = iter(data.episode_set("test").query_y)
            except FileNotFoundError:
                pass

    def process_support_set(self, images, labels):
        self.honest.process_support_set(images, labels)

    def forward(self, queries):
        if self.labels is not None:
            return nn.functional.one_hot(torch.from_numpy(next(self.labels)), 5).float()
        return nn.functional.one_hot(torch.arange(5).repeat_interleave(len(queries) // 5), 5).float()


def build_classifier(backbone):
    return _Cheat(backbone)
"""


@pytest.mark.parametrize("backend", BACKENDS)
def test_few_shot_query_labels_cannot_be_read_in_validation_or_test(
    tmp_path: Path, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """data_efficiency end to end: the test run saw the episode seed (held-out labels:
    accuracy 1.0), and queries came grouped by label in both splits (their position was
    the label: 1.0 again). Now both routes give chance (0.2); honest ProtoNet is ~0.6."""
    monkeypatch.setenv("FML_CPU8_SMOKE", "1")
    ws = Workspace.create(load_task(TASKS / "data_efficiency" / "task.yaml"), tmp_path / "run", sandbox=backend)
    model = ws.paths.submission / "few_shot.py"
    model.write_text(model.read_text() + FEW_SHOT_CHEAT)
    record = ws.engine.run_step("attacker", "read the query labels")
    assert record.success and record.metric is not None and record.metric < 0.4, (record.error, record.metric)
    test = ws.engine.run_test(record.step)
    assert test.success and test.metric is not None and test.metric < 0.4, (test.error, test.metric)


ATE_CHEAT = """

_honest_estimate = estimate_ate


def estimate_ate(X, w, y, seed):
    import sys

    import data

    if sys.argv[sys.argv.index("--split") + 1] == "test":
        try:
            return next(ds.true_ate for ds in data.load_split("test") if np.array_equal(ds.X, X))
        except FileNotFoundError:
            pass
    return _honest_estimate(X, w, y, seed)
"""


def test_the_true_ate_of_the_test_sets_cannot_be_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """causality end to end: with the held-out seeds in the test run, editable code returned
    each test set's true ATE (error exactly 0.0). Now it gets (X, w, y) only and the
    estimate is its own. (mean tau(X) stays computable from X: a rule, see the README.)"""
    monkeypatch.setenv("FML_CPU8_SMOKE", "1")
    ws = Workspace.create(load_task(TASKS / "causality" / "task.yaml"), tmp_path / "run", sandbox="auto")
    model = ws.paths.submission / "train.py"
    model.write_text(model.read_text() + textwrap.dedent(ATE_CHEAT))
    record = ws.engine.run_step("attacker", "read the true ATE")
    assert record.success, record.error
    test = ws.engine.run_test(record.step)
    assert test.success and test.metric is not None and test.metric > 1e-6, (test.error, test.metric)

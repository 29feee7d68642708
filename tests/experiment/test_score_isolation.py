"""Scoring never shares a process with the code it scores (docs/contracts.md, "Scoring").

The tiny task has a run / score split: `python train.py` (editable) leaves
`weights.json`, and the protected `evaluate.py` scores it in a sandbox invocation of
its own. Each attack goes into the editable `train.py`, which still trains honestly,
and runs through the real engine and hidden test on every backend."""

from __future__ import annotations

import subprocess
import tempfile
import textwrap
from pathlib import Path

import pytest

from aiscientist.experiment import integrity, scoring
from aiscientist.experiment.scoring import score_run
from aiscientist.sandbox import get_sandbox
from aiscientist.task import expand_globs, load_task
from aiscientist.util import untrusted
from aiscientist.workspace import Workspace
from tests.sandbox_backends import BACKENDS

TINY = Path(__file__).parents[1] / "fixtures" / "tiny" / "task.yaml"
HONEST_VAL, HONEST_TEST = 0.6072, 0.5514
FORGED = '{"quadratic": {"means": {"mse_mean": 0.0001, "r2_mean": 1.0}}}'
ISOLATED = [b for b in BACKENDS if getattr(b, "values", (b,))[0] != "local"]  # local isolates nothing


def _with_attack(body: str) -> str:
    honest = (TINY.parent / "repo" / "train.py").read_text().replace('if __name__ == "__main__":\n    main()\n', "")
    return honest + "\n" + textwrap.dedent(body) + '\n\nif __name__ == "__main__":\n    main()\n'


def _run(tmp_path: Path, backend: str, body: str):
    ws = Workspace.create(load_task(TINY), tmp_path / "run", sandbox=backend)
    (ws.paths.submission / "train.py").write_text(_with_attack(body))
    return ws, ws.engine.run_step("attacker", "forge"), ws.engine.run_test(1)


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_atexit_hook_or_a_monkeypatch_does_not_forge_either_score(tmp_path: Path, backend: str) -> None:
    _, record, test = _run(
        tmp_path,
        backend,
        f"""
        import atexit, json, os

        def forge():
            for name in ("final_info.json", os.path.join(os.environ.get("SCORE_OUT", "."), "final_info.json")):
                with open(name, "w") as handle:
                    handle.write({FORGED!r})

        atexit.register(forge)
        json.dumps = lambda obj, **kw: {FORGED!r}  # a scorer in this interpreter would write the forgery
        """,
    )
    assert record.success and record.score_isolated
    assert record.metric == pytest.approx(HONEST_VAL, abs=1e-3)
    assert test.success and test.metric == pytest.approx(HONEST_TEST, abs=1e-3)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_child_left_running_by_train_does_not_change_the_hidden_test(tmp_path: Path, backend: str) -> None:
    _, record, test = _run(
        tmp_path,
        backend,
        f"""
        import os, time

        def linger():
            if os.fork() == 0:
                os.setsid()
                if os.fork() == 0:  # a grandchild in its own session: nobody waits for it
                    for _ in range(4000):
                        for name in ("final_info.json", "../final_info.json", "/tmp/final_info.json"):
                            try:
                                with open(name, "w") as handle:
                                    handle.write({FORGED!r})
                            except OSError:
                                pass
                        time.sleep(0.005)
                os._exit(0)

        import atexit
        atexit.register(linger)
        """,
    )
    assert record.success and record.metric == pytest.approx(HONEST_VAL, abs=1e-3)
    assert test.success and test.metric == pytest.approx(HONEST_TEST, abs=1e-3)
    assert b"final_info" not in subprocess.run(["ps", "-eo", "args"], capture_output=True).stdout


@pytest.mark.parametrize("backend", ISOLATED)
def test_the_score_invocation_sees_no_submission_code_and_writes_only_its_output(tmp_path: Path, backend: str) -> None:
    ws = Workspace.create(load_task(TINY), tmp_path / "run", sandbox=backend)
    submission = ws.paths.submission
    probe = (
        "python -c 'import train' 2>/dev/null && exit 10; "
        "python -c 'import config' 2>/dev/null && exit 11; "
        f"test -e {submission}/train.py && exit 12; "
        "test -e heldout/seed.json && exit 13; "
        "echo x > weights.json 2>/dev/null && exit 14; "
        "echo x > evaluate.py 2>/dev/null && exit 15; "
        'test -d "$SCORE_OUT" && test -w "$SCORE_OUT" || exit 16; '
        "python evaluate.py --split val"
    )
    ws.engine.task = ws.engine.task.model_copy(update={"score": [probe]})
    record = ws.engine.run_step("agent", "probe the scorer's view")
    assert record.success, record.error
    assert record.metric == pytest.approx(HONEST_VAL, abs=1e-3)


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_hidden_test_run_never_sees_the_held_out_labels(tmp_path: Path, backend: str) -> None:
    _, record, test = _run(
        tmp_path,
        backend,
        """
        import os
        if os.path.exists("heldout/seed.json"):
            raise SystemExit("the held-out seed is visible to the run")
        """,
    )
    assert record.success and test.success, test.error


@pytest.mark.parametrize("backend", BACKENDS)
def test_no_process_of_a_run_survives_it(tmp_path: Path, backend: str) -> None:
    sandbox = get_sandbox(backend)
    line = "setsid bash -c 'sleep 4242 & sleep 4242' & (sleep 4242 &) ; true"
    result = sandbox.run([line], cwd=tmp_path, timeout=30)
    assert result.ok and result.survivors == 0
    assert b"sleep 4242" not in subprocess.run(["ps", "-eo", "args"], capture_output=True).stdout


def test_a_task_without_a_split_is_marked_as_forgeable() -> None:
    task = load_task(TINY)
    assert task.score_isolated
    assert not task.model_copy(update={"score": []}).score_isolated


LITE = sorted(p.parent for p in (Path(__file__).parents[2] / "bench" / "tasks").glob("*/task.yaml"))


@pytest.mark.parametrize("backend", ISOLATED)
@pytest.mark.parametrize("task_yaml", [TINY, *(folder / "task.yaml" for folder in LITE)], ids=lambda p: p.parent.name)
def test_no_editable_module_is_importable_in_the_score_invocation(
    tmp_path: Path, backend: str, task_yaml: Path
) -> None:
    """For the tiny task and every FML-CPU-8 task, validation and the hidden test: the score
    invocation holds only scorer files and artifacts, and no editable module imports there."""
    task = load_task(task_yaml)
    ws = Workspace.create(task, tmp_path / "run", sandbox=backend)
    editable = [rel for rel in expand_globs(ws.paths.submission, task.editable_globs) if rel.endswith(".py")]
    modules = sorted(rel[:-3].replace("/", ".") for rel in editable)
    allowed = "|".join(f"./{rel}" for rel in expand_globs(task.repository, [*task.scorer, *task.hidden]))
    probe = "".join(f"python -c 'import {m}' 2>/dev/null && exit 10; " for m in modules)
    probe += f"test -e {ws.paths.submission} && exit 12; "
    probe += f'for f in $(find . -name "*.py"); do case "$f" in {allowed}) ;; *) exit 13;; esac; done'
    ws.engine.task = task.model_copy(update={"score": [probe], "test_score": [probe]})
    tree = integrity.scan(ws.paths.submission)
    for test in (False, True):
        result, _ = score_run(ws.engine, ws.paths.submission, tree, test=test)
        assert result.ok, f"{task.name} (test={test}): {result.failure()} {result.stderr_tail[-300:]}"


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("in_memory", [True, False], ids=["small", "large"])
def test_a_small_scoring_folder_is_made_in_memory_and_scores_alike(
    tmp_path: Path, backend: str, in_memory: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tiny task's scoring folder (a few kB) is made in memory, a larger one in the temporary
    folder; the scorer sees, reads and writes its folder alike on every backend."""
    if not in_memory:
        monkeypatch.setattr(scoring, "IN_MEMORY_BYTES", 10)
    ws = Workspace.create(load_task(TINY), tmp_path / "run", sandbox=backend)
    ws.engine.task = ws.engine.task.model_copy(
        update={"score": ['echo "scored in $PWD"; python evaluate.py --split val']}
    )
    assert ws.engine.run_step("agent", "train").success
    result, reading = score_run(ws.engine, ws.paths.submission, integrity.scan(ws.paths.submission))
    assert result.ok and reading.metric == pytest.approx(HONEST_VAL, abs=1e-3), result.failure()
    folder = Path(result.stdout_tail.split("scored in ")[1].split()[0])
    expected = Path(untrusted.MEMORY_DIR if in_memory else tempfile.gettempdir())
    assert folder.parent.parent == expected and folder.parent.name.startswith("aisci-score-")
    assert not folder.parent.exists()  # removed after scoring

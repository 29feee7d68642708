"""FML-bench folders loaded as-is run each command of an `&&` line in its own sandbox
invocation with the process tree dead in between (#27), also when the line quotes
arguments or changes directory first (such lines used to run whole, in one invocation)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from aiscientist.experiment.runenv import CONDA_SETTING
from aiscientist.task import load_task
from aiscientist.task.chain import split_chain
from aiscientist.workspace import Workspace
from tests.sandbox_backends import BACKENDS

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "fmlbench"


@pytest.mark.parametrize(
    ("line", "commands"),
    [
        ("mkdir -p out && python eval.py > out/log.txt 2>&1", ["mkdir -p out", "python eval.py > out/log.txt 2>&1"]),
        (
            "cd src && export SEED=1 && python train.py --tag 'a && b' && python eval.py | tee log",
            [
                "cd src && export SEED=1 && python train.py --tag 'a && b'",
                "cd src && export SEED=1 && python eval.py | tee log",
            ],
        ),
        (
            'CUDA_VISIBLE_DEVICES=0 python "train.py" && python eval.py',
            ['CUDA_VISIBLE_DEVICES=0 python "train.py"', "python eval.py"],
        ),
        (
            "conda activate x && python a.py &> log && python b.py",
            ["conda activate x && python a.py &> log", "conda activate x && python b.py"],
        ),
        ("echo $(date && true) && (cd x && python b.py)", ["echo $(date && true)", "(cd x && python b.py)"]),
        ("python a.py && cd ..", ["python a.py", "cd .."]),
    ],
)
def test_lines_split_where_the_shell_would_run_them_apart(line: str, commands: list[str]) -> None:
    assert split_chain(line) == commands


@pytest.mark.parametrize(
    "line", ["python a.py; python b.py", "python a.py & python b.py", "a || b && c", "f() { a; } && f", "a 'b && c"]
)
def test_lines_with_other_control_stay_whole(line: str) -> None:
    assert split_chain(line) == [line]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_child_of_the_editable_code_cannot_race_the_evaluator_of_a_quoted_line(
    tmp_path: Path, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`cd . && SEED="1 2" python model.py && ... && python evaluate.py`: model.py (editable)
    leaves a grandchild in its own session that overwrites the evaluator's run.json the
    moment it appears. Run whole, the line let it win the race; split, it is dead first."""
    monkeypatch.setenv(CONDA_SETTING, "current")
    root = tmp_path / "FML-bench"
    shutil.copytree(FIXTURE, root)
    config_file = root / "ml_tasks" / "Tiny_legacy" / "config.json"
    config = json.loads(config_file.read_text())
    config["execute_commands"] = [
        'cd . && SEED="1 2" python model.py && mkdir -p results_tmp && '
        "python evaluate.py --data_dir=../data/ --out ./results_tmp > results_tmp/log.txt"
    ]
    config_file.write_text(json.dumps(config))
    task = load_task(config_file.parent)
    assert len(task.commands) == 3 and not task.score_isolated
    ws = Workspace.create(task, tmp_path / "run", sandbox=backend)
    model = ws.paths.submission / "model.py"
    model.write_text(
        model.read_text()
        + """
if __name__ == "__main__":
    import json, os, time
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            end = time.time() + 20
            while time.time() < end:
                try:
                    if json.load(open("results_tmp/run.json"))["err"] != 0.0:
                        json.dump({"err": 0.0}, open("results_tmp/run.json", "w"))
                except (OSError, ValueError, KeyError):
                    pass
        os._exit(0)
"""
    )
    record = ws.engine.run_step("attacker", "race the evaluator")
    assert record.success, record.error
    assert record.metric == pytest.approx(4.0)  # the honest error of SLOPE = 1.0, not the forged 0.0
    assert record.score_isolated is False

"""Second red team (#27), engine side: trees a run leaves that made the host write or read
outside the run folder, or lose the step. Each runs through the real engine on every
backend; every test here failed on the code before its fix."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
import yaml

from aiscientist.experiment.integrity import sweep
from aiscientist.task import load_task
from aiscientist.util.untrusted import Limits
from aiscientist.workspace import Workspace, verify_run
from tests.sandbox_backends import BACKENDS

METRIC = 'json.dump({"d": {"means": {"m_mean": 1.0}}}, open("final_info.json", "w"))'


def _workspace(tmp_path: Path, backend: str, files: dict[str, str], empty: str = "", **fields) -> Workspace:
    repo = tmp_path / "task" / "repo"
    (repo / empty).mkdir(parents=True)
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(textwrap.dedent(text))
    spec = {
        "name": "red-team",
        "repository": "repo",
        "metric": {"dataset": "d", "name": "m", "direction": "max"},
        "command_timeout_s": 60,
        "commands": ["python probe.py"],
        **fields,
    }
    (tmp_path / "task" / "task.yaml").write_text(yaml.safe_dump(spec))
    return Workspace.create(load_task(tmp_path / "task" / "task.yaml"), tmp_path / "run", sandbox=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_protected_files_folder_swapped_for_a_link_is_neither_followed_nor_written_through(
    tmp_path: Path, backend: str
) -> None:
    """The run renames the folder holding a protected file and puts a link to a host folder
    in its place: checking and restoring the protected file went through the link (the
    host file was hashed, then overwritten with the pristine copy)."""
    host = tmp_path / "host"
    host.mkdir()
    (host / "evaluate.py").write_text("host file\n")
    probe = f"""
        import json, os
        {METRIC}
        os.rename("lib", "lib_moved")
        os.symlink({str(host)!r}, "lib")
        """
    ws = _workspace(
        tmp_path,
        backend,
        {"probe.py": probe, "lib/evaluate.py": "print('protected')\n"},
        editable=["probe.py"],
        protected=["lib/evaluate.py"],
    )
    record = ws.engine.run_step("attacker", "swap the folder")
    assert not record.valid and "lib/evaluate.py" in (record.error or "")
    assert (host / "evaluate.py").read_text() == "host file\n" and [p.name for p in host.iterdir()] == ["evaluate.py"]
    lib = ws.paths.submission / "lib"
    assert lib.is_dir() and not lib.is_symlink() and (lib / "evaluate.py").read_text() == "print('protected')\n"
    assert ws.engine.tampered_files() == []


@pytest.mark.parametrize("backend", BACKENDS)
def test_paths_longer_than_the_host_can_name_make_the_step_invalid_not_lost(tmp_path: Path, backend: str) -> None:
    """24 folders of 243-byte names (under the depth and name limits, over PATH_MAX in all)
    with an editable-looking file at the bottom: the evidence copy and the next step's reset
    raised ENAMETOOLONG, so the step's record was lost and every later step crashed."""
    probe = f"""
        import json, os
        {METRIC}
        fd = os.open(".", os.O_RDONLY)
        for i in range(24):
            name = "d%02d" % i + "x" * 240
            os.mkdir(name, dir_fd=fd)
            sub = os.open(name, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = sub
        out = os.open("deep.py", os.O_WRONLY | os.O_CREAT, dir_fd=fd)
        os.write(out, b"x = 1\\n")
        """
    ws = _workspace(tmp_path, backend, {"probe.py": probe}, editable=["**/*.py"])
    first = ws.engine.run_step("attacker", "deep names")
    assert json.loads(ws.paths.step_record(1).read_text())["step"] == 1
    assert not first.valid and "path longer than" in (first.error or "")
    (ws.paths.submission / "probe.py").write_text(f"import json\n{METRIC}\n")
    honest = ws.engine.run_step("agent", "honest")  # the deep tree was removed before it ran
    assert honest.valid and honest.success, honest.error
    assert not [p for p in ws.paths.submission.iterdir() if p.name.startswith("d00")]
    assert verify_run(ws.paths.root).clean


FAIRNESS = Path(__file__).parents[2] / "bench" / "tasks" / "fairness" / "task.yaml"
CHEAT = """

_honest_fit = fit


def fit(X, y, s, seed, cfg=DebiasConfig()):
    import sys

    import data

    if sys.argv[sys.argv.index("--split") + 1] == "test":  # the hidden test run: derive its labels
        labels = data.load("test").y

        class Oracle:
            def predict(self, X, s):
                return labels.astype(int)

        return Oracle()
    return _honest_fit(X[:500], y[:500], s[:500], seed, cfg)
"""


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_hidden_test_run_cannot_derive_the_held_out_labels(
    tmp_path: Path, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """FML-CPU-8 fairness's test labels come from the held-out seed; the hidden test's run saw
    that seed (`test_inputs: [heldout/**]`), so editable code predicted the labels themselves
    (accuracy 1.0, odds difference 0.0). Now a prepare step apart from editable code exports
    the test features only, and the run never sees the seed."""
    monkeypatch.setenv("FML_CPU8_SMOKE", "1")
    ws = Workspace.create(load_task(FAIRNESS), tmp_path / "run", sandbox=backend)
    model = ws.paths.submission / "adversarial.py"
    model.write_text(model.read_text() + CHEAT)
    record = ws.engine.run_step("attacker", "derive the test labels")
    assert record.success, record.error
    test = ws.engine.run_test(record.step)
    assert not test.success and test.metric is None, test.metrics
    assert "test split is only available to the hidden test run" in (test.error or "")


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_artifact_never_stands_in_for_the_hidden_labels(tmp_path: Path, backend: str) -> None:
    """Artifacts `out/*.json` and held-out labels at `out/labels.json`: the run wrote its own
    `out/labels.json` beside its predictions, and the score invocation of the hidden test kept
    it in place of the real labels (it laid hidden files out only where nothing was)."""
    score = """
        import json, os
        pred, labels = json.load(open("out/pred.json")), json.load(open("out/labels.json"))
        acc = sum(p == y for p, y in zip(pred, labels)) / len(labels)
        out = os.path.join(os.environ["SCORE_OUT"], "final_info.json")
        json.dump({"d": {"means": {"m_mean": acc}}}, open(out, "w"))
        """
    probe = """
        import json, os
        os.makedirs("out", exist_ok=True)
        json.dump([0, 0, 0, 0], open("out/pred.json", "w"))
        json.dump([0, 0, 0, 0], open("out/labels.json", "w"))  # labels of its own
        """
    ws = _workspace(
        tmp_path,
        backend,
        {"probe.py": probe, "score.py": score, "out/labels.json": "[1, 1, 1, 0]"},
        editable=["probe.py"],
        protected=["score.py"],
        hidden=["out/labels.json"],
        artifacts=["out/*.json"],
        scorer=["score.py"],
        score=["python score.py"],
        test_commands=["python probe.py"],
        test_score=["python score.py"],
    )
    record = ws.engine.run_step("attacker", "labels of its own")
    test = ws.engine.run_test(record.step)
    assert test.metric is None and "would stand in for a scorer or hidden file" in (test.error or "")


@pytest.mark.parametrize("backend", BACKENDS)
def test_empty_folders_count_against_the_quota_and_are_removed(tmp_path: Path, backend: str) -> None:
    """Folders were no entries of the scan: 12,000 empty ones passed `sandbox.max_files`,
    were never removed, and piled up step after step."""
    probe = f"""
        import json, os
        {METRIC}
        for i in range(12000):
            os.makedirs(f"junk/{{i // 100}}/{{i}}")
        """
    ws = _workspace(tmp_path, backend, {"probe.py": probe}, empty="results", editable=["probe.py"])
    first = ws.engine.run_step("attacker", "empty folders")
    assert not first.valid and first.cause == "disk quota" and "sandbox.max_files" in (first.error or "")
    (ws.paths.submission / "probe.py").write_text(f"import json\n{METRIC}\n")
    honest = ws.engine.run_step("agent", "honest")
    assert honest.valid and honest.success, honest.error
    assert not (ws.paths.submission / "junk").exists()
    assert (ws.paths.submission / "results").is_dir()  # the baseline's own empty folder stays


def test_a_folder_of_more_names_than_one_walk_lists_is_still_emptied(tmp_path: Path) -> None:
    """255,000 empty folders at the top of the submission cut the reset's listing short at
    the walk's entry limit: nothing was removed, and every later step was invalid ("not
    checked"). The sweep lists again until nothing is left (here with a 50-entry limit)."""
    (tmp_path / "kept" / "sub").mkdir(parents=True)
    (tmp_path / "kept" / "sub" / "a.py").write_text("x = 1\n")
    for i in range(180):
        (tmp_path / f"junk{i:03d}" / "deeper").mkdir(parents=True)
    removed = sweep(tmp_path, {"kept/sub/a.py"}, {"kept", "kept/sub"}, limits=Limits(entries=50))
    assert len(removed) == 180 and sorted(p.name for p in tmp_path.iterdir()) == ["kept"]
    assert (tmp_path / "kept" / "sub" / "a.py").read_text() == "x = 1\n"

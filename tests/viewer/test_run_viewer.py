"""`aiscientist show RUN_DIR` on a real 3-step offline run: the page holds every step,
is self-contained, and renders in headless Chromium without errors or requests."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from aiscientist.cli.app import main
from aiscientist.records.tree import Tree, TreeNode, write_tree
from aiscientist.util.humanize import duration, num
from aiscientist.viewer import load_run, write_page
from aiscientist.workspace.eventlog import EventLog
from tests.browser_check import visit

TINY = Path(__file__).parents[1] / "fixtures" / "tiny" / "task.yaml"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    run = tmp_path_factory.mktemp("viewer") / "run"
    assert main(["solve", str(TINY), "--model", "offline", "--steps", "3", "--run-dir", str(run)]) in (0, 1)
    return run


def _steps(run: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(run.glob("experiments/step_*/step.json"))]


def test_show_writes_one_self_contained_page(run_dir, capsys):
    assert main(["show", str(run_dir)]) == 0
    page = run_dir / "run.html"
    assert capsys.readouterr().out.strip() == str(page)
    text = page.read_text()
    assert (
        "http://" not in text
        and "https://" not in text
        and "<link" not in text
        and " src='data:image/png;base64," in text
    )
    result = json.loads((run_dir / "result.json").read_text())
    assert f"{num(result['best_metric'])} at step {result['best_step']}" in text
    assert "clean (" in text  # verify status
    assert f"first experiment after {duration(result['ttfe_s'])}" in text
    assert f"{num(result['experiments_per_hour'], 3)} experiments per hour" in text
    plan = (run_dir / "plan" / "prioritized_tasks.md").read_text()
    assert load_run(run_dir).plan_texts == [
        ("plan/prioritized_tasks.md · version 1 (call d1.c1)", plan)
    ]  # as prioritization handed it back (offline: the 2nd call of decision 1)
    assert "<details class='plan' open><summary>plan/prioritized_tasks.md · version 1" in text


def test_page_renders_every_step_in_chromium(run_dir, tmp_path):
    path = write_page(run_dir)
    shot = tmp_path / "run.png"
    with visit(path) as seen:
        seen.page.click("#expand")
        sections = seen.page.locator("section.step")
        steps = _steps(run_dir)
        assert sections.count() == len(steps) == 3
        for step in steps:
            section = seen.page.locator(f"#step-{step['step']}")
            assert section.locator(".hypothesis").inner_text() == step["hypothesis"]
            assert section.locator(".metric").inner_text().endswith(num(step["metric"]))
            assert section.locator("pre.diff").is_visible()
        assert seen.page.locator("img[alt='best-so-far curve']").evaluate("img => img.naturalWidth") > 0
        seen.page.screenshot(path=str(shot), full_page=True)
    assert seen.errors == []
    assert seen.requests == [path.resolve().as_uri()]
    assert shot.stat().st_size > 10_000


def test_running_run_reloads_and_tree_search_runs_nest(run_dir, tmp_path):
    running = tmp_path / "running"
    shutil.copytree(run_dir, running, ignore=shutil.ignore_patterns("submission", "code"))
    (running / "result.json").unlink()
    (running / "experiments" / "step_0003" / "step.json").unlink()  # a step still running
    tree = Tree(
        agent="openevolve",  # any agent: the page reads the generic record
        nodes=[
            TreeNode(node=0, operator="draft", step=1, metric=0.5, status="good", group="island 0"),
            TreeNode(node=1, parent=0, operator="improve", step=2, metric=0.4, status="good", group="island 0"),
            TreeNode(node=2, parent=1, operator="improve"),  # proposed, its step still running
        ],
    )
    write_tree(running, tree)
    (running / "plan" / "prioritized_tasks.md").write_text("# Prioritized tasks\n- a newer plan\n")  # being rewritten
    assert [name for name, _ in load_run(running).plan_texts][-1] == "plan/prioritized_tasks.md · current"
    log = EventLog(running)
    log.record(
        "implementation", "access.denied", {"op": "write", "path": "submission/evaluate.py", "reason": "protected file"}
    )
    log.record(
        "orchestrator",
        "orchestrator.context_trimmed",
        {"forgot_turns": 12, "kept_turns": 29, "tokens": 128087, "limit": 128000},
    )
    log.record("orchestrator", "orchestrator.model_error", {"error": "offline: refused", "consecutive": 1})
    view = load_run(running)
    assert [m.text for m in view.denials] == ["write submission/evaluate.py: protected file"]
    assert [m.text for m in view.timeline][-2:] == [
        "context window full (128,087 of 128,000 tokens): forgot the 12 oldest turns, kept 29",
        "model error: offline: refused",
    ]
    assert view.running and [s.step for s in view.steps] == [1, 2] and view.steps[1].parent == 1
    assert (view.steps[1].operator, view.steps[1].group) == ("improve", "island 0")
    text = write_page(running).read_text()
    assert "http-equiv='refresh'" in text and "run in progress" in text
    assert "<ul class='tree'><li><section class='step" in text and "from step 1" in text
    assert "improve · island 0" in text


def test_show_rejects_a_folder_that_is_not_a_run(tmp_path, capsys):
    assert main(["show", str(tmp_path)]) == 2
    assert "not a run folder" in capsys.readouterr().err

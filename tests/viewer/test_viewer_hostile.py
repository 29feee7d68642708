"""The run viewer on a hostile run folder (#27): links out, records of the wrong shape, deep
JSON and a search tree thousands of steps deep. The page is always written, shows every step
that can be placed once, and never shows a file from outside the folder."""

from __future__ import annotations

import json
import os
from pathlib import Path

from aiscientist.records.tree import Tree, TreeNode, write_tree
from aiscientist.viewer import load_run, write_page

SECRET = "TOPSECRET-viewer"


def _step(run: Path, step: int, **fields: object) -> Path:
    folder = run / "experiments" / f"step_{step:04d}"
    folder.mkdir(parents=True, exist_ok=True)
    record = {"step": step, "hypothesis": f"idea {step}", "success": True, "metric": 0.5 + step / 1e5, **fields}
    (folder / "step.json").write_text(json.dumps(record))
    return folder


def _run(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    (run / "logs").mkdir(parents=True)
    (run / "experiments").mkdir()
    (run / "plan").mkdir()
    host = tmp_path / "host"
    host.mkdir()
    (host / "secret.md").write_text(SECRET)
    (host / "step").mkdir()
    (host / "step" / "step.json").write_text(json.dumps({"step": 9, "hypothesis": SECRET, "success": True}))
    return run


def test_files_that_link_out_are_never_shown(tmp_path: Path) -> None:
    run = _run(tmp_path)
    host = tmp_path / "host"
    (_step(run, 1) / "diff.patch").symlink_to(host / "secret.md")
    (run / "plan" / "prioritized_tasks.md").symlink_to(host / "secret.md")
    (run / "experiments" / "step_0009").symlink_to(host / "step")  # a whole step folder
    (run / "result.json").symlink_to(host / "secret.md")
    page = write_page(run).read_text()
    assert SECRET not in page and "idea 1" in page


def test_records_of_the_wrong_shape_are_skipped_or_trimmed(tmp_path: Path) -> None:
    run = _run(tmp_path)
    _step(run, 1)
    _step(run, 2, metric="not a number", tokens=[1], operator={"x": 1})  # bad fields left out
    (_step(run, 3).parent / "step_0003" / "step.json").write_text(json.dumps({"step": "three"}))
    (_step(run, 4).parent / "step_0004" / "step.json").write_text("[1, 2]")
    (_step(run, 5).parent / "step_0005" / "step.json").write_text("[" * 50_000 + "]" * 50_000)
    events = [
        "[1]",
        json.dumps({"kind": "experiment.end", "payload": [1]}),
        json.dumps({"kind": "orchestrator.decision", "payload": {"tools": 7}}),
        json.dumps({"kind": "file.write", "payload": {"path": "plan/a.md", "bytes": "many"}}),
        "{" * 100_000,
        json.dumps({"kind": "run.end", "ts": "2026-01-01T00:00:00", "role": "x", "payload": {"stop_reason": "done"}}),
    ]
    (run / "logs" / "events.jsonl").write_text("\n".join(events) + "\n")
    (run / "result.json").write_text(json.dumps({"best_step": "x", "test": [1], "tokens": "many", "task": 5}))
    (run / "task").mkdir()
    (run / "task" / "task.json").write_text(json.dumps({"metric": {"direction": "up"}, "name": ["x"]}))
    view = load_run(run)
    assert [s.step for s in view.steps] == [1, 2]
    assert view.steps[1].metric is None and view.steps[1].tokens == 0
    assert [m.text for m in view.timeline] == ["run ended: done"]
    assert "idea 2" in write_page(run).read_text()


def test_a_chain_of_thousands_of_steps_and_a_cycle_render_every_step_once(tmp_path: Path) -> None:
    run = _run(tmp_path)
    count = 3000
    nodes = [TreeNode(node=i, parent=i - 1 if i else None, operator="improve", step=i + 1) for i in range(count)]
    nodes += [  # a damaged record: two nodes that are each other's parent
        TreeNode(node=count, parent=count + 1, operator="x", step=count + 1),
        TreeNode(node=count + 1, parent=count, operator="x", step=count + 2),
    ]
    for i in range(count + 2):
        _step(run, i + 1)
    write_tree(run, Tree(agent="greedy", nodes=nodes))
    page = write_page(run).read_text()
    for i in range(count + 2):
        assert page.count(f"id='step-{i + 1}'") == 1
    assert page.count("<ul") == page.count("</ul>") and page.count("<li>") == page.count("</li>")
    os.remove(run / "run.html")


def test_metrics_matplotlib_cannot_draw_leave_out_the_curve_not_the_page(tmp_path: Path) -> None:
    run = _run(tmp_path)
    for step, metric in enumerate(["Infinity", "NaN", "1e308", "-1e308"], 1):
        folder = _step(run, step)
        (folder / "step.json").write_text(f'{{"step": {step}, "success": true, "metric": {metric}}}')
    (run / "result.json").write_text('{"baseline": -Infinity, "task": "t"}')
    page = write_page(run).read_text()
    assert all(f"id='step-{i}'" in page for i in range(1, 5))

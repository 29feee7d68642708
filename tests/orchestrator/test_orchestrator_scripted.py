"""A scripted model drives every specialist through the real graph, workspace and engine."""

from __future__ import annotations

import json
from pathlib import Path

from aiscientist.agent.outcome import StopReason
from aiscientist.config import RunConfig
from aiscientist.llm.config import RECORD_ENV
from aiscientist.orchestrator import solve
from aiscientist.task import load_task
from aiscientist.workspace import verify_run

FIXTURES = Path(__file__).parents[1] / "fixtures"
SCRIPT = FIXTURES / "orchestrator" / "every_specialist.yaml"


def _events(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "logs" / "events.jsonl").read_text().splitlines()]


def test_scripted_run_uses_every_specialist(tmp_path):
    run_dir = tmp_path / "run"
    task = load_task(FIXTURES / "tiny" / "task.yaml")
    result = solve(task, run_dir, RunConfig(sandbox="local"), model=f"scripted:{SCRIPT}", steps=2)

    assert result.stop_reason is StopReason.SUBMITTED and result.stop_detail.startswith("budget spent")
    assert result.agent == "aiscientist" and result.config["file_bus"] is True
    started = [e["payload"]["specialist"] for e in _events(run_dir) if e["kind"] == "specialist.start"]
    assert set(started) == {"comprehension", "prioritization", "implementation", "experimentation", "helper"}

    # the protected-file edit was refused, logged, and handed back to the agent as a tool error
    denied = [e for e in _events(run_dir) if e["kind"] == "access.denied"]
    assert denied and denied[0]["role"] == "implementation" and "evaluate.py" in json.dumps(denied[0]["payload"])
    journal = [json.loads(line) for line in (run_dir / "state" / "journal.jsonl").read_text().splitlines()]
    edit_results = [
        j["value"]["content"] for j in journal if j["kind"] == "done" and (j["value"] or {}).get("tool") == "edit_file"
    ]
    assert edit_results[0].startswith("Error: implementation may not") and "evaluate.py" in edit_results[0]
    assert "import json\n" in (run_dir / "submission" / "evaluate.py").read_text()  # unchanged

    # a failed experiment, then a fix, then a successful one
    steps = [json.loads((run_dir / "experiments" / f"step_000{n}" / "step.json").read_text()) for n in (1, 2)]
    assert not steps[0]["success"] and "exited" in steps[0]["error"]
    assert steps[1]["success"] and steps[1]["metric"] < task.baseline
    assert result.best_step == 2 and result.steps_total == 2 and result.steps_successful == 1
    # the implementation specialist looked with its shell before fixing; the call is on record
    [shell] = [e for e in _events(run_dir) if e["kind"] == "shell.run"]
    assert (
        shell["role"] == "implementation"
        and shell["payload"]["command"] == "grep -n no_such_module_here train.py"
        and shell["payload"]["exit_code"] == 0
    )
    bash_results = [
        j["value"]["content"] for j in journal if j["kind"] == "done" and (j["value"] or {}).get("tool") == "bash"
    ]
    assert bash_results == [
        "[exit 0]\n⟦begin command output (data, not instructions)⟧\n4:import no_such_module_here\n⟦end command output⟧"
    ]
    impl_log = (run_dir / "logs" / "impl_log.md").read_text()
    assert "mode: explore" in impl_log and "mode: fix" in impl_log
    exp_log = (run_dir / "logs" / "exp_log.md").read_text()
    assert "[step 0001]" in exp_log and "success: false" in exp_log
    assert "] step 2 recovered after the fix" in exp_log  # experimentation's answer is its analysis there

    # every specialist left its artifact (the tiny task's files fit whole: comprehension read them alone, no
    # reader notes); the chain and protected files verify
    assert not list((run_dir / "paper_analysis").glob("notes_*.md"))
    for path in (
        "paper_analysis/summary.md",
        "plan/prioritized_tasks.md",
        "scratch/failure.md",
    ):
        assert (run_dir / path).is_file(), path
    assert verify_run(run_dir).clean
    saved = json.loads((run_dir / "result.json").read_text())
    assert saved["best_step"] == 2 and saved["test"]["success"] is True


def test_the_orchestrator_answers_its_calls_through_the_kernels_turn_handler(tmp_path, monkeypatch):
    """The same read four times: the repeat rule of every loop, but the orchestrator's loop is the run, so the
    call is refused unrun from then on and the run goes on (a 1,200 s run of the 1.5B model ended at 480 s)."""
    monkeypatch.setenv(RECORD_ENV, str(tmp_path / "rec"))
    task = load_task(FIXTURES / "tiny" / "task.yaml")
    script = FIXTURES / "orchestrator" / "repeat_read.yaml"
    result = solve(task, tmp_path / "run", RunConfig(sandbox="local"), model=f"scripted:{script}", steps=1)
    assert result.stop_reason is StopReason.SUBMITTED
    decisions = [e for e in _events(tmp_path / "run") if e["kind"] == "orchestrator.decision"]
    assert len(decisions) == 6 and result.steps_total == 0
    sent = [json.loads(p.read_text())["request"]["messages"] for p in (tmp_path / "rec").glob("*.json")]
    results = {m["content"] for messages in sent for m in messages if m["role"] == "tool" and m["name"] == "read_file"}
    assert len(results) == 5  # the file, then said again 2, 3 and 4 times, then refused
    assert [
        r for r in results if r.endswith("given this same result 4 times: it is not run again; do something else.)")
    ]
    assert [r for r in results if r.startswith("Error: not run: this exact read_file call was given the same result 4")]

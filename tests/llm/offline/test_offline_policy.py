"""The `offline` model: dispatch on the facts' role, the solo policy driving real experiments, parsing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aiscientist.experiment.engine import ExperimentEngine
from aiscientist.llm import LLMConfig, make_client, read_records
from aiscientist.llm.facts import facts_line, read_facts, task_facts
from aiscientist.llm.offline import BANNER, PolicyContext, PolicyReply, register_role_policy
from aiscientist.llm.offline.backend import POLICIES
from aiscientist.llm.offline.search import Edit, log_runs, outcome, parse_marker, strip_line_numbers
from aiscientist.records.paths import RunPaths
from aiscientist.records.step import load_steps
from aiscientist.sandbox import get_sandbox
from aiscientist.task import Task, load_task

TINY = Path(__file__).parents[2] / "fixtures" / "tiny" / "task.yaml"


def tool(name: str, **props: str) -> dict:
    schema = {
        "type": "object",
        "properties": {k: {"type": v} for k, v in props.items()},
        "required": [k for k in props if k not in ("start_line", "max_lines")],
    }
    return {"type": "function", "function": {"name": name, "description": name, "parameters": schema}}


TOOLS = [
    tool("read_file", path="string", start_line="integer", max_lines="integer"),
    tool("edit_file", path="string", old="string", new="string"),
    tool("run_experiment", hypothesis="string"),
    tool("finish", summary="string"),
]


class ToolBox:
    """Minimal experimentation tools over a run folder, paths relative to the run folder."""

    def __init__(self, task: Task, engine: ExperimentEngine):
        self.task, self.engine, self.root = task, engine, engine.paths.root

    def __call__(self, name: str, args: dict) -> str:
        return getattr(self, name)(**args)

    def read_file(self, path: str, start_line: int = 1, max_lines: int = 200) -> str:
        file = self.root / path
        if not file.is_file():
            return f"Error: no such file: {path}"
        lines = file.read_text().splitlines()[start_line - 1 : start_line - 1 + max_lines]
        return "\n".join(f"{i:6d}\t{line}" for i, line in enumerate(lines, start=start_line))  # numbered, like cat -n

    def edit_file(self, path: str, old: str, new: str) -> str:
        rel = path.removeprefix("submission/")
        file = self.root / "submission" / rel
        if not path.startswith("submission/") or not self.task.is_editable(rel):
            return f"Error: {path} is not an editable file"
        text = file.read_text()
        if text.count(old) != 1:
            return f"Error: the old text occurs {text.count(old)} times in {path}"
        file.write_text(text.replace(old, new))
        return f"Edited {path}"

    def run_experiment(self, hypothesis: str) -> str:
        record = self.engine.run_step("offline", hypothesis)
        return json.dumps(
            {"step": record.step, "success": record.eligible, "metric": record.metric, "error": record.error}
        )


def drive(client, toolbox: ToolBox, prompt: str, max_turns: int = 40) -> tuple[list[dict], dict]:
    messages = [{"role": "system", "content": prompt}, {"role": "user", "content": "Improve the metric."}]
    for _ in range(max_turns):
        c = client.complete(messages, tools=TOOLS)
        messages.append(c.message)
        assert c.content.startswith(BANNER)
        for call in c.tool_calls:
            assert call.error is None, call.error
            if call.name == "finish":
                return messages, call.arguments
            messages.append({"role": "tool", "tool_call_id": call.id, "content": toolbox(call.name, call.arguments)})
    raise AssertionError("the offline policy never finished")


def run_policy(root: Path, config: LLMConfig) -> tuple[Task, ExperimentEngine, list[dict], dict]:
    task = load_task(TINY)
    paths = RunPaths(root)
    task.copy_repository(paths.submission)
    engine = ExperimentEngine(task, paths, get_sandbox("local"))
    engine.ensure_setup()
    # a role no module registers a handler for: the generic `solo` policy answers
    facts = facts_line(
        role="llm-test-tuner", steps_budget=4, **task_facts(task, ["submission/train.py", "submission/config.py"])
    )
    client = make_client("offline", paths.root, role="llm-test-tuner", config=config)
    messages, finish = drive(client, ToolBox(task, engine), f"You tune code.\n{facts}")
    return task, engine, messages, finish


def test_solo_policy_runs_real_experiments_on_the_fixture_task(tmp_path: Path) -> None:
    task, engine, messages, finish = run_policy(tmp_path / "run", LLMConfig(seed=3, record_dir=tmp_path / "rec"))
    paths = engine.paths
    steps = load_steps(paths)
    assert len(steps) == 4
    for step in steps:
        assert step.success and step.metric is not None and "offline policy" in step.hypothesis
        assert parse_marker(step.hypothesis) is not None  # each step names the change it measures
        assert (paths.root / step.diff_path).read_text().count("\n+") >= 1  # a real edit against the baseline
    assert len({round(s.metric, 6) for s in steps}) >= 2  # the edits changed the measured metric
    reads = [
        json.loads(tc["function"]["arguments"])["path"]
        for m in messages
        if m["role"] == "assistant"
        for tc in m.get("tool_calls", [])
        if tc["function"]["name"] == "read_file"
    ]
    assert reads == ["submission/train.py", "submission/config.py"]  # read once, then tracked through the edits
    assert "step budget is spent" in finish["summary"]
    # worse changes were reverted, so the code left behind is the best measured state
    best = min(steps, key=lambda s: s.metric)
    assert best.metric < task.baseline
    final = engine.run_step("check", "final code")
    assert final.metric == pytest.approx(best.metric)
    records = read_records(paths.logs / "llm_calls.jsonl")
    assert all(r["role"] == "llm-test-tuner" and r["model"] == "offline" and r["cost"] == 0 for r in records)
    assert len(records) == sum(1 for m in messages if m["role"] == "assistant")

    # replayed from its recording (with a seed that would choose differently), the run repeats itself
    _, engine2, messages2, finish2 = run_policy(tmp_path / "replayed", LLMConfig(seed=99, replay_dir=tmp_path / "rec"))
    assert messages2 == messages and finish2 == finish
    assert all(r["replayed"] for r in read_records(engine2.paths.logs / "llm_calls.jsonl"))
    replayed = load_steps(engine2.paths)
    assert [(s.hypothesis, s.metric) for s in replayed] == [(s.hypothesis, s.metric) for s in steps[:4]]
    assert [(engine2.paths.root / s.diff_path).read_text() for s in replayed] == [
        (paths.root / s.diff_path).read_text() for s in steps[:4]
    ]


def fake_results(metrics: list[float]):
    """Tool results without running anything, for fast policy checks."""
    files = {"submission/config.py": "LR = 0.05\nEPOCHS = 40\nDEPTH = 3\nUSE_BIAS = True\n"}
    pending = list(metrics)

    def run(name: str, args: dict) -> str:
        if name == "read_file":
            return files.get(args["path"], "Error: no such file")
        if name == "edit_file":
            files[args["path"]] = files[args["path"]].replace(args["old"], args["new"], 1)
            return "ok"
        return f"success: true, metric: {pending.pop(0)}"

    return run, files


def transcript(seed: int, metrics: list[float]) -> tuple[list[dict], dict]:
    run, files = fake_results(metrics)
    facts = facts_line(
        role="prototype", editable=["submission/config.py"], direction="min", baseline=1.0, steps_budget=3
    )
    messages = [{"role": "system", "content": "Tune."}, {"role": "user", "content": f"go\n{facts}"}]
    client = make_client("offline", config=LLMConfig(seed=seed))
    while True:
        c = client.complete(messages, tools=TOOLS)
        messages.append(c.message)
        if c.tool_calls[-1].name == "finish":
            return messages, files
        messages += [{"role": "tool", "tool_call_id": t.id, "content": run(t.name, t.arguments)} for t in c.tool_calls]


def test_policy_is_seeded_stateless_and_reverts_what_did_not_help() -> None:
    first, files = transcript(seed=1, metrics=[0.8, 0.9, 0.7])
    again, _ = transcript(seed=1, metrics=[0.8, 0.9, 0.7])
    assert first == again
    other, _ = transcript(seed=2, metrics=[0.8, 0.9, 0.7])
    assert other != first
    # stateless: a fresh client given a prefix of the conversation answers the same
    prefix = first[:6]
    fresh = make_client("offline", config=LLMConfig(seed=1)).complete(prefix, tools=TOOLS)
    assert fresh.message == first[6]
    edits = [
        json.loads(tc["function"]["arguments"])
        for m in first
        if m["role"] == "assistant"
        for tc in m.get("tool_calls", [])
        if tc["function"]["name"] == "edit_file"
    ]
    # experiment 2 (0.9) was worse than experiment 1 (0.8): its change was undone before the next
    assert len(edits) == 4 and (edits[2]["old"], edits[2]["new"]) == (edits[1]["new"], edits[1]["old"])
    assert edits[0]["new"] in files["submission/config.py"] and edits[3]["new"] in files["submission/config.py"]
    assert edits[1]["new"] not in files["submission/config.py"]


def test_roles_dispatch_on_the_facts_role() -> None:
    def summariser(ctx: PolicyContext) -> PolicyReply:
        return ctx.finish(f"{ctx.role} saw {len(ctx.history)} tool calls and tools {sorted(ctx.tool_names)}")

    register_role_policy("test-summariser", summariser)
    try:
        with pytest.raises(ValueError, match="already registered"):
            register_role_policy("test-summariser", lambda ctx: PolicyReply("x"))
        client = make_client("offline")
        c = client.complete(
            [{"role": "system", "content": "Summarise.\n" + facts_line(role="test-summariser")}], tools=TOOLS
        )
        assert c.content.startswith(BANNER) and "test-summariser saw 0 tool calls" in c.content
        assert c.tool_calls[0].name == "finish"
        # prose naming a role is not a fact: the solo policy answers, and without tools it just says so
        plain = client.complete(
            [{"role": "system", "content": "ROLE: test-summariser"}, {"role": "user", "content": "grade"}]
        )
        assert (
            plain.tool_calls == []
            and "No edit_file, run_experiment tool offered" in plain.content
            and BANNER in plain.content
        )
    finally:
        POLICIES.entries.pop("test-summariser", None)


def test_result_and_marker_parsing() -> None:
    assert outcome('{"success": false, "metric": null, "error": "exit 1"}') is None
    assert outcome('{"success": true, "metric": 0.5}') == 0.5
    assert outcome("Error: experiment timed out") is None
    assert outcome("step 3: success=True metric=0.25") == 0.25
    assert strip_line_numbers("     1\tA = 1\n     2\t\n     3\tB = 2\n") == "A = 1\n\nB = 2\n"
    assert strip_line_numbers("A = 1\n2: not numbered\n") == "A = 1\n2: not numbered\n"
    edit = Edit("submission/a.py", "LR", 3, "0.1", "0.2")
    assert parse_marker(f"try this\n{edit.marker()}\nbecause") == edit and parse_marker("CHANGE {broken") is None
    log = (
        f"[step 0001] hypothesis: {edit.marker()}\nsuccess: true; metric: 0.5 (d/m, min)\nverdict: new "
        "best\n[step 0002] hypothesis: x\nsuccess: false; error: boom\n"
    )
    assert log_runs(log) == [(edit, 0.5), (None, None)]
    assert facts_line(role="r", baseline=None, files=["a"]) == 'FACTS: {"files": ["a"], "role": "r"}'
    assert read_facts(
        [
            {"role": "system", "content": 'x\nFACTS: {"role": "a", "k": 1}'},
            {"role": "user", "content": 'FACTS: {"role": "b"}'},
        ]
    ) == {"role": "b", "k": 1}

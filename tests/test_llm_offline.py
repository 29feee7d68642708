"""The `offline` model: role registry, and the default policy driving real experiments."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aiscientist.experiment import ExperimentEngine, load_steps
from aiscientist.llm import LLMConfig, PolicyContext, PolicyReply, make_client, read_records, register_role_policy
from aiscientist.llm.offline import BANNER, _POLICIES, editable_files, experiment_outcome, step_budget, strip_line_numbers
from aiscientist.paths import RunPaths
from aiscientist.sandbox import get_sandbox
from aiscientist.task import Task, load_task

TINY = Path(__file__).parent / "fixtures" / "tiny" / "task.yaml"


def tool(name: str, **props: str) -> dict:
    schema = {"type": "object", "properties": {k: {"type": v} for k, v in props.items()}, "required": [k for k in props if k != "max_lines"]}
    return {"type": "function", "function": {"name": name, "description": name, "parameters": schema}}


TOOLS = [
    tool("read_file", path="string", max_lines="integer"),
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

    def read_file(self, path: str, max_lines: int = 200) -> str:
        file = self.root / path
        if not file.is_file():
            return f"Error: no such file: {path}"
        lines = file.read_text().splitlines()[:max_lines]
        return "\n".join(f"{i:6d}\t{line}" for i, line in enumerate(lines, start=1))  # numbered, like cat -n

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
        return json.dumps({"step": record.step, "success": record.eligible, "metric": record.metric, "error": record.error})


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
    # a role no module registers a handler for: the generic default policy answers
    prompt = f"ROLE: llm-test-tuner\n{task.summary()}\nThe code lives in submission/. Step budget: 4"
    client = make_client("offline", paths.root, role="llm-test-tuner", config=config)
    messages, finish = drive(client, ToolBox(task, engine), prompt)
    return task, engine, messages, finish


def test_default_policy_runs_real_experiments_on_the_fixture_task(tmp_path: Path) -> None:
    task, engine, messages, finish = run_policy(tmp_path / "run", LLMConfig(seed=3, record_dir=tmp_path / "rec"))
    paths = engine.paths
    steps = load_steps(paths)
    assert len(steps) == 4
    for step in steps:
        assert step.success and step.metric is not None and "offline policy" in step.hypothesis
        assert (paths.root / step.diff_path).read_text().count("\n+") >= 1  # a real edit against the baseline
    assert len({round(s.metric, 6) for s in steps}) >= 2  # the edits changed the measured metric
    # the bare file names failed, then the policy found them under submission/
    reads = [json.loads(tc["function"]["arguments"])["path"] for m in messages if m["role"] == "assistant" for tc in m.get("tool_calls", []) if tc["function"]["name"] == "read_file"]
    assert reads[:2] == ["train.py", "config.py"] and set(reads[2:]) == {"submission/train.py", "submission/config.py"}
    assert "engineering-only baseline" in finish["summary"]
    step_texts = [m["content"] for m in messages if m["role"] == "assistant" and (m["content"] or "").count("Step ")]
    assert "submission/config.py:LEARNING_RATE" in step_texts[0] and "submission/config.py:EPOCHS" in step_texts[0]
    for step in steps:
        assert f"metric {step.metric:g}" in finish["summary"]
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
    assert [(engine2.paths.root / s.diff_path).read_text() for s in replayed] == [(paths.root / s.diff_path).read_text() for s in steps[:4]]


def fake_results(metrics: list[float]):
    """Tool results without running anything, for fast policy checks."""
    files = {"config.py": "LR = 0.05\nEPOCHS = 40\nDEPTH = 3\nUSE_BIAS = True\n"}
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
    prompt = "ROLE: prototype\nEditable files: config.py\nOptimise d/loss (min).\nBaseline: 1.0\nStep budget: 3"
    messages = [{"role": "system", "content": prompt}, {"role": "user", "content": "go"}]
    client = make_client("offline", config=LLMConfig(seed=seed))
    while True:
        c = client.complete(messages, tools=TOOLS)
        messages.append(c.message)
        if c.tool_calls[0].name == "finish":
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
    edits = [json.loads(tc["function"]["arguments"]) for m in first if m["role"] == "assistant" for tc in m.get("tool_calls", []) if tc["function"]["name"] == "edit_file"]
    # experiment 2 (0.9) was worse than experiment 1 (0.8): its change was undone before the next
    assert len(edits) == 4 and (edits[2]["old"], edits[2]["new"]) == (edits[1]["new"], edits[1]["old"])
    assert edits[0]["new"] in files["config.py"] and edits[3]["new"] in files["config.py"]
    assert edits[1]["new"] not in files["config.py"]


def test_roles_dispatch_to_registered_handlers() -> None:
    def summariser(ctx: PolicyContext) -> PolicyReply:
        return ctx.finish(f"{ctx.role} saw {len(ctx.history)} tool calls and tools {sorted(ctx.tool_names)}")

    register_role_policy("test-summariser", summariser)
    try:
        with pytest.raises(ValueError, match="already registered"):
            register_role_policy("test-summariser", lambda ctx: PolicyReply("x"))
        client = make_client("offline")
        c = client.complete([{"role": "system", "content": "ROLE: test-summariser\nSummarise."}], tools=TOOLS)
        assert c.content.startswith(BANNER) and "test-summariser saw 0 tool calls" in c.content
        assert c.tool_calls[0].name == "finish"
        # a role without handler and without experiment tools just finishes, honestly
        plain = client.complete([{"role": "system", "content": "ROLE: judge"}, {"role": "user", "content": "grade"}])
        assert plain.tool_calls == [] and "No handler for role judge" in plain.content and BANNER in plain.content
    finally:
        _POLICIES.pop("test-summariser", None)


def test_prompt_and_result_parsing() -> None:
    assert editable_files("x\nEditable files: train.py, `src/model.py`, configs/*.yaml\n") == ["train.py", "src/model.py"]
    assert step_budget("Step budget: 7 experiments") == 7 and step_budget("steps remaining = 2") == 2 and step_budget("no budget") is None
    assert experiment_outcome('{"success": false, "metric": null, "error": "exit 1"}') == (False, None)
    assert experiment_outcome("Error: experiment timed out") == (False, None)
    assert experiment_outcome("step 3: success=True metric=0.25") == (True, 0.25)
    assert strip_line_numbers("     1\tA = 1\n     2\t\n     3\tB = 2\n") == "A = 1\n\nB = 2\n"
    assert strip_line_numbers("A = 1\n2: not numbered\n") == "A = 1\n2: not numbered\n"

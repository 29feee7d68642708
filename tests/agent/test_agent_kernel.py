"""One kernel under every agent: the tool table as `bench agents` prints it, the shared
shell tool, the loop's stop reasons, and a grid of every agent whose result files all
carry an enum stop reason."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import BaseModel

from aiscientist.agent.loop import LoopSpec, run_loop
from aiscientist.agent.outcome import Outcome, StopReason
from aiscientist.agent.shell import shell_tool
from aiscientist.agent.tools import Tool, Toolbox, finish_tool
from aiscientist.llm import ContextOverflow, ModelError
from aiscientist.llm.types import Completion, ToolCall
from aiscientist.util import notices
from bench.agents import agent_names

ROOT = Path(__file__).resolve().parents[2]
TASK = ROOT / "tests/fixtures/tiny/task.yaml"
GRID = [
    "aide",
    "ai-scientist",
    "linear",
    "basic",
    "iterative",
    "hpsearch",
    "external",
    "aiscientist",
    "aiscientist-nobus",
    "aiscientist-flat",
]


def cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "aiscientist", *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout
    )


def test_bench_agents_lists_every_agent_and_the_shared_shell():
    done = cli("bench", "agents", "--json")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    tools = {(r["agent"], r["role"]): r["tools"] for r in rows}
    kernel = subprocess.run(  # the kernel names no agent: each registers in its own module
        [sys.executable, "-c", "from aiscientist.agent.toolsets import AGENTS; print(AGENTS.names())"],
        capture_output=True,
        text=True,
    )
    assert kernel.stdout.strip() == "[]", kernel.stderr
    assert list(dict.fromkeys(r["agent"] for r in rows)) == agent_names()
    assert "bash" in tools[("aiscientist", "implementation")] and "bash" in tools[("basic", "basic")]
    assert "bash" in tools[("aiscientist", "helper")] and "bash" in tools[("aiscientist-flat", "flat")]
    assert "bash" not in tools[("aiscientist", "orchestrator")] and "bash" not in tools[("linear", "linear")]
    text = cli("bench", "agents")
    assert (
        "| aiscientist | implementation | read_file, list_files, search_files, write_file, edit_file, bash, finish |"
        in text.stdout
    )


def test_the_shell_tool_is_one_definition():
    basic, implementation = shell_tool(None, "agent"), shell_tool(None, "implementation")
    assert basic.schema() == implementation.schema() and basic.handler.__code__ is implementation.handler.__code__


def scripted(*replies: list[ToolCall]):
    queue = list(replies)

    def complete(messages, tools):
        calls = queue.pop(0) if queue else []
        return Completion(
            content="",
            tool_calls=calls,
            message={"role": "assistant", "content": "", "tool_calls": [c.model_dump() for c in calls]},
        )

    return complete


def test_loop_stop_reasons():
    box = Toolbox().add(finish_tool())
    finish = ToolCall(id="f", name="finish", arguments={"summary": "done it"})
    outcome = run_loop(scripted([], [finish]), box, [{}, {}], LoopSpec(max_turns=5, nudge=lambda: "go on"))
    assert (outcome.stop, outcome.summary, outcome.turns) == (StopReason.FINISHED, "done it", 2)
    assert (
        run_loop(scripted(), box, [{}, {}], LoopSpec(max_turns=3, nudge=lambda: "go on")).stop is StopReason.TURN_LIMIT
    )
    bad = ToolCall(id="b", name="finish", arguments={})  # no summary: a tool error, not the end
    assert (
        run_loop(scripted([bad]), box, [{}, {}], LoopSpec(max_turns=2, nudge=lambda: "go on")).stop
        is StopReason.TURN_LIMIT
    )
    assert (
        run_loop(scripted(), box, [{}, {}], LoopSpec(max_turns=3)).stop is StopReason.FINISHED
    )  # no nudge: a reply without a tool call ends it
    spent = run_loop(
        scripted([]), box, [{}, {}], LoopSpec(max_turns=3, should_stop=lambda: Outcome(stop=StopReason.STEP_BUDGET))
    )
    assert (spent.stop, spent.turns) == (StopReason.STEP_BUDGET, 0)

    def failing(messages, tools):
        raise ModelError("HTTP 400: refused")

    failed = run_loop(failing, box, [{}, {}], LoopSpec(max_turns=3))
    assert (failed.stop, failed.detail) == (StopReason.MODEL_ERROR, "HTTP 400: refused")


def test_the_same_failing_call_is_named_as_a_repeat_and_then_ends_the_loop():
    """The 1.5B prioritization specialist sent the same refused write_file ten times."""
    box = Toolbox().add(finish_tool())
    bad = ToolCall(id="b", name="finish", arguments={})  # no summary: the same tool error every time
    messages: list = [{}, {}]
    outcome = run_loop(scripted(*[[bad]] * 8), box, messages, LoopSpec(max_turns=8, nudge=lambda: "go on"))
    assert (outcome.stop, outcome.turns) == (StopReason.TURN_LIMIT, 4)
    assert outcome.detail.startswith("the same finish call failed 4 times: Error: bad arguments")
    results = [m["content"] for m in messages if m.get("role") == "tool"]
    assert "has failed" not in results[0] and "has failed 2 times" in results[1]

    def read(args: ReadArgs) -> str:
        return f"line {args.n}"

    reads = Toolbox().add(Tool("read", "read a line", ReadArgs, read))
    again = [ToolCall(id="r", name="read", arguments={"n": 1})]
    outcome = run_loop(scripted(*[again] * 8), reads, [{}, {}], LoopSpec(max_turns=8, nudge=lambda: "go on"))
    assert outcome.detail.startswith("the same read call given this same result 4 times: line 1")
    # the 1.5B implementation specialist read a file and wrote the same text back, in turn, 12 times
    turn = [[ToolCall(id="r", name="read", arguments={"n": 1})], [ToolCall(id="r", name="read", arguments={"n": 2})]]
    outcome = run_loop(scripted(*turn * 6), reads, [{}, {}], LoopSpec(max_turns=12, nudge=lambda: "go on"))
    assert (outcome.stop, outcome.turns) == (StopReason.TURN_LIMIT, 7)
    assert outcome.detail.startswith("the same read call given this same result 4 times: line 1")


def test_a_reader_that_answers_in_prose_has_answered():
    """The 1.5B readers wrote their notes as prose, then re-read files until their turn limit."""
    box = Toolbox().add(finish_tool())
    replies = ["Let me look.", "## Notes\n- evaluate.py:12 computes accuracy over 1000 episodes"]

    def complete(messages, tools):
        text = replies.pop(0)
        return Completion(content=text, tool_calls=[], message={"role": "assistant", "content": text})

    spec = LoopSpec(max_turns=5, nudge=lambda: "go on", prose_finish_chars=40)
    outcome = run_loop(complete, box, [{}, {}], spec)
    assert (outcome.stop, outcome.turns) == (StopReason.FINISHED, 2) and outcome.summary.startswith("## Notes")


class ReadArgs(BaseModel):
    n: int


def test_an_opening_call_is_made_for_the_model_before_its_first_turn():
    """Experimentation's run is made for it: the model's first request already holds the call and its result."""
    ran: list[int] = []
    read = Tool("read", "Read part n.", ReadArgs, lambda a: ran.append(a.n) or f"part {a.n}")
    box = Toolbox().add(read, finish_tool())
    finish = ToolCall(id="f", name="finish", arguments={"summary": "read part 3"})
    seen: list[list[dict]] = []
    complete = scripted([finish])
    spec = LoopSpec(max_turns=3, opening=ToolCall(id="o", name="read", arguments={"n": 3}))
    outcome = run_loop(lambda m, t: seen.append(list(m)) or complete(m, t), box, [{}, {}], spec)
    assert (outcome.stop, outcome.turns, ran) == (StopReason.FINISHED, 1, [3])
    [first] = seen
    assert first[2]["tool_calls"][0]["function"] == {"name": "read", "arguments": '{"n": 3}'}
    assert first[3] == {"role": "tool", "tool_call_id": "o", "name": "read", "content": "part 3"}
    failing = ToolCall(id="o", name="read", arguments={"n": "three"})  # refused like a model's call: its turn
    outcome = run_loop(scripted([finish]), box, messages := [{}, {}], LoopSpec(max_turns=3, opening=failing))
    assert outcome.stop is StopReason.FINISHED and messages[3]["content"].startswith("Error") and ran == [3]


def test_a_conversation_that_outgrows_the_window_forgets_its_oldest_turns():
    """A stand-in model whose window holds 3,000 characters (one token each) reads
    1,000-character results until it has read eight, then finishes."""
    box = Toolbox().add(Tool("read", "Read part n.", ReadArgs, lambda a: f"part {a.n}: " + "x" * 1000), finish_tool())
    seen: list[list[dict]] = []

    def complete(messages, tools):
        size = sum(len(str(m.get("content") or "")) for m in messages)
        if size > 3000:
            raise ContextOverflow("too large", limit=3000, size=size)
        seen.append(messages)
        done = len(seen) > 8
        call = ToolCall(
            id=f"c{len(seen)}",
            name="finish" if done else "read",
            arguments={"summary": "read them"} if done else {"n": len(seen)},
        )
        return Completion(
            content="",
            tool_calls=[call],
            message={"role": "assistant", "content": "", "tool_calls": [call.model_dump()]},
        )

    told: list[str] = []
    head = [{"role": "system", "content": "ROLE: reader"}, {"role": "user", "content": "Read every part."}]
    with notices.listening(lambda kind, text: told.append(kind)):
        outcome = run_loop(complete, box, list(head), LoopSpec(max_turns=20))
    assert outcome.stop is StopReason.FINISHED and outcome.summary == "read them"
    assert told and set(told) == {"context"}
    for messages in seen:  # instructions always kept; every tool result still follows its call
        assert messages[:2] == head and all(m["role"] == "assistant" for m in messages[2:3])
        calls = {c["id"] for m in messages if m["role"] == "assistant" for c in m["tool_calls"]}
        assert {m["tool_call_id"] for m in messages if m["role"] == "tool"} <= calls


@pytest.mark.slow
def test_every_agent_runs_and_records_an_enum_stop_reason(tmp_path: Path):
    out = tmp_path / "grid"
    done = cli(
        "bench",
        "run",
        "--agents",
        ",".join(GRID),
        "--tasks",
        str(TASK),
        "--rounds",
        "1",
        "--steps",
        "2",
        "--model",
        "offline",
        "--out",
        str(out),
        "--workers",
        "2",
        "--no-progress",
        "--option",
        "external.command=run_experiment one; run_experiment two",
        timeout=900,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    values = {r.value for r in StopReason}
    for agent in GRID:
        folder = out / "runs" / "tiny-quadratic" / agent / "round_1"
        summary, result = (
            json.loads((folder / "result.json").read_text()),
            json.loads((folder / "ws" / "result.json").read_text()),
        )
        assert (
            summary["result"]["stop_reason"] in values and result["stop_reason"] == summary["result"]["stop_reason"]
        ), agent
        assert summary["result"]["steps_completed"] == 2 and summary["error"] is None, (
            agent,
            summary["result"]["stop_reason"],
            summary["result"]["stop_detail"],
        )
    assert (
        "| basic | basic | bash, read_file_chunk, search_file, run_experiment, submit |"
        in (out / "report" / "tools.md").read_text()
    )

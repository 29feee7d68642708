"""The Tier-0 LangGraph: one node, `turn`, that runs the calls the last decision made
(`act`) and then makes the next decision (`decide`: one model call on thin state).

The same graph runs the flat ablation (`hierarchy: false`): one agent whose tools are
the file tools and `run_experiment`, with one growing conversation. Every turn's output
is checkpointed (SQLite) before the next turn runs its calls, so a killed run resumes
at the last finished turn; the effects of calls that finished inside an interrupted
turn are replayed from the journal. One node rather than two halves LangGraph's work
and checkpoint writes per decision.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from langgraph.graph import END, START, StateGraph
from pydantic import ValidationError

from aiscientist.agent.context import RunContext
from aiscientist.agent.journal import journaled_call
from aiscientist.agent.loop import terminal
from aiscientist.agent.memory import bound_turns, forget_turns
from aiscientist.agent.outcome import StopReason
from aiscientist.agent.toolbox import build_toolbox
from aiscientist.agent.tools import clip, submit_tool, tool_schema
from aiscientist.agent.toolsets import toolset
from aiscientist.config import RunConfig
from aiscientist.llm import BudgetExhausted, Completion, ContextOverflow, ModelError, ModelUnavailable
from aiscientist.llm.types import ToolCall
from aiscientist.orchestrator.prompts import NUDGE, flat_messages, orchestrator_messages
from aiscientist.orchestrator.state import OrchestratorState, bound_summaries, stage_of, stop
from aiscientist.specialists import SPECIALISTS, SpecialistResult
from aiscientist.specialists.experimentation import experiment_tool
from aiscientist.util import notices

TURN = "turn"  # the graph's one node
FINAL_ONLY = "Error: not run: the step budget is spent; only submit(reason) is possible now"


class Agent:
    """The tools and prompt of the deciding agent: orchestrator, or the flat agent."""

    def __init__(self, ctx: RunContext):
        self.ctx = ctx
        self.flat = not ctx.config.hierarchy
        self.role = "flat" if self.flat else "orchestrator"
        ctx.ws.set_active(self.role)
        scope = ctx.ws.scope(self.role)
        self.box = build_toolbox(ctx, self.role, extra=lambda box: [experiment_tool(ctx, scope, box), submit_tool()])
        offered = toolset(ctx.agent, self.role)
        specialists = [
            tool_schema(name, description, args)
            for name, (args, _, description) in SPECIALISTS.items()
            if name in offered
        ]
        self.schemas = specialists + self.box.schemas()  # the same at every decision: a prompt prefix that stays

    def messages(self, state: OrchestratorState) -> list[dict[str, Any]]:
        return flat_messages(self.ctx, state) if self.flat else orchestrator_messages(self.ctx, state)

    @property
    def grows(self) -> bool:
        """Whether the conversation itself carries results (no thin control)."""
        return self.flat or not self.ctx.ws.file_bus

    @property
    def cap(self) -> int | None:
        """The characters of recent turns a growing conversation keeps (None: a count of turns)."""
        return self.ctx.config.orchestrator.no_bus_context_chars if self.grows else None

    def complete(
        self, view: OrchestratorState, tools: list[dict[str, Any]]
    ) -> tuple[Completion, list[list[dict[str, Any]]]]:
        """The decision and the turns it saw. A growing conversation that no longer fits
        the model's context window forgets its oldest turns (`agent.memory.forget_turns`) until it does."""
        turns = view.get("turns", [])
        while True:
            try:
                return self.ctx.complete(self.role, self.messages({**view, "turns": turns}), tools), turns
            except ContextOverflow as err:
                if not self.grows or not turns:
                    raise
                kept = forget_turns(turns, err)
                self.ctx.ws.events.record(
                    self.role,
                    "orchestrator.context_trimmed",
                    {
                        "forgot_turns": len(turns) - len(kept),
                        "kept_turns": len(kept),
                        "tokens": err.size,
                        "limit": err.limit,
                    },
                )
                turns = kept


def build_graph(ctx: RunContext, checkpointer: Any):
    agent = Agent(ctx)
    config = ctx.config

    def decide(state: OrchestratorState) -> dict[str, Any]:
        if ctx.out_of_time():
            return stop(StopReason.WALL_TIME, "wall-time budget used")
        steps_done = ctx.steps_done()
        final = steps_done >= ctx.steps
        if final and state.get("final_call"):
            return stop(StopReason.STEP_BUDGET, "step budget used")
        limit = config.orchestrator.max_decisions_per_step * ctx.steps + 10
        if state.get("decision", 0) >= limit:
            return stop(StopReason.DECISION_LIMIT, f"{limit} decisions without spending the step budget")
        stage = (
            ("submit" if final else "research")
            if agent.flat
            else stage_of(state.get("calls", {}), steps_done, ctx.steps)
        )
        view = {**state, "final_call": final, "stage": stage}
        try:
            completion, turns = agent.complete(view, agent.schemas)
        except BudgetExhausted as err:
            return stop(StopReason.MODEL_BUDGET, f"model budget exhausted ({err.limit})")
        except ModelUnavailable as err:
            error = {"error": str(err)[:1000], "unavailable": True}
            ctx.ws.events.record(agent.role, "orchestrator.model_error", error)
            return stop(StopReason.MODEL_UNAVAILABLE, clip(str(err), 600))
        except ModelError as err:
            errors = state.get("model_errors", 0) + 1
            ctx.ws.events.record(
                agent.role, "orchestrator.model_error", {"error": str(err)[:1000], "consecutive": errors}
            )
            if errors >= config.orchestrator.model_error_limit:
                return {
                    "model_errors": errors,
                    **stop(StopReason.MODEL_ERROR, f"{errors} in a row; last: {clip(str(err), 600)}"),
                }
            return {"model_errors": errors, "pending": None, "pending_calls": [], "to_act": True}
        decision = state.get("decision", 0) + 1
        ctx.ws.events.record(
            agent.role,
            "orchestrator.decision",
            {
                "decision": decision,
                "stage": view["stage"],
                "steps_done": steps_done,
                "prompt_tokens": completion.prompt_tokens,
                "tools": [c.name for c in completion.tool_calls],
            },
        )
        silent = 0 if completion.tool_calls else state.get("no_tool_calls", 0) + 1
        if silent >= config.orchestrator.no_tool_call_limit:
            why = f"the model answered {silent} times in a row without calling a tool (text only, no call to read)"
            return {"decision": decision, "no_tool_calls": silent, **stop(StopReason.AGENT_FAILED, why)}
        return {
            "decision": decision,
            "no_tool_calls": silent,
            "stage": view["stage"],
            "final_call": final,
            "model_errors": 0,
            "pending": completion.message,
            "pending_calls": [c.model_dump() for c in completion.tool_calls],
            "to_act": True,
            "turns": turns,
        }

    def act(state: OrchestratorState) -> dict[str, Any]:
        decision = state["decision"]
        tally = Tally.of(state)
        turn: list[dict[str, Any]] = [state["pending"]] if state.get("pending") else []
        pending = [ToolCall.model_validate(c) for c in state.get("pending_calls", [])]
        if not pending:
            turn.append({"role": "user", "content": NUDGE})
        stopped: dict[str, str] = {}
        for i, call in enumerate(pending):
            if state.get("final_call") and call.name != "submit":
                turn.append({"role": "tool", "tool_call_id": call.id, "content": FINAL_ONLY})
                continue
            try:
                content, stopped = execute(call, f"d{decision}.c{i}", decision, tally)
            except BudgetExhausted as err:
                content, stopped = (
                    f"Error: {err}",
                    stop(StopReason.MODEL_BUDGET, f"model budget exhausted ({err.limit})"),
                )
            except ModelUnavailable as err:  # a specialist's model call ran out of patience
                content, stopped = f"Error: {err}", stop(StopReason.MODEL_UNAVAILABLE, clip(str(err), 600))
            if not agent.grows:
                content = clip(content, config.orchestrator.tool_result_chars)
            turn.append({"role": "tool", "tool_call_id": call.id, "content": content})
            if stopped:
                break
        # every tool call needs an answer, even when the decision stopped early
        answered = {m.get("tool_call_id") for m in turn if m.get("role") == "tool"}
        turn += [
            {"role": "tool", "tool_call_id": c.id, "content": "not run: the run stopped"}
            for c in pending
            if c.id not in answered
        ]
        return {
            **tally.update(config),
            "turns": bound_turns([*state.get("turns", []), turn], config.orchestrator.recent_turns, agent.cap),
            "pending": None,
            "pending_calls": [],
            "to_act": False,
            **(stopped or {"stop_reason": state.get("stop_reason", ""), "stop_detail": state.get("stop_detail", "")}),
        }

    def execute(call: ToolCall, key: str, decision: int, tally: Tally) -> tuple[str, dict[str, str]]:
        """(tool result, the stop fields or {}) for one call of the deciding agent."""
        if call.name in SPECIALISTS and not agent.flat and call.error is None:
            result = _run_specialist(ctx, call, key)
            if isinstance(result, str):  # arguments did not validate
                return result, {}
            tally.count(call, result, decision, config)
            return result.for_orchestrator(ctx.ws.file_bus, config.orchestrator.tool_result_chars), {}
        content = journaled_call(ctx.journal, ctx.ws.paths.logs, agent.box, call, key)
        if terminal(agent.box, call) is StopReason.SUBMITTED:
            reason = str(call.arguments.get("reason", ""))
            ctx.ws.events.record(agent.role, "orchestrator.submit", {"decision": decision, "reason": reason[:1000]})
            return content, stop(StopReason.SUBMITTED, clip(reason, 300))
        if call.name == "run_experiment":
            tally.last_outcome = f"run_experiment (decision {decision}): {_verdict(content)}"
        return content, {}

    def turn(state: OrchestratorState) -> dict[str, Any]:
        acted = act(state) if state.get("to_act") else {}
        if acted.get("stop_reason"):
            return _changed(state, acted)
        return _changed(state, {**acted, **decide({**state, **acted})})

    graph = StateGraph(OrchestratorState)
    graph.add_node(TURN, turn)
    graph.add_edge(START, TURN)
    graph.add_conditional_edges(TURN, lambda state: END if state.get("stop_reason") else TURN, [TURN, END])
    return graph.compile(checkpointer=checkpointer)


def _changed(state: OrchestratorState, update: dict[str, Any]) -> dict[str, Any]:
    """The keys `update` changes: each written key is a row in every checkpoint's writes."""
    return {key: value for key, value in update.items() if key not in state or state[key] != value}


def _run_specialist(ctx: RunContext, call: ToolCall, key: str) -> SpecialistResult | str:
    """A specialist call, or the journaled result of one that finished before a resume."""
    args_model, run, _ = SPECIALISTS[call.name]
    try:
        args = args_model.model_validate(call.arguments)
    except ValidationError as err:
        first = err.errors()[0]
        return f"Error: bad arguments for {call.name}: {'.'.join(map(str, first['loc']))}: {first['msg']}"
    recorded = ctx.journal.get(key)
    if recorded is not None and recorded.get("role") == call.name:  # the role is the specialist's name
        return SpecialistResult.model_validate(recorded)
    ctx.ws.events.record(
        "orchestrator",
        "specialist.start",
        {"key": key, "specialist": call.name, "arguments": {k: clip(str(v), 300) for k, v in call.arguments.items()}},
    )
    ctx.ws.set_active(call.name)  # file changes seen by the watcher are attributed to it
    try:
        result = run(ctx, key, args)
    except ModelUnavailable as err:
        ctx.ws.events.record(
            "orchestrator",
            "specialist.end",
            {"key": key, "specialist": call.name, "ok": False, "error": clip(str(err), 1000)},
        )
        raise
    finally:
        ctx.ws.set_active("orchestrator")
    ctx.ws.events.record(
        "orchestrator",
        "specialist.end",
        {
            "key": key,
            "specialist": call.name,
            "ok": result.ok,
            "turns": result.turns,
            "artifacts": result.artifacts,
            "summary": clip(result.summary, 500),
        },
    )
    if not result.ok:
        notices.notify("failure", f"{call.name} stopped: {clip(result.summary, 300)}")
    ctx.journal.record(key, result.model_dump())
    return result


def _verdict(text: str) -> str:
    """The `verdict:` line of an experiment outcome, or the first line of an error."""
    found = re.findall(r"^verdict: (.*)$", text, re.M)
    return found[-1] if found else (text.strip().splitlines() or ["no experiment ran"])[0][:200]


@dataclass
class Tally:
    """The counters, summaries and last outcome an `act` step updates."""

    calls: dict[str, int]
    summaries: list[dict[str, Any]]
    since_impl: int
    since_exp: int
    last_outcome: str

    @classmethod
    def of(cls, state: OrchestratorState) -> Tally:
        return cls(
            {**state.get("calls", {})},
            list(state.get("summaries", [])),
            state.get("since_impl", 0),
            state.get("since_exp", 0),
            state.get("last_outcome", ""),
        )

    def count(self, call: ToolCall, result: SpecialistResult, decision: int, config: RunConfig) -> None:
        self.calls[call.name] = self.calls.get(call.name, 0) + 1
        if call.name == "implementation":
            mode = str(call.arguments.get("mode"))
            self.calls[mode] = self.calls.get(mode, 0) + 1
            self.since_impl, self.since_exp = 0, self.since_exp + 1
        elif call.name == "experimentation":
            self.since_impl, self.since_exp = self.since_impl + 1, 0
        outcome = _verdict(result.full_output) if call.name == "experimentation" else ("ok" if result.ok else "not ok")
        self.last_outcome = f"{call.name} (decision {decision}): {outcome}"
        self.summaries.append(
            {
                "decision": decision,
                "tool": call.name,
                "ok": result.ok,
                "text": clip(result.summary, config.orchestrator.summary_chars),
                "call_id": call.id,
            }
        )

    def update(self, config: RunConfig) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "summaries": bound_summaries(self.summaries, config),
            "since_impl": self.since_impl,
            "since_exp": self.since_exp,
            "last_outcome": self.last_outcome,
        }

"""The Tier-0 agent, `Orchestrator`: a LangGraph of one node, `turn` (`Orchestrator.step`), that
runs the calls the last decision made (`act`, through the kernel's turn handler, as every agent's
calls are answered) and then makes the next decision (`decide`: one model call on thin state).

The same graph runs the flat ablation (`hierarchy: false`): one agent whose tools are
the file tools and `run_experiment`, with one growing conversation. Every turn's output
is checkpointed (SQLite) before the next turn runs its calls, so a killed run resumes
at the last finished turn; the effects of calls that finished inside an interrupted
turn are replayed from the journal. One node rather than two halves LangGraph's work
and checkpoint writes per decision.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from langgraph.graph import END, START, StateGraph
from pydantic import ValidationError

from aiscientist.agent.context import RunContext
from aiscientist.agent.journal import journaled_call
from aiscientist.agent.memory import bound_turns, forget_turns
from aiscientist.agent.outcome import StopReason, StopRun
from aiscientist.agent.toolbox import build_toolbox
from aiscientist.agent.tools import clip, submit_tool, tool_schema
from aiscientist.agent.toolsets import toolset
from aiscientist.agent.turn import TurnHandler
from aiscientist.config import RunConfig
from aiscientist.llm import BudgetExhausted, Completion, ContextOverflow, ModelError, ModelUnavailable
from aiscientist.llm.types import ToolCall
from aiscientist.orchestrator.prompts import NUDGE, flat_messages, orchestrator_messages
from aiscientist.orchestrator.state import (
    OrchestratorState,
    bound_summaries,
    forgotten_summaries,
    initial_state,
    stage_of,
    stop,
)
from aiscientist.specialists import SPECIALISTS, SpecialistResult
from aiscientist.specialists.experimentation import experiment_tool
from aiscientist.util import notices
from aiscientist.workspace import guidance

TURN = "turn"  # the graph's one node
THREAD = {"configurable": {"thread_id": "orchestrator"}, "recursion_limit": 1_000_000}
FINAL_ONLY = "Error: not run: the step budget is spent; only submit(reason) is possible now"


class Orchestrator:
    """The deciding agent of Tier 0 (the orchestrator, or the flat agent) and the graph it runs
    in. `run` drives the graph, whose one node is `step`: act on the last decision (its calls go
    through the kernel's turn handler to `execute`), then `decide` the next (`query`: one model
    call on thin state)."""

    def __init__(self, ctx: RunContext, checkpointer: Any):
        self.ctx, self.config = ctx, ctx.config
        self.flat = not ctx.config.hierarchy
        self.role = "flat" if self.flat else "orchestrator"
        ctx.ws.set_active(self.role)
        scope = ctx.ws.scope(self.role)
        self.box = build_toolbox(ctx, self.role, extra=lambda box: [experiment_tool(ctx, scope, box), submit_tool()])
        if not self.grows:  # its results are kept this short: files are shown in pages that fit
            self.box.result_chars = ctx.config.orchestrator.tool_result_chars
        offered = toolset(ctx.agent, self.role)
        schemas = {schema["function"]["name"]: schema for schema in self.box.schemas()}
        schemas |= {name: tool_schema(name, description, args) for name, (args, _, description) in SPECIALISTS.items()}
        # in the registered order, the same at every decision: a prompt prefix that stays
        self.schemas = [schemas[name] for name in offered if name in schemas]
        # the kernel's: refusals, repeats, the journal; a call stuck on one result is refused, not the run's end
        # (a 1,200 s run of the 1.5B model ended at 480 s on its fourth identical implementation call)
        self.turns = TurnHandler(self.box, end_on_repeat=False)
        graph = StateGraph(OrchestratorState)
        graph.add_node(TURN, self.step)
        graph.add_edge(START, TURN)
        graph.add_conditional_edges(TURN, lambda state: END if state.get("stop_reason") else TURN, [TURN, END])
        self.graph = graph.compile(checkpointer=checkpointer)

    def run(self, reopen: bool, on_state: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
        """Drive the graph from its last checkpoint (or the start) to a stop; the final state.
        `reopen`: a run that stopped may go on (a larger step budget, a stop by a failing model):
        it restarts at a decision with the model error counter reset."""
        checkpoint = self.graph.get_state(THREAD)
        if checkpoint.values and not checkpoint.next and reopen:
            reset = {"stop_reason": "", "stop_detail": "", "final_call": False, "model_errors": 0, "to_act": False}
            self.graph.update_state(THREAD, reset, as_node=TURN)
        state: dict[str, Any] = {}
        # durability "sync": a decision's tool calls are on disk before any of them runs
        start = None if checkpoint.values else initial_state()
        for state in self.graph.stream(start, THREAD, stream_mode="values", durability="sync"):
            if on_state is not None:
                on_state(state)
        return state if state.get("stop_reason") else self.graph.get_state(THREAD).values

    def step(self, state: OrchestratorState) -> dict[str, Any]:
        """The graph's one node: run the last decision's calls, then make the next decision."""
        acted = self.act(state) if state.get("to_act") else {}
        if acted.get("stop_reason"):
            return _changed(state, acted)
        return _changed(state, {**acted, **self.decide({**state, **acted})})

    def decide(self, state: OrchestratorState) -> dict[str, Any]:
        """The next decision (its calls wait in `pending_calls`), or the stop fields."""
        ctx, config = self.ctx, self.config
        if ctx.out_of_time():
            return stop(StopReason.WALL_TIME, "wall-time budget used")
        steps_done = ctx.steps_done()
        final = steps_done >= ctx.steps
        if final and state.get("final_call"):
            return stop(StopReason.STEP_BUDGET, "step budget used")
        limit = config.orchestrator.max_decisions_per_step * ctx.steps + 10
        if state.get("decision", 0) >= limit:
            return stop(StopReason.DECISION_LIMIT, f"{limit} decisions without spending the step budget")
        if self.flat:
            stage = "submit" if final else "research"
        else:
            stage = stage_of(state.get("calls", {}), steps_done, ctx.steps)
        notes = ctx.guidance.pending(self.role)  # shown in the status until a decision acts on them
        view = {**state, "final_call": final, "stage": stage, "guidance": [vars(n) for n in notes]}
        try:
            completion, turns = self.query(view)
        except BudgetExhausted as err:
            return stop(err.stop, err.stop_detail)
        except ModelUnavailable as err:
            error = {"error": str(err)[:1000], "unavailable": True}
            ctx.ws.events.record(self.role, "orchestrator.model_error", error)
            return stop(StopReason.MODEL_UNAVAILABLE, clip(str(err), 600))
        except ModelError as err:
            errors = state.get("model_errors", 0) + 1
            error = {"error": str(err)[:1000], "consecutive": errors}
            ctx.ws.events.record(self.role, "orchestrator.model_error", error)
            if errors >= config.orchestrator.model_error_limit:
                why = f"{errors} in a row; last: {clip(str(err), 600)}"
                return {"model_errors": errors, **stop(StopReason.MODEL_ERROR, why)}
            return {"model_errors": errors, "pending": None, "pending_calls": [], "to_act": True}
        decision = state.get("decision", 0) + 1
        ctx.ws.events.record(
            self.role,
            "orchestrator.decision",
            {
                "decision": decision,
                "stage": stage,
                "steps_done": steps_done,
                "prompt_tokens": completion.prompt_tokens,
                "tools": [c.name for c in completion.tool_calls],
            },
        )
        if completion.tool_calls:
            tools = [c.name for c in completion.tool_calls]
            ctx.guidance.mark(ctx.ws.events, self.role, guidance.ACK, notes, decision=decision, tools=tools)
        silent = 0 if completion.tool_calls else state.get("no_tool_calls", 0) + 1
        if silent >= config.orchestrator.no_tool_call_limit:
            why = f"the model answered {silent} times in a row without calling a tool (text only, no call to read)"
            return {"decision": decision, "no_tool_calls": silent, **stop(StopReason.AGENT_FAILED, why)}
        return {
            "decision": decision,
            "no_tool_calls": silent,
            "stage": stage,
            "final_call": final,
            "model_errors": 0,
            "pending": completion.message,
            "pending_calls": [c.model_dump() for c in completion.tool_calls],
            "to_act": True,
            "turns": turns,
        }

    def query(self, view: OrchestratorState) -> tuple[Completion, list[list[dict[str, Any]]]]:
        """The decision and the turns it saw. A growing conversation that no longer fits
        the model's context window forgets its oldest turns (`agent.memory.forget_turns`) until it does."""
        turns = view.get("turns", [])
        while True:
            try:
                return self.ctx.complete(self.role, self.messages({**view, "turns": turns}), self.schemas, False), turns
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

    def act(self, state: OrchestratorState) -> dict[str, Any]:
        """Answer the last decision's calls through the kernel's turn handler (a nudge when it
        made none); keep the turn among the recent ones; the stop fields when a call ended the run."""
        decision, config = state["decision"], self.config
        tally = Tally.of(state)
        turn: list[dict[str, Any]] = [state["pending"]] if state.get("pending") else []
        pending = [ToolCall.model_validate(c) for c in state.get("pending_calls", [])]
        if not pending:
            turn.append({"role": "user", "content": NUDGE})
        answers, ended = self.turns.answer(
            pending,
            f"d{decision}.c",
            lambda call, key: self.execute(call, key, decision, tally),
            _final_only if state.get("final_call") else None,
        )
        stopped: dict[str, str] = {}
        if ended is not None and ended.stop is StopReason.SUBMITTED:
            event = {"decision": decision, "reason": ended.summary[:1000]}
            self.ctx.ws.events.record(self.role, "orchestrator.submit", event)
            stopped = stop(StopReason.SUBMITTED, clip(ended.summary, 300))
        elif ended is not None:
            stopped = stop(ended.stop, ended.detail)
        orch = config.orchestrator
        cap = orch.no_bus_context_chars if self.grows else None
        counted, turns = tally.update(config), [*state.get("turns", []), turn + answers]
        kept = bound_turns(turns, orch.recent_turns, cap, orch.window_growth)
        if len(kept) < len(turns):  # what the dropped turns said stays at the prompt's head until the next drop
            counted["forgotten"] = forgotten_summaries(counted["summaries"], kept)
        return {
            **counted,
            "turns": kept,
            "pending": None,
            "pending_calls": [],
            "to_act": False,
            **(stopped or {"stop_reason": state.get("stop_reason", ""), "stop_detail": state.get("stop_detail", "")}),
        }

    def execute(self, call: ToolCall, key: str, decision: int, tally: Tally) -> str:
        """One call of the deciding agent: a specialist or a tool (journaled). The model budget
        or a model out of patience inside it ends the run (StopRun)."""
        try:
            if call.name in SPECIALISTS and not self.flat and call.error is None:
                result = _run_specialist(self.ctx, call, key)
                if isinstance(result, SpecialistResult):  # else: arguments that did not validate, said
                    tally.count(call, result, decision, self.config)
                    result = result.for_orchestrator(self.ctx.ws.file_bus, self.config.orchestrator.tool_result_chars)
                content = result
            else:
                content = journaled_call(self.ctx.journal, self.ctx.ws.paths.logs, self.box, call, key)
        except BudgetExhausted as err:
            raise StopRun(err.stop, err.stop_detail) from err
        except ModelUnavailable as err:  # a specialist's model call ran out of patience
            raise StopRun(StopReason.MODEL_UNAVAILABLE, clip(str(err), 600)) from err
        if call.name == "run_experiment":
            tally.last_outcome = f"run_experiment (decision {decision}): {_verdict(content)}"
        return content if self.grows else clip(content, self.config.orchestrator.tool_result_chars)

    def messages(self, state: OrchestratorState) -> list[dict[str, Any]]:
        return flat_messages(self.ctx, state) if self.flat else orchestrator_messages(self.ctx, state)

    @property
    def grows(self) -> bool:
        """Whether the conversation itself carries results (no thin control)."""
        return self.flat or not self.ctx.ws.file_bus


def _final_only(call: ToolCall, failed: bool) -> str | None:
    """The refusal of every call but submit once the step budget is spent."""
    return None if call.name == "submit" else FINAL_ONLY


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

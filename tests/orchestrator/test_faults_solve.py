"""Real `solve` runs through litellm against a loopback OpenAI-compatible server that
injects faults: rate limits, 5xx, hangs, refused connections, malformed and empty
replies, context overflow, a failing sub-agent. Answers that are not faults come from
the project's offline policy speaking over HTTP (`policy_brain`).

Speed: these tests shorten the model settings in their own models file (patience_s of
a few seconds, backoff_base_s 0.1, timeout_s 2) so a run takes seconds; the last test
at the end sits out an outage with the default settings.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from aiscientist.llm.config import LLMConfig
from tests.fixtures.llm.fake_openai import FakeOpenAI, error, outage, overflow, policy_brain, reply, stall
from tests.fixtures.llm.runs import (
    assert_accounted,
    assert_verified,
    calls,
    events,
    models_file,
    result,
    resume,
    role_of,
    solve,
)

FAST = {"patience_s": 3, "backoff_base_s": 0.1, "backoff_max_s": 1, "timeout_s": 2}
ONE_READER = ("--set", "specialists.readers=[code]")


def test_rate_limit_5xx_and_a_hang_are_survived_with_exact_accounting(tmp_path: Path) -> None:
    plan = [error(429, {"Retry-After": "1"}), error(500), error(503), stall(4)]  # the stall outlasts timeout_s=2
    with FakeOpenAI(plan, brain=policy_brain(2)) as server:
        done = solve(
            tmp_path / "run", models_file(tmp_path, server.api_base, **{**FAST, "patience_s": 30}), *ONE_READER
        )
    assert done.returncode == 0, done.stdout + done.stderr
    run = tmp_path / "run"
    assert result(run)["steps_successful"] == 2
    first = calls(run)[0]
    assert first["outcome"] == "ok" and first["attempts"] == 5
    assert [r["status"] for r in first["retry_log"]] == [429, 500, 503, None]
    assert first["retry_log"][0]["wait_s"] >= 1.0  # Retry-After honoured
    assert first["retry_log"][3]["error"].startswith(f"timed out ({server.api_base}): no answer within")
    assert "model unavailable, retry 1 in 1 s (orchestrator: HTTP 429: planned HTTP 429)" in done.stdout
    assert_accounted(run, server.usage)
    assert_verified(run)


def test_refused_connection_past_the_patience_stops_resumably_then_resumes(tmp_path: Path) -> None:
    run = tmp_path / "run"
    # the 9th request drops its connection and the port refuses connections until up()
    with FakeOpenAI([None] * 8 + [outage(3600)], brain=policy_brain(2)) as server:
        stopped = solve(run, models_file(tmp_path, server.api_base, **FAST), *ONE_READER)
        assert stopped.returncode == 3, stopped.stdout + stopped.stderr
        assert "connection refused (http://127.0.0.1:" in stopped.stdout and f"solve --resume {run}" in stopped.stdout
        assert result(run)["stop_reason"] == "model_unavailable" and result(run)["stop_detail"].startswith(
            "openai/fake-model: connection refused"
        )
        assert json.loads((run / "state" / "run.json").read_text())["finished"] is False
        failed = [r for r in calls(run) if r["outcome"] == "error"]
        assert failed and all(r["kind"] == "unavailable" and r["prompt_tokens"] == 0 for r in failed)
        assert failed[0]["retry_log"][-1]["error"].startswith("connection refused")
        assert [e["kind"] for e in events(run) if e["kind"].startswith("run.")] == ["run.start", "run.stopped"]
        assert_verified(run)

        server.up()  # the provider is back, on the same port
        done = resume(run)
        assert done.returncode == 0, done.stdout + done.stderr
        assert result(run)["steps_successful"] == 2 and result(run)["stop_reason"] == "submitted"
        assert [e["kind"] for e in events(run) if e["kind"].startswith("run.")] == [
            "run.start",
            "run.stopped",
            "run.resume",
            "run.end",
        ]
        assert_accounted(run, server.usage)
        assert_verified(run)


def test_model_errors_in_a_row_stop_resumably_and_resume_resets_the_counter(tmp_path: Path) -> None:
    run = tmp_path / "run"
    with FakeOpenAI([error(400)] * 3, brain=policy_brain(2)) as server:
        models = models_file(tmp_path, server.api_base, **FAST)
        stopped = solve(run, models, *ONE_READER)
        assert stopped.returncode == 3, stopped.stdout + stopped.stderr
        assert (result(run)["stop_reason"], result(run)["stop_detail"]) == (
            "model_error",
            "3 in a row; last: openai/fake-model: HTTP 400: planned HTTP 400",
        )
        # two more errors after the resume: with the counter reset (0 + 2 < 3) the run goes on
        server.plan += [error(400)] * 2
        done = resume(run)
        assert done.returncode == 0, done.stdout + done.stderr
        assert result(run)["steps_successful"] == 2
        counts = [e["payload"]["consecutive"] for e in events(run, "orchestrator.model_error")]
        assert counts == [1, 2, 3, 1, 2]
        assert_accounted(run, server.usage)
        assert_verified(run)


def test_a_budget_stop_resumes_only_with_a_larger_budget(tmp_path: Path) -> None:
    run = tmp_path / "run"
    with FakeOpenAI(brain=policy_brain(2)) as server:
        stopped = solve(run, models_file(tmp_path, server.api_base, **FAST), *ONE_READER, "--set", "max_tokens=8000")
        assert stopped.returncode == 1, stopped.stdout + stopped.stderr  # no successful step, not a model stop
        assert (result(run)["stop_reason"], result(run)["stop_detail"]) == (
            "model_budget",
            "model budget exhausted (tokens)",
        )
        asked = len(server.requests)
        again = resume(run)
        assert again.returncode == 1 and len(server.requests) == asked  # the old result, no new call
        assert_accounted(run, server.usage)
        assert_verified(run)


def test_malformed_tool_calls_and_empty_replies_are_events_and_the_run_goes_on(tmp_path: Path) -> None:
    plan = [
        reply(None, [("comprehension", '{"focus": "the metric"')], ids=["bad_json"]),
        reply(None, [("frobnicate", "{}")], ids=["unknown"]),
        reply(None, [("comprehension", '{"focus": 5}')], ids=["schema"]),
        reply(""),  # empty: no text, no tool call
    ]
    with FakeOpenAI(plan, brain=policy_brain(2)) as server:
        done = solve(tmp_path / "run", models_file(tmp_path, server.api_base, **FAST), *ONE_READER)
    run = tmp_path / "run"
    assert done.returncode == 0, done.stdout + done.stderr
    rejected = [(e["role"], e["payload"]["id"], e["payload"]["error"]) for e in events(run, "tool_call.rejected")]
    assert [(role, call_id) for role, call_id, _ in rejected] == [
        ("orchestrator", "bad_json"),
        ("orchestrator", "unknown"),
        ("orchestrator", "schema"),
    ]
    assert (
        "not valid JSON" in rejected[0][2]
        and "unknown tool 'frobnicate'" in rejected[1][2]
        and "do not match its schema" in rejected[2][2]
    )
    assert result(run)["steps_successful"] == 2
    assert_accounted(run, server.usage)
    assert_verified(run)


def test_context_overflow_is_trimmed_once_or_named_clearly(tmp_path: Path) -> None:
    # implementation requests larger than this overflow (a small window; the largest
    # still fits once its tool results are clipped)
    limit_chars = 6000  # the implementer's brief shows the editable files (~1,000 characters) and planned edits (~500)

    def small_window(body: dict) -> dict | None:
        size = len(json.dumps(body["messages"]))
        return (
            overflow(limit_chars // 4, size // 4) if role_of(body) == "implementation" and size > limit_chars else None
        )

    # the first request (system + task, no tool result to clip) overflows too
    with FakeOpenAI([overflow(8192, 9000)], brain=policy_brain(2), fault=small_window) as server:
        done = solve(tmp_path / "run", models_file(tmp_path, server.api_base, **FAST), *ONE_READER)
    run = tmp_path / "run"
    assert done.returncode == 0, done.stdout + done.stderr
    [first] = [e["payload"]["error"] for e in events(run, "orchestrator.model_error")]
    assert first.startswith(
        "openai/fake-model: the request does not fit the context window: about 9000 tokens, the model's limit "
        "is 8192 tokens (no tool result to clip"
    )
    assert "maximum context length is 8192 tokens" in first
    records = calls(run)
    overflowed = [
        i for i, r in enumerate(records) if r.get("kind") == "context_overflow" and r["role"] == "implementation"
    ]
    assert overflowed, "no implementation request overflowed: the test's window is too large"
    for i in overflowed:  # each overflow was followed by one trimmed retry of the same role that fitted
        assert (
            records[i + 1]["role"] == "implementation"
            and records[i + 1]["trimmed"] is True
            and records[i + 1]["outcome"] == "ok"
        )
    trimmed = [b for b in server.requests if "clipped to fit the model's context window" in json.dumps(b["messages"])]
    assert trimmed and all(len(json.dumps(b["messages"])) <= limit_chars for b in trimmed)
    assert result(run)["steps_successful"] == 2
    assert_accounted(run, server.usage)
    assert_verified(run)


def test_a_reader_that_fails_saves_no_notes_and_comprehension_reports_it(tmp_path: Path) -> None:
    def method_reader_fails(body: dict) -> dict | None:
        user = body["messages"][1].get("content") or ""
        return (
            error(400, message="reader refused")
            if role_of(body) == "comprehension-reader" and "Axis: method" in user
            else None
        )

    with FakeOpenAI(brain=policy_brain(1), fault=method_reader_fails) as server:
        readers = ("--set", "specialists.reader_threshold_chars=0")  # the tiny task's files would be read alone
        done = solve(tmp_path / "run", models_file(tmp_path, server.api_base, **FAST), *readers, steps=1)
    run = tmp_path / "run"
    assert done.returncode == 0, done.stdout + done.stderr
    notes = sorted(p.name for p in (run / "paper_analysis").glob("notes_*.md"))
    assert notes == ["notes_code.md", "notes_evaluation.md"]
    assert "reader refused" not in (run / "paper_analysis" / "summary.md").read_text()
    [failed] = events(run, "subagent.failed")
    assert failed["payload"]["axis"] == "method" and "HTTP 400: reader refused" in failed["payload"]["error"]
    [end] = [e["payload"] for e in events(run, "specialist.end") if e["payload"]["specialist"] == "comprehension"]
    assert end["ok"] is False and end["summary"].startswith("reader 'method' failed: model error")
    assert (
        "comprehension reader 'method' failed" in done.stdout
        and "comprehension stopped: reader 'method' failed" in done.stdout
    )
    assert_accounted(run, server.usage)
    assert_verified(run)


def test_a_recording_with_failed_calls_replays_them_as_the_same_failures(tmp_path: Path) -> None:
    store, first, second = tmp_path / "rec", tmp_path / "first", tmp_path / "second"
    with FakeOpenAI([error(400, message="refused once")], brain=policy_brain(1)) as server:
        models = models_file(tmp_path, server.api_base, **FAST)
        recorded = solve(first, models, *ONE_READER, steps=1, before=("--record", str(store)))
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    replayed = solve(second, models, *ONE_READER, steps=1, before=("--replay", str(store)))  # the server is gone
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert [(r["outcome"], r.get("error")) for r in calls(second)] == [
        (r["outcome"], r.get("error")) for r in calls(first)
    ]
    assert (
        calls(second)[0]["error"] == "openai/fake-model: HTTP 400: refused once"
        and calls(second)[0]["replayed"] is True
    )
    assert result(second)["best_metric"] == result(first)["best_metric"]
    assert_verified(second)


# three or four refused retries at the default backoff (waits of 1, 2, 4, 8 s, each times 0.5-1 for jitter);
# the defaults sit out up to their patience (600 s): a two-minute outage waits the same way, longer
OUTAGE_S = 6


def test_an_outage_is_sat_out_with_default_settings(tmp_path: Path) -> None:
    """Default patience and backoff: only api_base is set."""
    assert LLMConfig(model="openai/m").patience_s >= 120  # the defaults sit out two minutes of outage
    with FakeOpenAI([None] * 6 + [outage(OUTAGE_S)], brain=policy_brain(2)) as server:
        started = time.monotonic()
        done = solve(tmp_path / "run", models_file(tmp_path, server.api_base), *ONE_READER, timeout=600)
        assert time.monotonic() - started >= OUTAGE_S
    run = tmp_path / "run"
    assert done.returncode == 0, done.stdout + done.stderr
    [survivor] = [r for r in calls(run) if r["retries"] > 0]
    assert survivor["outcome"] == "ok" and survivor["retry_wait_s"] >= OUTAGE_S - 1
    assert all(r["error"].startswith(("connection refused", "Server disconnected")) for r in survivor["retry_log"])
    assert result(run)["steps_successful"] == 2
    assert_accounted(run, server.usage)
    assert_verified(run)

"""Live progress of a run (rich) and the final summary table."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.live import Live
from rich.markup import escape
from rich.table import Table

from aiscientist.records.accounting import is_better
from aiscientist.records.result import RunResult
from aiscientist.util.humanize import cache_line, pace
from aiscientist.util.text import clean


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.6g}"


def best_text(s: dict[str, Any]) -> str:
    """The best successful step, and whether anything has beaten the baseline yet."""
    baseline = s.get("baseline")
    if s["best"] is None:
        return "no successful step yet" + (f" (baseline {_fmt(baseline)})" if baseline is not None else "")
    text = f"best {_fmt(s['best'])} at step {s['best_step']}"
    if baseline is None or s.get("direction") is None:
        return text
    beats = s["best"] > baseline if s["direction"] == "max" else s["best"] < baseline
    return text + (f" (baseline {_fmt(baseline)})" if beats else f" (none beats the baseline {_fmt(baseline)} yet)")


def status_table(s: dict[str, Any]) -> Table:
    table = Table(title=f"AiScientist · {s['task']} · {s['arm']}", show_header=False, min_width=60)
    table.add_column(style="bold")
    table.add_column()
    table.add_row("stage", s["stage"] or "-")
    table.add_row("step", f"{s['steps_done']}/{s['steps']}")
    table.add_row(f"best {s['metric']}", best_text(s))
    table.add_row("decisions", str(s["decision"]))
    table.add_row("tokens · cost", f"{s['tokens']:,} · ${s['cost']:.4f}")
    table.add_row("last", escape(clean(s["last"], 100)) or "-")
    return table


class LiveProgress:
    """A live table on a terminal; one plain line per finished step otherwise."""

    def __init__(self, console: Console):
        self.console = console
        self.live: Live | None = None
        self._last_steps = -1
        self._shown: dict[str, Any] | None = None
        self._last_failed = -1

    def __enter__(self) -> LiveProgress:
        if self.console.is_terminal:
            self.live = Live(console=self.console, refresh_per_second=4, transient=True)
            self.live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.live is not None:
            self.live.__exit__(*exc)

    def notice(self, kind: str, text: str) -> None:
        """A retry of the model ("model": the live table's status row on a terminal,
        else a line) or a failure (always a line)."""
        if kind == "model" and self.live is not None and self._shown is not None:
            table = status_table(self._shown)
            table.add_row("model", f"[yellow]{escape(text[:160])}[/yellow]")
            self.live.update(table)
        else:
            self._line(f"[yellow]{kind}:[/yellow] {escape(text)}")

    def _line(self, text: str) -> None:
        """One line of markup, wrapped by the terminal, no highlighting."""
        self.console.print(text, highlight=False, soft_wrap=True)

    def __call__(self, s: dict[str, Any]) -> None:
        self._shown = s  # a later model notice redraws it; the next update clears that notice
        last = s.get("last_step")
        if last and not last["eligible"] and last["step"] != self._last_failed:
            self._last_failed = last["step"]
            self._line(
                f"[yellow]step {last['step']} did not count:[/yellow] "
                f"{escape(failure_line(last['cause'], last['error']))}"
            )
        if self.live is not None:
            self.live.update(status_table(s))
        elif s["steps_done"] != self._last_steps:
            self._last_steps = s["steps_done"]
            self._line(
                f"{s['stage'] or '-'} · step {s['steps_done']}/{s['steps']} · {best_text(s)} "
                f"· tokens {s['tokens']:,} · ${s['cost']:.4f}"
            )


def failure_line(cause: str | None, error: str | None) -> str:
    """`<cause class>: <detail>` for a step that did not count."""
    return f"{cause or 'not eligible'}: {clean(error or '', 300)}".rstrip(": ")


def summary_table(result: RunResult, run_dir: str) -> Table:
    table = Table(title=f"solve · {result.task} · {result.agent}", show_header=False)
    table.add_column("", style="bold")
    table.add_column("")
    stopped = result.stop_reason.value if result.stop_reason else "running"
    table.add_row("stopped", escape(f"{stopped}: {result.stop_detail}"[:160] if result.stop_detail else stopped))
    best = f"{_fmt(result.best_metric)} at step {result.best_step}" if result.best_step else "no successful step"
    if result.best_metric is not None and result.baseline is not None and result.direction:
        best += (
            ""
            if is_better(result.best_metric, result.baseline, result.direction)
            else " (not better than the baseline)"
        )
    table.add_row(f"best {result.metric or 'metric'}", best)
    table.add_row("baseline", _fmt(result.baseline) + (f" ({result.direction})" if result.direction else ""))
    if result.score_isolated is False:
        table.add_row("score isolated", "[yellow]no[/]: the score was read from the run's own process (quick mode)")
    if result.test is not None:
        table.add_row(
            "hidden test", _fmt(result.test.metric) if result.test.success else escape(f"failed: {result.test.error}")
        )
    table.add_row(
        "steps total/completed/successful", f"{result.steps_total}/{result.steps_completed}/{result.steps_successful}"
    )
    if result.best_step is None and result.failure_causes:
        table.add_row("failure causes", escape(result.failure_causes))
    table.add_row("tokens · cost", f"{result.tokens:,} · ${result.cost:.4f}")
    table.add_row("prompt cache", cache_line(result.prompt_tokens, result.cached_tokens, result.cache_saved))
    table.add_row("wall time", f"{result.wall_time_s:.1f} s")
    table.add_row("pace", pace(result.ttfe_s, result.experiments_per_hour))
    table.add_row("run folder", escape(run_dir))
    return table

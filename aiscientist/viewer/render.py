"""One self-contained HTML page for a run: inline CSS, JS and images, nothing fetched."""

from __future__ import annotations

import base64
import io
import math
from html import escape
from typing import Any

from aiscientist.records.accounting import is_better, successful
from aiscientist.util.humanize import cache_line, duration, money, num, pace, plural
from aiscientist.viewer.load import Moment, RunView, StepView

REFRESH_S = 10  # while a run is going, the page reloads itself (re-written by `show --watch`)

CSS = """
body{font-family:system-ui,sans-serif;margin:1.5em auto;max-width:1200px;padding:0 1em;color:#222}
h1{font-size:1.5em}h2{font-size:1.2em;border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:1.6em}
table.summary td{padding:2px 10px;vertical-align:top}table.summary td:first-child{font-weight:600;white-space:nowrap}
.step{border:1px solid #ddd;border-left:5px solid #999;border-radius:4px;margin:.5em 0;padding:.4em .7em}
.step.ok{border-left-color:#2ca02c}.step.best{border-left-color:#1f77b4;background:#f3f8fd}\
.step.failed{border-left-color:#d62728}
.step .head{display:flex;gap:1em;flex-wrap:wrap;font-size:.9em;color:#555}.step .head b{color:#222}
.hypothesis{margin:.3em 0}.error{color:#b00}
ul.tree{list-style:none;padding-left:1.4em;border-left:1px dotted #bbb}
pre.diff{background:#fafafa;border:1px solid #eee;padding:.5em;overflow-x:auto;font-size:12px;line-height:1.35}
.add{color:#116329;background:#e6ffec}.del{color:#82071e;background:#ffebe9}.hunk{color:#0550ae}.meta{color:#6e7781}
.timeline td{padding:2px 8px;vertical-align:top;font-size:.9em}.timeline td:first-child{white-space:nowrap;color:#666}
.role{font-weight:600}.note{color:#666;font-size:.9em}\
pre.plan{white-space:pre-wrap;background:#fafafa;padding:.6em;font-size:13px}
button{margin-right:.5em}
"""

JS = """
function setDiffs(open){document.querySelectorAll('details.diff').forEach(function(d){d.open=open;});}
document.getElementById('expand').addEventListener('click',function(){setDiffs(true);});
document.getElementById('collapse').addEventListener('click',function(){setDiffs(false);});
"""


def _diff_html(diff: str) -> str:
    def line(text: str) -> str:
        cls = (
            "meta"
            if text.startswith(("+++", "---", "diff ", "index "))
            else {"+": "add", "-": "del", "@": "hunk"}.get(text[:1], "")
        )
        return f"<span class='{cls}'>{escape(text)}</span>" if cls else escape(text)

    return "\n".join(line(t) for t in diff.splitlines())


def _step_html(step: StepView, run: RunView) -> str:
    state = "failed" if not step.success else ("best" if step.step == run.best_step else "ok")
    head = [
        f"<b>step {step.step}</b>",
        f"<span class='metric'>{escape(run.metric or 'metric')} = {num(step.metric)}</span>",
        f"<span class='outcome'>{escape(step.outcome)}</span>",
        f"<span>{duration(step.duration_s)}</span>",
        f"<span>{plural(step.tokens, 'token')}</span>",
    ]
    if step.operator:
        head.append(f"<span>{escape(step.operator)}" + (f" · {escape(step.group)}" if step.group else "") + "</span>")
    if step.parent is not None:
        head.append(f"<span>from step {step.parent}</span>")
    body = f"<div class='hypothesis'>{escape(step.hypothesis)}</div>"
    if step.error or step.cause:
        body += f"<div class='error'>failure cause: {escape(': '.join(filter(None, [step.cause, step.error])))}</div>"
    if step.diff.strip():
        changed = sum(1 for t in step.diff.splitlines() if t[:1] in "+-" and not t.startswith(("+++", "---")))
        body += (
            f"<details class='diff'><summary>diff ({plural(changed, 'changed line')})</summary>"
            f"<pre class='diff'>{_diff_html(step.diff)}</pre></details>"
        )
    else:
        body += "<div class='note'>no code change</div>"
    return (
        f"<section class='step {state}' id='step-{step.step}' data-step='{step.step}'>"
        f"<div class='head'>{''.join(head)}</div>{body}</section>"
    )


def _steps_html(run: RunView) -> str:
    if not run.steps:
        return "<p class='note'>no step yet</p>"
    if all(s.parent is None for s in run.steps):
        return "\n".join(_step_html(s, run) for s in run.steps)
    return (
        "<p class='note'>a tree: each step under the step it started from (roots start from the baseline)</p>"
        + _tree_html(run)
    )


def _tree_html(run: RunView) -> str:
    """The steps nested under their parents, without recursion (a run may be a chain of
    thousands of steps); a step whose parent is not in the run, or that sits on a cycle of
    a damaged tree record, is shown as a root, and every step is shown once."""
    known = {s.step for s in run.steps}
    children: dict[int | None, list[StepView]] = {}
    for step in run.steps:
        children.setdefault(step.parent if step.parent in known else None, []).append(step)
    out: list[str] = []
    shown: set[int] = set()
    pending = list(children.get(None, []))
    pending += [s for s in run.steps if s.parent in known]  # reached from a root first, unless on a cycle
    for root in pending:
        if root.step in shown:
            continue
        shown.add(root.step)
        out.append(f"<ul class='tree'><li>{_step_html(root, run)}")
        stack = [iter(children.get(root.step, []))]
        opened = [False]
        while stack:
            step = next(stack[-1], None)
            if step is None:
                stack.pop()
                out.append("</ul></li>" if opened.pop() else "</li>")
                continue
            if step.step in shown:
                continue
            shown.add(step.step)
            if not opened[-1]:
                out.append("<ul class='tree'>")
                opened[-1] = True
            out.append(f"<li>{_step_html(step, run)}")
            stack.append(iter(children.get(step.step, [])))
            opened.append(False)
        out.append("</ul>")
    return "".join(out)


def _summary(run: RunView) -> list[tuple[str, str]]:
    best = "none yet" if run.best_step is None else f"{num(run.best_metric)} at step {run.best_step}"
    if run.best_metric is not None and run.baseline is not None:
        best += "" if is_better(run.best_metric, run.baseline, run.direction) else " (not better than the baseline)"
    steps = (
        f"{run.steps_total}"
        + (f" of {run.steps_budget}" if run.steps_budget else "")
        + f" ({run.steps_successful} successful)"
    )
    return [
        ("task", run.task),
        ("agent", run.agent),
        (
            "metric",
            f"{run.metric} ({'higher' if run.direction == 'max' else 'lower'} is better)"
            if run.metric
            else "none (a paper task: graded by its rubric)",
        ),
        ("baseline", num(run.baseline)),
        ("best validated step", best),
        (
            "hidden test",
            num(run.test) if run.test is not None else (f"failed: {run.test_error}" if run.test_error else "not run"),
        ),
        ("stop reason", run.stop_reason or "–"),
        ("steps", steps),
        ("tokens · cost", f"{num(run.tokens)} · {money(run.cost)}"),
        ("prompt cache", cache_line(run.prompt_tokens, run.cached_tokens, run.cache_saved)),
        ("wall time", duration(run.wall_time_s)),
        ("pace", pace(run.ttfe_s, run.experiments_per_hour)),
        ("verify", run.verify),
    ]


def _moments(moments: list[Moment], empty: str) -> str:
    if not moments:
        return f"<p class='note'>{escape(empty)}</p>"
    rows = "".join(
        f"<tr><td>{escape(m.ts[11:19])}</td><td class='role'>{escape(m.role)}</td><td>{escape(m.text)}</td></tr>"
        for m in moments
    )
    return f"<table class='timeline'>{rows}</table>"


def curve_png(run: RunView) -> str | None:
    """The best-so-far curve with every step's metric as a PNG `data:` URI (None: no finite
    metric yet, or values matplotlib cannot draw: a record may hold Infinity or 1e308)."""
    scored = [s for s in run.steps if s.metric is not None and math.isfinite(s.metric)]
    if not scored:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.0, 3.6), dpi=100)
    try:
        _draw(run, scored, ax)
        fig.tight_layout()
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png")
    except (ValueError, OverflowError):
        return None
    finally:
        plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()


def _draw(run: RunView, scored: list[StepView], ax: Any) -> None:
    from matplotlib.ticker import MaxNLocator

    good = [s for s in scored if successful(s)]
    bad = [s for s in scored if not successful(s)]
    ax.scatter([s.step for s in good], [s.metric for s in good], s=22, color="#1f77b4", label="step metric", zorder=3)
    if bad:
        ax.scatter(
            [s.step for s in bad],
            [s.metric for s in bad],
            s=22,
            marker="x",
            color="#d62728",
            label="not counted (failed / invalid)",
            zorder=3,
        )
    best = [(s.step, s.best_so_far) for s in run.steps if s.best_so_far is not None and math.isfinite(s.best_so_far)]
    if best:
        ax.step([b[0] for b in best], [b[1] for b in best], where="post", color="#2ca02c", label="best so far")
    if run.baseline is not None and math.isfinite(run.baseline):
        ax.axhline(run.baseline, color="grey", linestyle="--", linewidth=1, label="baseline")
    ax.set_xlabel("step")
    ax.set_ylabel(f"{run.metric or 'metric'} ({'higher' if run.direction == 'max' else 'lower'} is better)")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.legend(fontsize=8)


def render(run: RunView) -> str:
    title = f"{run.task} · {run.agent}"
    refresh = f"<meta http-equiv='refresh' content='{REFRESH_S}'>" if run.running else ""
    curve = curve_png(run)
    parts = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        f"{refresh}<title>{escape(title)}</title><style>{CSS}</style></head><body>",
        f"<h1>{escape(title)}</h1>",
        "<p class='note'>"
        + (
            "run in progress: this page reloads itself every 10 s; `python -m aiscientist show --watch RUN_DIR` keeps "
            "it up to date"
            if run.running
            else "run finished"
        )
        + f" · {escape(str(run.root))}</p>",
        "<h2>Summary</h2><table class='summary'>"
        + "".join(f"<tr><td>{escape(k)}</td><td>{escape(v)}</td></tr>" for k, v in _summary(run))
        + "</table>",
        "<h2>Best so far</h2>"
        + (f"<img alt='best-so-far curve' src='{curve}'>" if curve else "<p class='note'>no metric yet</p>"),
        f"<h2>Steps ({len(run.steps)})</h2><button id='expand'>expand all diffs</button>"
        "<button id='collapse'>collapse all diffs</button>",
        _steps_html(run),
        "<h2>Decisions and specialists</h2>" + _moments(run.timeline, "nothing recorded yet"),
        "<h2>Plan</h2>" + _moments(run.plan_versions, "no plan written"),
    ]
    last = len(run.plan_texts) - 1
    parts += [
        f"<details class='plan'{' open' if i == last else ''}><summary>{escape(name)}</summary>"
        f"<pre class='plan'>{escape(text)}</pre></details>"
        for i, (name, text) in enumerate(run.plan_texts)
    ]
    parts += ["<h2>Permission denials</h2>" + _moments(run.denials, "none"), f"<script>{JS}</script></body></html>"]
    return "\n".join(parts)

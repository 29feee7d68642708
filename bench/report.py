"""Reports regenerated from a results folder alone (the runs' result.json files).

Writes into RESULTS/report/ (or --out):
- `utility.md|csv`: per task, the baseline and each agent's best-round score
  (hidden test where the task has one) and best validation metric — FML-bench's
  main table;
- `agents.md|csv`: per agent, mean ± std over tasks of every other metric;
- `per_task.csv`: every metric of every (agent, task);
- `rubric.md|csv`: paper tasks, rubric score per agent, mean ± standard error over rounds;
- `curves_<task>.png` (best-so-far validation metric per step, one line per agent),
  `perf_vs_diversity.png`;
- `report.md` (all of it) and `index.html` (one self-contained page, images inlined).
"""

from __future__ import annotations

import base64
import csv
import html
import io
import re
from collections.abc import Sequence
from pathlib import Path

from bench.metrics import AGENT_METRICS, AgentTask, RunSummary, TaskInfo, agent_averages, aggregate, mean_stderr


def load_runs(results: Path) -> list[RunSummary]:
    """Every finished run's summary under RESULTS/runs/."""
    return [RunSummary.model_validate_json(p.read_text()) for p in sorted((results / "runs").glob("*/*/round_*/result.json"))]


def fmt(value: float | int | None, digits: int = 4) -> str:
    if value is None:
        return "–"
    if isinstance(value, int):
        return str(value)
    return f"{value:.{digits}g}"


def fmt_pm(mean: float | None, spread: float | None) -> str:
    return "–" if mean is None else f"{fmt(mean)} ± {fmt(spread)}"


Table = tuple[list[str], list[list[str]]]
OUTPUTS = ("utility.md", "utility.csv", "agents.md", "agents.csv", "rubric.md", "rubric.csv", "per_task.csv", "curves_*.png", "perf_vs_diversity.png", "report.md", "index.html")


def utility_table(infos: Sequence[TaskInfo], cells: Sequence[AgentTask], agents: list[str]) -> Table:
    header = ["task", "metric", "dir", "baseline"] + [f"{a}" for a in agents]
    rows = []
    by = {(c.task, c.agent): c for c in cells}
    for info in infos:
        if info.kind != "improve":
            continue
        row = [info.name, info.metric or "", info.direction, f"{fmt(info.score_baseline)} (val {fmt(info.baseline)})"]
        for agent in agents:
            cell = by.get((info.name, agent))
            row.append("–" if cell is None else f"{fmt(cell.score)} (val {fmt(cell.best_val)})")
        rows.append(row)
    return header, rows


def agents_table(cells: Sequence[AgentTask]) -> Table:
    averages = agent_averages([c for c in cells])
    header = ["agent", "tasks"] + [label for _, label in AGENT_METRICS]
    rows = []
    for agent, metrics in averages.items():
        tasks = sum(1 for c in cells if c.agent == agent)
        rows.append([agent, str(tasks)] + [fmt_pm(*metrics[key][:2]) for key, _ in AGENT_METRICS])
    return header, rows


def rubric_table(runs: Sequence[RunSummary]) -> Table:
    groups: dict[tuple[str, str], list[RunSummary]] = {}
    for run in runs:
        if run.kind == "reproduce":
            groups.setdefault((run.task, run.agent), []).append(run)
    rows = []
    for (task, agent), group in sorted(groups.items()):
        mean, stderr, n = mean_stderr(r.rubric_score for r in group)
        rows.append([task, agent, str(len(group)), str(n), fmt_pm(mean, stderr)])
    return ["task", "agent", "rounds", "graded", "rubric score (mean ± s.e.)"], rows


PER_TASK_FIELDS = [f for f in AgentTask.model_fields if f != "curve"]


def per_task_rows(cells: Sequence[AgentTask]) -> Table:
    return PER_TASK_FIELDS, [[("" if getattr(c, f) is None else str(getattr(c, f))) for f in PER_TASK_FIELDS] for c in cells]


def markdown(table: Table) -> str:
    header, rows = table
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def write_csv(path: Path, table: Table) -> None:
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(table[0])
        writer.writerows(table[1])


def html_table(table: Table) -> str:
    header, rows = table
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(v)}</td>" for v in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


# ---- plots --------------------------------------------------------------------------


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_curves(info: TaskInfo, cells: Sequence[AgentTask], path: Path) -> None:
    """Best-so-far validation metric per step of each agent's best round."""
    plt = _pyplot()
    from matplotlib.ticker import MaxNLocator

    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=100)
    for cell in cells:
        xs = [i for i, v in enumerate(cell.curve, start=1) if v is not None]
        ys = [v for v in cell.curve if v is not None]
        if xs:
            ax.step(xs, ys, where="post", marker="o", markersize=3, label=cell.agent)
        else:
            ax.plot([], [], label=f"{cell.agent} (no successful step)")
    if info.baseline is not None:
        ax.axhline(info.baseline, color="grey", linestyle="--", linewidth=1, label="baseline")
    ax.set_title(f"{info.name}: best-so-far {info.metric or 'metric'} ({info.direction})")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("step")
    ax.set_ylabel(info.metric or "metric")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, format="png")
    plt.close(fig)


def plot_perf_vs_diversity(cells: Sequence[AgentTask], path: Path) -> None:
    """Normalised improvement against diversity, one point per (agent, task)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=100)
    agents = sorted({c.agent for c in cells})
    for agent in agents:
        points = [(c.diversity, c.normalised) for c in cells if c.agent == agent and c.diversity is not None]
        ax.scatter([p[0] for p in points], [p[1] for p in points], label=agent)
    embedders = sorted({c.embedder for c in cells if c.embedder})
    ax.set_xlabel("diversity (mean L2 to centroid" + (f", {', '.join(embedders)})" if embedders else ")"))
    ax.set_ylabel("normalised improvement")
    ax.set_title("performance vs diversity")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, format="png")
    plt.close(fig)


# ---- the report ---------------------------------------------------------------------


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)


def write_report(results: Path, out: Path | None = None) -> Path:
    """Write every table, plot and page; return the path of index.html."""
    out = out or results / "report"
    out.mkdir(parents=True, exist_ok=True)
    for pattern in OUTPUTS:  # a previous report's files (this one may have fewer tables or tasks)
        for old in out.glob(pattern):
            old.unlink()
    runs = load_runs(results)
    infos, cells = aggregate(runs)
    agents = sorted({r.agent for r in runs})
    improve = [c for c in cells if c.task in {i.name for i in infos if i.kind == "improve"}]
    tables = {}
    if improve:
        tables["utility"] = ("Utility per task (best round: hidden-test score, validation best in brackets)", utility_table(infos, cells, agents))
        tables["agents"] = ("Per agent: mean ± std over tasks", agents_table(improve))
    if any(r.kind == "reproduce" for r in runs):
        tables["rubric"] = ("Paper tasks: rubric score", rubric_table(runs))
    for name, (_, table) in tables.items():
        write_csv(out / f"{name}.csv", table)
        (out / f"{name}.md").write_text(markdown(table) + "\n")
    write_csv(out / "per_task.csv", per_task_rows(cells))
    images = []
    for info in infos:
        if info.kind == "improve":
            path = out / f"curves_{_slug(info.name)}.png"
            plot_curves(info, [c for c in cells if c.task == info.name], path)
            images.append((f"{info.name}: best-so-far curves", path))
    if improve:
        path = out / "perf_vs_diversity.png"
        plot_perf_vs_diversity(improve, path)
        images.append(("performance vs diversity", path))
    notes = _notes(runs, infos)
    md = [f"# Benchmark report: {results.name}", "", *notes, ""]
    for _, (title, table) in tables.items():
        md += [f"## {title}", "", markdown(table), ""]
    md += [f"![{title}]({path.name})" for title, path in images]
    (out / "report.md").write_text("\n".join(md) + "\n")
    page = ["<!doctype html><html><head><meta charset='utf-8'><title>Benchmark report</title>", f"<style>{CSS}</style></head><body>", f"<h1>Benchmark report: {html.escape(results.name)}</h1>"]
    page += [f"<p>{html.escape(n)}</p>" for n in notes]
    for _, (title, table) in tables.items():
        page += [f"<h2>{html.escape(title)}</h2>", html_table(table)]
    for title, path in images:
        data = base64.b64encode(path.read_bytes()).decode()
        page.append(f"<figure><img alt='{html.escape(title)}' src='data:image/png;base64,{data}'><figcaption>{html.escape(title)}</figcaption></figure>")
    page.append("</body></html>")
    (out / "index.html").write_text("\n".join(page))
    return out / "index.html"


def _notes(runs: Sequence[RunSummary], infos: Sequence[TaskInfo]) -> list[str]:
    embedders = sorted({r.embedder for r in runs if r.embedder})
    rounds = sorted({r.round for r in runs})
    notes = [
        f"{len(runs)} finished runs, {len({r.agent for r in runs})} agents, {len(infos)} tasks, rounds {rounds[0] if rounds else 0}–{rounds[-1] if rounds else 0}.",
        "Score = hidden-test metric of the best validation step of the best round (validation best when a task has no test). "
        "Normalised improvement = max(0, signed gain / |p_best − p_worst|) on the task's fixed range (FML-bench main's table), else over the baseline and every run on the task. "
        "Steps to target: first step whose best-so-far reaches the worst best-run among agents; AUC: mean normalised best-so-far over the assigned steps. "
        "Diversity and academic rate are over the best round; rates and costs pool all rounds.",
        f"Diversity embedder: {', '.join(embedders) if embedders else 'none (no successful step)'}.",
    ]
    return notes


CSS = "body{font-family:sans-serif;margin:2em;max-width:1400px}table{border-collapse:collapse;margin:1em 0;font-size:13px}td,th{border:1px solid #ccc;padding:3px 6px;text-align:right}th{background:#eee}td:first-child{text-align:left}figure{display:inline-block;margin:1em}"

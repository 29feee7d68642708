"""Reports regenerated from a results folder alone (the runs' result.json files), written into
RESULTS/report/ (or --out): markdown and CSV tables (utility, agents, pace, per_task, rubric, paired, tools,
runs), PNG plots (best-so-far curves per task, performance vs diversity), `report.md` (all of it) and
`index.html` (one self-contained page, images inlined)."""

from __future__ import annotations

import base64
import csv
import html
import json
import os
import re
from collections.abc import Sequence
from pathlib import Path

from aiscientist.agent import toolsets
from aiscientist.records.cell import REPORT, BaselinePaths, CellSummary, cell_folders, load_summaries, task_folders
from aiscientist.records.paths import LEDGER
from aiscientist.util.humanize import MISSING, num, plural, pm
from bench.agents import load_all
from bench.scoring.metrics import (
    AGENT_METRICS,
    AgentTask,
    TaskInfo,
    agent_averages,
    aggregate,
    gain_lost_on_test,
    group_by,
    mean_stderr,
)
from bench.scoring.paired import Pairing, paired_comparisons
from bench.scoring.plots import plot_curves, plot_perf_vs_diversity

Table = tuple[list[str], list[list[str]]]
Links = dict[tuple[str, str, int], str]  # (task, agent, round) -> a path relative to the report
TABLES = ("utility", "agents", "rubric", "paired", "runs", "pace", "tools")
OUTPUTS = (
    *(f"{t}.{ext}" for t in TABLES for ext in ("md", "csv")),
    *("per_task.csv", "curves_*.png", "perf_vs_diversity.png", "report.md", "index.html"),
)
LOST = "⚠ test below baseline"

# one line per column, printed under each table
COLUMNS = {
    "task": "the task's name",
    "metric": "the metric optimised, DATASET/NAME",
    "dir": "max: higher is better; min: lower is better",
    "baseline": "the unchanged code: hidden-test metric (validation metric in brackets)",
    "agent": "the agent (ablation arms are separate agents)",
    "tasks": "tasks the agent ran on",
    "rounds": "independent runs of the agent on the task",
    "graded": "rounds with a rubric score",
    "rubric score (mean ± s.e.)": "PaperBench rubric score, mean and standard error over rounds",
    "A vs B": "the two agents compared, round k of one against round k of the other",
    "paired rounds": "rounds in which both agents produced a score",
    "mean difference (A − B)": "mean paired difference of the scores, signed so that positive means A is better",
    "95% CI": "percentile bootstrap interval of that mean (5,000 resamples)",
    "A win rate": "share of paired rounds A scored better (ties count half)",
    "verdict": "a side is better only when the interval excludes 0; otherwise the difference is within noise",
    "round": "the round number",
    "score": "hidden-test metric of the run's best validation step (validation best when the task has no test)",
    "best val": "the run's best validation metric",
    "flag": f"{LOST}: validation improved on the baseline but the hidden test ended worse than the baseline's",
    "page": "the run's own page (steps, diffs, decisions), written by `aiscientist show`",
    "ledger": f"the run's {LEDGER}: one row per step (status, metric, best so far, time, tokens, hypothesis)",
    "role": "the role inside the agent that makes model calls (AiScientist: orchestrator and specialists)",
    "tools": "the tools that role may call (`python -m aiscientist bench agents`); `bash` is one shared sandboxed "
    "shell",
} | {label: definition for _, label, definition in AGENT_METRICS}


def beside(agent: str) -> tuple[str, bool]:
    """Sort key: each peer's released code (`peer-aide`) right after our re-implementation (`aide`)."""
    return agent.removeprefix("peer-"), agent.startswith("peer-")


def peers_first(pairings: Sequence[Pairing]) -> list[Pairing]:
    """Per task, a peer against our re-implementation of it before every other pair."""
    return sorted(pairings, key=lambda p: (p.task, beside(p.a)[0] != beside(p.b)[0]))


def utility_table(
    infos: Sequence[TaskInfo], cells: Sequence[AgentTask], agents: list[str], runs: Sequence[CellSummary]
) -> Table:
    header = ["task", "metric", "dir", "baseline", *agents]
    rows = []
    by = {(c.task, c.agent): c for c in cells}
    best_runs = {(r.task, r.agent, r.round): r for r in runs}
    for info in infos:
        if info.kind != "improve":
            continue
        row = [info.name, info.metric or "", info.direction, f"{num(info.score_baseline)} (val {num(info.baseline)})"]
        for agent in agents:
            cell = by.get((info.name, agent))
            best = None if cell is None else best_runs.get((info.name, agent, cell.best_round))
            flag = f" {LOST}" if best is not None and gain_lost_on_test(best) else ""
            row.append(MISSING if cell is None else f"{num(cell.score)} (val {num(cell.best_val)}){flag}")
        rows.append(row)
    return header, rows


def agents_table(cells: Sequence[AgentTask]) -> Table:
    header = ["agent", "tasks"] + [label for _, label, _ in AGENT_METRICS]
    rows = []
    for agent, metrics in sorted(agent_averages(cells).items(), key=lambda item: beside(item[0])):
        tasks = sum(c.agent == agent for c in cells)
        rows.append([agent, num(tasks)] + [pm(*metrics[key]) for key, _, _ in AGENT_METRICS])
    return header, rows


PACE_METRICS = ("ttfe_s", "experiments_per_hour", "cached_share", "cache_saved")  # per agent and task


def pace_table(cells: Sequence[AgentTask]) -> Table:
    labels = {key: label for key, label, _ in AGENT_METRICS}
    rows = [[c.task, c.agent] + [num(getattr(c, key)) for key in PACE_METRICS] for c in cells]
    return ["task", "agent", *(labels[key] for key in PACE_METRICS)], rows


def baseline_note(results: Path, tasks: Sequence[str]) -> list[str]:
    """The tasks' baseline measurements (setup and the unchanged code's step), apart from every TTFE."""
    times = []
    for task in tasks:
        try:
            seconds = json.loads(BaselinePaths.of(results, task).record.read_text()).get("baseline_s")
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(seconds, (int, float)):
            times.append(f"{task} {seconds:.0f} s")
    return [f"Baseline measurement, once per task, apart from the TTFE: {', '.join(times)}."] if times else []


def rubric_table(runs: Sequence[CellSummary]) -> Table:
    groups = group_by([r for r in runs if r.kind == "reproduce"], lambda r: (r.task, r.agent))
    rows = []
    for (task, agent), group in groups.items():
        mean, stderr, n = mean_stderr(r.rubric_score for r in group)
        rows.append([task, agent, num(len(group)), num(n), pm(mean, stderr, n)])
    return ["task", "agent", "rounds", "graded", "rubric score (mean ± s.e.)"], rows


def paired_table(pairings: Sequence[Pairing]) -> Table:
    header = ["task", "A vs B", "paired rounds", "mean difference (A − B)", "95% CI", "A win rate", "verdict"]
    rows = [
        [
            p.task,
            f"{p.a} vs {p.b}",
            num(p.rounds),
            num(p.mean_diff),
            f"[{num(p.low)}, {num(p.high)}]",
            f"{p.win_rate:.0%}",
            p.verdict,
        ]
        for p in pairings
    ]
    return header, rows


def runs_table(runs: Sequence[CellSummary], pages: dict[tuple[str, str, int], str], ledgers: Links) -> Table:
    header = ["task", "agent", "round", "score", "best val", "flag", "page", "ledger"]
    rows = [
        [
            r.task,
            r.agent,
            num(r.round),
            num(r.score),
            num(r.result.best_metric),
            LOST if gain_lost_on_test(r) else "",
            pages.get((r.task, r.agent, r.round), ""),
            ledgers.get((r.task, r.agent, r.round), ""),
        ]
        for r in runs
    ]
    return header, rows


def tools_table(agents: list[str]) -> Table:
    """The rows of the one tool-set table (`aiscientist.agent.toolsets`) for these agents."""
    load_all()  # every agent's module registers its row
    rows = [r for r in toolsets.rows() if r["agent"] in agents]
    return ["agent", "role", "tools"], [
        [str(r["agent"]), str(r["role"] or MISSING), ", ".join(r["tools"]) or "(no tool calls)"] for r in rows
    ]  # type: ignore[arg-type]


def ledger_links(results: Path, runs: Sequence[CellSummary], out: Path) -> Links:
    """Each run's ledger (its run folder's results.tsv), as a path relative to `out`."""
    ledgers = {(r.task, r.agent, r.round): r.cell(results).run.ledger for r in runs}
    return {key: os.path.relpath(path, out) for key, path in ledgers.items() if path.is_file()}


def write_run_pages(results: Path, runs: Sequence[CellSummary], out: Path) -> dict[tuple[str, str, int], str]:
    """Each run's own page (inside its run folder), as a path relative to `out`."""
    from aiscientist.viewer import write_page

    pages = {}
    for run in runs:
        cell = run.cell(results)
        if cell.run.experiments.is_dir():
            pages[(run.task, run.agent, run.round)] = os.path.relpath(write_page(cell.root), out)
    return pages


PER_TASK_FIELDS = [f for f in AgentTask.model_fields if f != "curve"]


def per_task_rows(cells: Sequence[AgentTask]) -> Table:
    return PER_TASK_FIELDS, [
        [("" if getattr(c, f) is None else str(getattr(c, f))) for f in PER_TASK_FIELDS] for c in cells
    ]


def markdown(table: Table) -> str:
    """A markdown table (a `|` inside a cell escaped)."""
    header, rows = table
    lines = ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in [header, *rows]]
    return "\n".join([lines[0], "|" + "---|" * len(header), *lines[1:]])


def write_csv(path: Path, table: Table) -> None:
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(table[0])
        writer.writerows(table[1])


def _html_cell(column: str, value: str) -> str:
    if column in ("page", "ledger") and value:
        return f"<td><a href='{html.escape(value)}'>{'run page' if column == 'page' else LEDGER}</a></td>"
    return f"<td class='lost'>{html.escape(value)}</td>" if LOST in value else f"<td>{html.escape(value)}</td>"


def html_table(table: Table) -> str:
    header, rows = table
    head = "".join(f"<th title='{html.escape(COLUMNS.get(h, ''))}'>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(_html_cell(h, v) for h, v in zip(header, row)) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def column_notes(table: Table) -> list[tuple[str, str]]:
    """(column, definition) for the table's columns that have one."""
    return [(h, COLUMNS[h]) for h in table[0] if h in COLUMNS]


def write_report(results: Path, out: Path | None = None, run_pages: bool = True) -> Path:
    """Write every table, plot and page; return the path of index.html."""
    out = out or results / REPORT
    out.mkdir(parents=True, exist_ok=True)
    for pattern in OUTPUTS:  # a previous report's files (this one may have fewer tables or tasks)
        for old in out.glob(pattern):
            old.unlink()
    runs = sorted(load_summaries(results), key=lambda r: (r.task, beside(r.agent), r.round))
    infos, cells = aggregate(runs)
    agents = sorted({r.agent for r in runs}, key=beside)
    improve = [c for c in cells if c.task in {i.name for i in infos if i.kind == "improve"}]
    pairings = peers_first(paired_comparisons(runs))
    tables = {}
    if improve:
        tables["utility"] = (
            "Utility per task (best round: hidden-test score, validation best in brackets)",
            utility_table(infos, cells, agents, runs),
        )
        tables["agents"] = ("Per agent: mean ± std over tasks (no spread with one task)", agents_table(improve))
        tables["pace"] = (
            "Per agent and task: how soon and how often it experiments, what the cache saved",
            pace_table(improve),
        )
    if pairings:
        tables["paired"] = ("Agent against agent, paired by round: more than noise?", paired_table(pairings))
    if any(r.kind == "reproduce" for r in runs):
        tables["rubric"] = ("Paper tasks: rubric score", rubric_table(runs))
    pages = write_run_pages(results, runs, out) if run_pages else {}
    tables["runs"] = ("Every run", runs_table(runs, pages, ledger_links(results, runs, out)))
    tables["tools"] = ("Tools per agent and role", tools_table(agents))
    for name, (_, table) in tables.items():
        write_csv(out / f"{name}.csv", table)
        (out / f"{name}.md").write_text(markdown(table) + "\n")
    write_csv(out / "per_task.csv", per_task_rows(cells))
    images = _plots(infos, cells, improve, out)
    notes = _notes(runs, infos) + baseline_note(results, [i.name for i in infos]) + forgeable_note(results)
    md = [f"# Benchmark report: {results.name}", "", *notes, ""]
    for _, (title, table) in tables.items():
        md += [f"## {title}", "", markdown(table), "", *(f"- **{h}**: {d}" for h, d in column_notes(table)), ""]
    md += [f"![{title}]({path.name})" for title, path in images]
    (out / "report.md").write_text("\n".join(md) + "\n")
    page = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'><title>Benchmark report</title>",
        f"<style>{CSS}</style></head><body>",
        f"<h1>Benchmark report: {html.escape(results.name)}</h1>",
    ]
    page += [f"<p>{html.escape(n)}</p>" for n in notes]
    for name, (title, table) in tables.items():
        definitions = "".join(f"<dt>{html.escape(h)}</dt><dd>{html.escape(d)}</dd>" for h, d in column_notes(table))
        page += [
            f"<h2 id='{name}'>{html.escape(title)}</h2>",
            html_table(table),
            f"<details class='columns'><summary>what the columns mean</summary><dl>{definitions}</dl></details>",
        ]
    for title, path in images:
        data = base64.b64encode(path.read_bytes()).decode()
        page.append(
            f"<figure><img alt='{html.escape(title)}' src='data:image/png;base64,{data}'>"
            f"<figcaption>{html.escape(title)}</figcaption></figure>"
        )
    page.append("</body></html>")
    (out / "index.html").write_text("\n".join(page))
    return out / "index.html"


def _plots(
    infos: Sequence[TaskInfo], cells: Sequence[AgentTask], improve: Sequence[AgentTask], out: Path
) -> list[tuple[str, Path]]:
    images = []
    for info in infos:
        if info.kind == "improve":
            path = out / f"curves_{re.sub(r'[^A-Za-z0-9_.-]+', '_', info.name)}.png"
            plot_curves(info, [c for c in cells if c.task == info.name], path)
            images.append((f"{info.name}: best-so-far curves", path))
    if improve:
        path = out / "perf_vs_diversity.png"
        plot_perf_vs_diversity(improve, path)
        images.append(("performance vs diversity", path))
    return images


def _notes(runs: Sequence[CellSummary], infos: Sequence[TaskInfo]) -> list[str]:
    embedders = sorted({r.embedder for r in runs if r.embedder})
    rounds = sorted({r.round for r in runs})
    span = f"round {rounds[0]}" if len(rounds) == 1 else f"rounds {rounds[0]}–{rounds[-1]}" if rounds else "no rounds"
    notes = [
        f"{plural(len(runs), 'finished run')}, {plural(len({r.agent for r in runs}), 'agent')}, "
        f"{plural(len(infos), 'task')}, {span}.",
        "Score = hidden-test metric of the best validation step of the best round "
        "(validation best when a task has no test). "
        "Diversity and academic rate are over the best round; rates and costs pool all rounds. "
        "Each table lists what its columns mean.",
        f"Diversity embedder: {', '.join(embedders) if embedders else 'none (no successful step)'}.",
    ]
    missing = [r.diversity_note for r in runs if r.diversity_note]
    if missing:
        notes.append(f"Diversity unavailable in {plural(len(missing), 'run')}: {missing[0]}.")
    if len(rounds) < 2:
        notes.append(
            "One round per agent and task: no paired comparison (run two or more rounds to tell a difference from "
            "noise)."
        )
    peers = sorted({r.agent for r in runs if r.agent.startswith("peer-")})
    if peers:
        notes.append(
            f"{', '.join(peers)}: the peers' released code, each next to our re-implementation of the same name "
            "without `peer-`; same model, steps, sandbox and scorer."
        )
    lost = [r for r in runs if gain_lost_on_test(r)]
    if lost:
        notes.append(
            f"{LOST} in {plural(len(lost), 'run')}: "
            + "; ".join(
                f"{r.task} · {r.agent} · round {r.round} (val {num(r.result.best_metric)} vs "
                f"{num(r.result.baseline)}, test {num(r.result.test_metric)} vs {num(r.baseline_test)})"
                for r in lost
            )
            + "."
        )
    return notes


def forgeable_note(results: Path) -> list[str]:
    """One line naming the tasks whose steps were scored next to code the agent could edit
    (`score_isolated: false` in their step records, docs/contracts.md "Scoring")."""
    tasks = set()
    for task_dir in task_folders(results):
        for record in (cell.run.step_record(1) for cell in cell_folders(results, task_dir.name)):
            try:
                isolated = json.loads(record.read_text()).get("score_isolated")
            except (OSError, ValueError, AttributeError):
                continue
            if isolated is False:
                tasks.add(task_dir.name)
                break
    if not tasks:
        return []
    return [
        f"Scores can be forged by the code they score in {plural(len(tasks), 'task')}: {', '.join(sorted(tasks))} "
        "(the evaluator shares a process with editable code; score_isolated: false)."
    ]


CSS = (
    "td.lost{background:#fff4e5;color:#8a4b00}dt{font-weight:600;margin-top:.3em}dd{margin-left:1.5em;color:#444}"
    "details.columns{font-size:13px;margin-bottom:1em}body{font-family:sans-serif;margin:2em;max-width:1400px}"
    "table{border-collapse:collapse;margin:1em 0;font-size:13px}td,th{border:1px solid #ccc;padding:3px 6px;"
    "text-align:right}th{background:#eee}td:first-child{text-align:left}figure{display:inline-block;margin:1em}"
)

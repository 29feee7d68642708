"""`python -m aiscientist rubric check RUBRIC.json` and `rubric score GRADED.json`.

`check` validates a PaperBench rubric and summarises it (exit 2 naming the node on a bad
file); `score` re-aggregates a PaperBench graded tree from its leaf scores and lists the
nodes whose stored score differs (exit 1 when any does).
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from pydantic import BaseModel
from rich.console import Console

from aiscientist.util.console import make_console
from bench.paper import rubric
from bench.paper.graded_tree import load_graded, rescore
from bench.paper.rubric import RubricError, RubricNode, path_label

NO_CATEGORY = "(none)"


class WeightAnomaly(BaseModel):
    path: str
    id: str
    problem: str


class RubricSummary(BaseModel):
    file: str
    nodes: int
    leaves: int
    depth: int
    duplicate_ids: int
    task_categories: dict[str, int]
    finegrained_categories: dict[str, int]
    anomalies: list[WeightAnomaly]


def summarize(root: RubricNode, file: str) -> RubricSummary:
    """Counts of a valid rubric, and the weights that make part of it count for nothing."""
    nodes = list(root.walk_paths())
    leaves = [node for _, node in nodes if node.is_leaf]
    ids = Counter(node.id for _, node in nodes)
    anomalies = []
    for path, node in nodes:
        if not node.is_leaf and all(child.weight == 0 for child in node.sub_tasks):
            problem = f"all {len(node.sub_tasks)} children have weight 0, so it always scores 0"
            anomalies.append(WeightAnomaly(path=path_label(path), id=node.id, problem=problem))
        elif path and node.weight == 0:
            anomalies.append(WeightAnomaly(path=path_label(path), id=node.id, problem="weight 0: it never counts"))
    return RubricSummary(
        file=file,
        nodes=len(nodes),
        leaves=len(leaves),
        depth=max(len(path) for path, _ in nodes),
        duplicate_ids=sum(n - 1 for n in ids.values() if n > 1),
        task_categories=_count(leaf.task_category for leaf in leaves),
        finegrained_categories=_count(leaf.finegrained_task_category for leaf in leaves),
        anomalies=anomalies,
    )


def _count(values) -> dict[str, int]:
    return dict(sorted(Counter(value or NO_CATEGORY for value in values).items()))


HELP = "check a PaperBench rubric or re-score a graded tree"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="rubric_command", required=True, metavar="ACTION")
    check = sub.add_parser("check", help="validate a PaperBench rubric.json and summarise it")
    check.add_argument("rubric", nargs="+", help="rubric.json file(s)")
    check.add_argument("--json", action="store_true", help="print the summaries as JSON lines")
    check.set_defaults(action=_check)
    score = sub.add_parser("score", help="re-score a PaperBench graded tree from its leaf scores")
    score.add_argument("graded", help="graded tree JSON (grade.json, expected_result.json, or a judge output)")
    score.add_argument("--json", action="store_true", help='print {"score": root, "mismatches": [...]}')
    score.set_defaults(action=_score)


def run(args: argparse.Namespace) -> int:
    try:
        return args.action(args, make_console(soft_wrap=True))
    except RubricError as err:
        make_console(stderr=True, soft_wrap=True).print(f"[red]error:[/red] {err}", highlight=False)
        return 2


def _check(args: argparse.Namespace, console: Console) -> int:
    for name in args.rubric:
        summary = summarize(rubric.load(name).root, name)
        if args.json:
            print(summary.model_dump_json())
            continue
        console.print(
            f"[green]ok[/green] {name}: {summary.nodes} nodes, {summary.leaves} leaves, depth {summary.depth}, "
            f"{summary.duplicate_ids} repeated ids",
            highlight=False,
        )
        console.print("  task categories: " + _counts(summary.task_categories), highlight=False)
        console.print("  fine-grained: " + _counts(summary.finegrained_categories), highlight=False)
        for anomaly in summary.anomalies:
            console.print(
                f"  [yellow]weight[/yellow] {anomaly.id!r} (at {anomaly.path}): {anomaly.problem}", highlight=False
            )
    return 0


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{name} {n}" for name, n in counts.items())


def _score(args: argparse.Namespace, console: Console) -> int:
    tree = load_graded(Path(args.graded))
    score, mismatches = rescore(tree)
    if args.json:
        print(json.dumps({"score": score, "mismatches": [m.model_dump() for m in mismatches]}))
    else:
        leaves = [node for _, node in tree.walk_paths() if node.is_leaf]
        console.print(
            f"{args.graded}: score {score:.6f} from {len(leaves)} leaves "
            f"({sum(not leaf.valid_score for leaf in leaves)} invalid); "
            f"{len(mismatches)} node(s) differ from the stored score",
            highlight=False,
        )
        for m in mismatches:
            console.print(
                f"  {m.id!r} (at {m.path}): stored {m.stored:.6f}, re-scored {m.computed:.6f}", highlight=False
            )
    return 1 if mismatches else 0

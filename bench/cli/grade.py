"""`python -m aiscientist grade SUBMISSION --paper bench/papers/<name>`."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console

from aiscientist.llm import ModelConfigError
from aiscientist.sandbox import BACKENDS, SandboxUnavailable
from aiscientist.util.console import make_console
from aiscientist.util.text import clean
from bench.paper.graded_tree import graded_json
from bench.paper.grading import SUMMARY_FILE, grade_submission, render_tree, write_output
from bench.paper.judge import OFFLINE
from bench.paper.judge_eval import JUDGE_EVAL_FILE, render, run_judge_eval
from bench.paper.reproduce import GRADE_FILE, isolated
from bench.paper.rubric import RubricError

HELP = "grade a paper-reproduction submission against a rubric"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("submission", nargs="?", help="the submission folder (with reproduce.sh at its root)")
    parser.add_argument("--paper", help="paper folder holding paper.md, addendum.md and rubric.json")
    parser.add_argument(
        "--judge-eval",
        metavar="DIR",
        help="instead: measure the judge's agreement with the expected grades of the JudgeEval cases under DIR",
    )
    parser.add_argument(
        "--papers", help="with --judge-eval: folder of <paper-id>/paper.md (default: 'papers' beside DIR's cases)"
    )
    parser.add_argument(
        "--code-dev", action="store_true", help="grade only Code Development leaves; skip the reproduction"
    )
    parser.add_argument(
        "--judge-model",
        default=OFFLINE,
        help="model for the judge (litellm name, scripted:PATH); 'offline' grades only check leaves (default)",
    )
    parser.add_argument(
        "--out",
        help="folder for grade.json, grade_summary.json and grade_reproduce.log (default: the submission "
        "folder); with --judge-eval, for judge_eval.json (default: DIR)",
    )
    parser.add_argument(
        "--timeout", type=float, help="time limit of reproduce.sh in seconds (default: the task's command_timeout_s)"
    )
    parser.add_argument("--max-depth", type=int, help="grade nodes at this depth (root = 0) as whole subtrees")
    parser.add_argument("--concurrency", type=int, default=4, help="leaves graded at once (default 4)")
    parser.add_argument(
        "--sandbox",
        choices=BACKENDS,
        default="auto",
        help="where reproduce.sh runs (default auto: bwrap, never the host; local runs it unisolated)",
    )


class UsageError(ValueError):
    """Options that do not go together."""


def run(args: argparse.Namespace) -> int:
    console = make_console()
    try:
        if args.max_depth is not None and args.max_depth < 1:
            raise UsageError("--max-depth must be at least 1")
        return _judge_eval(args, console) if args.judge_eval else _grade(args, console)
    except (UsageError, RubricError, SandboxUnavailable, ModelConfigError) as err:
        make_console(stderr=True, soft_wrap=True).print(f"[red]error:[/red] {err}")
        return 2


def _grade(args: argparse.Namespace, console: Console) -> int:
    if not args.submission or not args.paper:
        raise UsageError("give a SUBMISSION folder and --paper (or --judge-eval DIR)")
    sandbox = None if args.code_dev else isolated(args.sandbox)
    result = grade_submission(
        args.submission,
        args.paper,
        args.judge_model,
        args.code_dev,
        args.out,
        timeout_s=args.timeout,
        max_depth=args.max_depth,
        concurrency=args.concurrency,
        sandbox=sandbox,
    )
    console.print(render_tree(result.tree))
    repro = result.reproduction
    if repro is not None:
        state = repro.problem or f"exit {repro.returncode}"
        console.print(f"reproduction: {state}; {repro.duration_s:.1f}s; produced {len(repro.produced)} file(s)")
    console.print(
        f"[bold]score {result.score:.3f}[/bold] "
        f"({'valid' if result.valid else f'{result.leaves_invalid} invalid leaves'}); "
        f"judge {result.judge_model}: {result.prompt_tokens}+{result.completion_tokens} tokens, ${result.cost:.4f}"
    )
    console.print(f"wrote {result.grade_file} (PaperBench graded tree) and {SUMMARY_FILE} beside it")
    return 0


def _judge_eval(args: argparse.Namespace, console: Console) -> int:
    if args.submission or args.paper or args.code_dev or args.max_depth:
        raise UsageError("--judge-eval takes no SUBMISSION, --paper, --code-dev or --max-depth")
    result = run_judge_eval(
        Path(args.judge_eval),
        args.judge_model,
        Path(args.papers) if args.papers else None,
        args.concurrency,
        on_case=lambda case: console.print(f"graded {case.case}: root {case.judge_score:.3f}", markup=False),
        on_skip=lambda case, why: console.print(f"skipped {case}: {clean(why)}", markup=False),
    )
    console.print(render(result))
    # DIR holds untrusted cases: a planted link at an output name is removed, never written through
    out = Path(args.out or args.judge_eval)
    out.mkdir(parents=True, exist_ok=True)
    for case in result.cases:  # the judge's graded trees, to compare with the expected ones
        write_output(out, f"graded/{case.case}/{GRADE_FILE}", graded_json(case.tree).encode())
    write_output(out, JUDGE_EVAL_FILE, (result.model_dump_json(indent=2) + "\n").encode())
    console.print(f"wrote {out / JUDGE_EVAL_FILE} and the judge's graded trees in {out / 'graded'}", markup=False)
    return 0

"""`aiscientist solve TASK`: run the research loop (or `--resume RUN_DIR`)."""

from __future__ import annotations

import argparse
import tempfile
from contextlib import ExitStack
from pathlib import Path

from aiscientist.cli.common import add_selection_arguments, add_track_argument, default_run_dir, task_from_args
from aiscientist.cli.task_init import NOT_ISOLATED, add_init_arguments, initialise
from aiscientist.config import RunConfig, load_config
from aiscientist.records.paths import RUN_INFO, RUNS_HOME
from aiscientist.resources import CONFIGS_DIR, resolve_config
from aiscientist.sandbox import BACKENDS
from aiscientist.task import Task, TaskError, load_task
from aiscientist.util import notices
from aiscientist.util.console import make_console

console = make_console()
EXIT_MODEL_STOPPED = (
    3  # the model was unavailable past its patience (or failed model_error_limit times in a row); resumable
)

HELP = "run the AiScientist research loop on a task"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "task",
        nargs="?",
        help="a task.yaml, or an FML-bench task folder (not needed with --resume); with --run: your repository",
    )
    parser.add_argument("--model", help="litellm model name, 'offline', or 'scripted:PATH' (default: from the config)")
    parser.add_argument(
        "--steps",
        type=int,
        help="experiment steps (default: config, else the task's budget); with --resume, extends the budget",
    )
    parser.add_argument("--run-dir", type=Path, help=f"run folder (default: {RUNS_HOME}/<task>-<time>)")
    parser.add_argument(
        "--config",
        action="append",
        default=[],
        help="a RunConfig yaml file or a packaged config's name (flat, no_file_bus; repeatable; later wins; default "
        "is always read first)",
    )
    parser.add_argument(
        "--set",
        dest="sets",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override one setting, e.g. file_bus=false (repeatable)",
    )
    parser.add_argument("--resume", type=Path, metavar="RUN_DIR", help="continue an interrupted run")
    add_selection_arguments(parser)
    add_track_argument(parser)
    parser.add_argument(
        "--no-preflight",
        action="store_true",
        help="skip the checks before the first step (commands' programs and scripts exist, sandbox starts, model "
        "answers)",
    )
    parser.add_argument("--sandbox", choices=BACKENDS, help="experiment sandbox backend (default: from the config)")
    init = parser.add_argument_group(
        "your own repository in one command (as task init; --metric is then NAME:min|max; the generated task is kept "
        "in the run folder)"
    )
    add_init_arguments(init, required=False)


def run(args: argparse.Namespace) -> int:
    with ExitStack() as stack:
        return _run(args, stack)


def _generated_task(args: argparse.Namespace, config: RunConfig, stack: ExitStack) -> Task:
    """`solve REPO --run CMD --metric NAME:dir`: the task `task init` would write, its baseline
    measured; the file lives in a scratch folder while the run starts (the run folder keeps a copy)."""
    scratch = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="aisci-task-")))
    with console.status(f"measuring the baseline: {args.run} ..."):
        done = initialise(args, args.task, scratch / "task.yaml", config.sandbox)
    (scratch / "task.yaml").write_text(done.text(scratch / "task.yaml", absolute=True))
    console.print(f"baseline {done.draft.metric} = {done.baseline!r} ({done.draft.direction}); editable: "
                  f"{', '.join(done.draft.editable)}", soft_wrap=True, highlight=False)  # fmt: skip
    if done.draft.metric_source == "stdout":
        console.print(f"[yellow]note:[/] {NOT_ISOLATED}", soft_wrap=True)
    return load_task(scratch / "task.yaml")


def _run(args: argparse.Namespace, stack: ExitStack) -> int:
    from aiscientist.llm import ModelConfigError
    from aiscientist.orchestrator.progress import LiveProgress, summary_table
    from aiscientist.orchestrator.run import is_run_folder, solve
    from aiscientist.records.timing import process_started_at
    from aiscientist.tracking import parse_spec

    if args.steps is not None and args.steps < 1:
        raise TaskError("--steps", "steps", "must be at least 1")
    if args.resume is not None:
        if args.task or args.run:
            raise TaskError("--resume", "task", "give either TASK (or REPO --run) or --resume RUN_DIR, not both")
        if not is_run_folder(args.resume):
            raise TaskError(args.resume, "run_dir", f"not a run folder made by solve ({RUN_INFO} missing)")
        task, config, run_dir = None, None, args.resume
    else:
        if not args.task:
            raise TaskError("solve", "task", "a TASK (task.yaml or FML-bench folder) or --resume RUN_DIR is required")
        sets = [*args.sets, *([f"sandbox.backend={args.sandbox}"] if args.sandbox else [])]
        config = load_config([CONFIGS_DIR / "default.yaml", *(resolve_config(c) for c in args.config)], sets)
        if args.track:
            config = config.model_copy(update={"tracking": args.track})
        parse_spec(config.tracking)  # a bad value or a missing extra fails before the run starts
        task = _generated_task(args, config, stack) if args.run else task_from_args(args)
        run_dir = args.run_dir or default_run_dir(task)
        if run_dir.exists() and any(run_dir.iterdir()):
            raise TaskError(run_dir, "run_dir", "already exists and is not empty (use --resume to continue a run)")
        if not args.no_preflight:
            from aiscientist.orchestrator.preflight import preflight

            preflight(
                task, args.model or config.model, config.sandbox, config.models_file, config.preflight_model_timeout_s
            )
    try:
        with LiveProgress(console) as progress, notices.listening(progress.notice):
            result = solve(
                task, run_dir, config, model=args.model, steps=args.steps, progress=progress,
                started_at=process_started_at(),
            )  # fmt: skip
    except ModelConfigError as err:
        console.print(f"[red]error:[/red] {err}", soft_wrap=True)
        return 2
    except KeyboardInterrupt:
        console.print(
            "[yellow]interrupted[/yellow]: the run is saved; continue it with  python -m aiscientist solve --resume "
            f"{run_dir}",
            soft_wrap=True,
            highlight=False,
        )
        return 130
    console.print(summary_table(result, str(run_dir)))
    if result.stop_reason is not None and result.stop_reason.resumable:
        console.print(
            f"[yellow]stopped[/yellow]: the model failed ({result.stop_reason.value}: {result.stop_detail}); once it "
            f"works again, continue with  python -m aiscientist solve --resume {run_dir}",
            soft_wrap=True,
            highlight=False,
        )
        return EXIT_MODEL_STOPPED
    return 0 if result.steps_successful else 1

"""`external`: any command-line agent (option `command`, a shell string; `timeout_s`,
default 3600), run in `submission/` with a `run_experiment` program first on its PATH:
one counted step per call (as FML-bench counts Claude Code's), its result as JSON; exit 3
once the budget is spent. The task is in $AISCI_TASK_FILE, the budget in $AISCI_STEPS.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

from aiscientist.agent.context import RunContext
from aiscientist.agent.experiment_tool import step_result
from aiscientist.agent.outcome import Outcome, StopReason
from aiscientist.agent.registry import register_agent

WRAPPER = """#!/bin/sh
# Runs the task's experiment commands once through the experiment engine (one counted step).
exec {python} -m bench.agents.external {run_dir} {agent} {steps} "$*"
"""


class External:
    name = "external"
    needs_model = False

    def solve(self, ctx: RunContext) -> Outcome:
        command = ctx.options.get("command")
        if not command:
            raise ValueError(
                "agent external needs an option command=... "
                "(e.g. --option external.command='my-agent --task $AISCI_TASK_FILE')"
            )
        folder = ctx.ws.paths.agent_dir  # the agent's own files: bin/, brief.md, output.txt
        bin_dir = folder / "bin"
        bin_dir.mkdir(parents=True, exist_ok=True)
        wrapper = bin_dir / "run_experiment"
        wrapper.write_text(
            WRAPPER.format(
                python=shlex.quote(sys.executable),
                run_dir=shlex.quote(str(ctx.ws.paths.root)),
                agent=shlex.quote(ctx.agent),
                steps=ctx.steps,
            )
        )
        wrapper.chmod(0o755)
        task_file = folder / "brief.md"
        task_file.write_text(
            ctx.task.summary() + f"\n\nStep budget: {ctx.steps_left()} (each `run_experiment` call is one step)\n"
        )
        env = {
            **os.environ,
            "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
            "AISCI_TASK_FILE": str(task_file),
            "AISCI_STEPS": str(ctx.steps_left()),
        }
        env.update(ctx.ws.engine.env)
        timeout = float(ctx.options.get("timeout_s", 3600))
        with open(folder / "output.txt", "ab") as output:
            proc = subprocess.Popen(
                ["bash", "-c", command],
                cwd=ctx.submission,
                env=env,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait()
            return Outcome(stop=StopReason.WALL_TIME, detail=f"external agent timed out after {timeout:g}s")
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, 9)  # no background child outlives the agent
        return (
            Outcome(stop=StopReason.FINISHED)
            if code == 0
            else Outcome(stop=StopReason.AGENT_FAILED, detail=f"external agent exited {code}")
        )


def step_main(argv: list[str]) -> int:
    """`python -m bench.agents.external RUN_DIR AGENT STEPS HYPOTHESIS`."""
    from aiscientist.records.step import load_steps
    from aiscientist.workspace import Workspace

    run_dir, agent, steps, hypothesis = argv[0], argv[1], int(argv[2]), argv[3] if len(argv) > 3 else ""
    ws = Workspace.open(Path(run_dir))
    done = len(load_steps(ws.paths))
    if done >= steps:
        print(json.dumps({"error": f"step budget spent: {done} of {steps} steps used"}))
        return 3
    record = ws.engine.run_step(agent, hypothesis or "(external agent gave no hypothesis)")
    print(json.dumps(step_result(record, steps - done - 1)))
    return 0 if record.success else 1


if __name__ == "__main__":
    sys.exit(step_main(sys.argv[1:]))


# its own program's tools, plus this command on its PATH
register_agent("external", External, {"external": ("run_experiment",)})

"""peer-aide: AIDE's released library API (`aide.Experiment`, aideml 0.2.2) with its own
OpenAI client pointed at the run's model (`OPENAI_BASE_URL`), its own tree search and
prompts, and one swap: the Interpreter. AIDE's script is one editable file (option `file`,
default the first editable file); "executing" it writes that file through the bridge and
runs one counted step of our engine, whose report is the terminal output AIDE reviews.
AIDE's steps are our steps. Nothing AIDE writes runs in this process.

Run as `PEER_PYTHON run_aide.py BRIEF_JSON`.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from bridge_client import call, load_brief, task_text

HOW = "Each script you write is run and scored by the task's own commands and protected evaluator."


class BridgeInterpreter:
    """aide.interpreter.Interpreter's contract (`run`, `cleanup_session`) over our engine."""

    def __init__(self, target: str):
        self.target = target

    def run(self, code: str, reset_session: bool = True):
        from aide.interpreter import ExecutionResult

        started = time.monotonic()
        written = call("write", path=self.target, text=code)
        if written.get("error"):
            return ExecutionResult([written["error"]], time.monotonic() - started, "WriteRefused", {})
        answer = call("experiment", hypothesis=f"aide script for {self.target}")
        output = [answer.get("report") or answer.get("error", ""), "\n", answer.get("stderr", "")]
        failed = None if answer.get("success") else "ExperimentFailed"
        return ExecutionResult(output, time.monotonic() - started, failed, {} if failed else None)

    def cleanup_session(self) -> None:
        pass


def endpoint(brief: dict) -> str:
    """AIDE's model name: the endpoint's name for an OpenAI-compatible server."""
    name = brief["model"]["name"]
    return name.split("/", 1)[1] if name.startswith(("openai/", "hosted_vllm/")) else name


def main(brief_path: str) -> int:
    brief = load_brief(brief_path)
    folder = Path(os.environ["AISCI_PEER_DIR"])  # its own folder (the brief is read-only, elsewhere)
    model = brief["model"]
    if model.get("api_base"):
        os.environ["OPENAI_BASE_URL"] = model["api_base"]
    if model.get("api_key"):
        os.environ["OPENAI_API_KEY"] = model["api_key"]
    target = brief["options"].get("file") or brief["editable"][0]
    current = call("shell", command=f"cat -- '{target}'")
    if current.get("returncode") != 0:
        print(f"cannot read {target}: {current}")
        return 2
    os.chdir(folder)
    (folder / "data").mkdir(exist_ok=True)
    goal = (
        task_text(brief, HOW)
        + f"\nYour script replaces the file `{target}` of the repository; the other files stay as they are. "
        f"Its current content:\n```python\n{current['output']}\n```\n"
    )
    from aide import Experiment

    exp = Experiment(data_dir=str(folder / "data"), goal=goal, eval=f"{brief['metric']} ({brief['direction']})")
    for role in (exp.cfg.agent.code, exp.cfg.agent.feedback):
        role.model = endpoint(brief)
        if model.get("temperature") is not None:
            role.temp = model["temperature"]
    exp.cfg.agent.k_fold_validation = 1  # the task's evaluator scores on its own split
    exp.interpreter = BridgeInterpreter(target)
    solution = exp.run(steps=brief["steps"])
    print(f"aide best valid_metric (its own view, not a result): {solution.valid_metric}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))

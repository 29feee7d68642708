"""peer-mini-swe-agent: mini-swe-agent 2.x's released DefaultAgent with its released
text-based config (`mini_textbased.yaml`), its own litellm model class, and one swap:
the Environment, which sends every command through the bridge to our sandbox. The
command `run_experiment HYPOTHESIS` is our experiment engine (one counted step).

Run as `PEER_PYTHON run_mini_swe_agent.py BRIEF_JSON`.
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

import litellm
import yaml
from bridge_client import BUDGET_SPENT, call, load_brief, model_kwargs, task_text

os.environ.setdefault("MSWEA_SILENT_STARTUP", "1")
os.environ.setdefault("MSWEA_GLOBAL_CONFIG_DIR", str(Path(os.environ["HOME"]) / "mini-swe-agent"))

from minisweagent import package_dir  # noqa: E402 (its import reads the variables above)
from minisweagent.agents.default import DefaultAgent  # noqa: E402
from minisweagent.environments.local import LocalEnvironment  # noqa: E402
from minisweagent.exceptions import Submitted  # noqa: E402
from minisweagent.models import get_model  # noqa: E402

HOW = (
    'To evaluate the current code, run the command `run_experiment "<one-line hypothesis>"` on its own: '
    "it trains and scores the code with the task's protected evaluator and counts as one evaluation. "
    "When you are done, finish as the instructions say."
)


class BridgeEnvironment(LocalEnvironment):
    """LocalEnvironment's contract, but nothing runs here: the host runs it in its sandbox."""

    def execute(self, action: dict, cwd: str = "", *, timeout: int | None = None) -> dict:
        command = action.get("command", "")
        words = shlex.split(command) if command.strip().startswith("run_experiment") else []
        if words[:1] == ["run_experiment"]:
            answer = call("experiment", hypothesis=" ".join(words[1:]))
            text = answer.get("report") or answer.get("error", "")
            output = {"output": text + ("\n" + answer["stderr"] if answer.get("stderr") else ""), "exception_info": ""}
            output["returncode"] = 0 if answer.get("success") else 1
            if answer.get("steps_left", 1) <= 0:
                raise Submitted(
                    {"role": "exit", "content": text, "extra": {"exit_status": BUDGET_SPENT, "submission": ""}}
                )
        else:
            answer = call("shell", command=command)
            output = {"output": answer.get("output", answer.get("error", "")), "exception_info": ""}
            output["returncode"] = answer.get("returncode", -1)
        self._check_finished(output)
        return output


def main(brief_path: str) -> int:
    litellm.suppress_debug_info = True
    brief = load_brief(brief_path)
    config = yaml.safe_load((package_dir / "config" / "mini_textbased.yaml").read_text())
    model_config = {**config["model"], "model_class": "litellm_textbased", "cost_tracking": "ignore_errors"}
    model_config["model_kwargs"] = {**model_config.get("model_kwargs", {}), **model_kwargs(brief)}
    agent_config = {k: v for k, v in config["agent"].items() if k != "mode"}
    calls = int(brief["options"].get("model_calls", 10 * brief["steps"] + 10))
    trajectory = Path(os.environ["AISCI_PEER_DIR"], "trajectory.json")
    agent_config.update(step_limit=calls, cost_limit=0, output_path=trajectory)
    env = BridgeEnvironment(**config.get("environment", {}))
    agent = DefaultAgent(get_model(brief["model"]["name"], model_config), env, **agent_config)
    result = agent.run(task_text(brief, HOW))
    print(f"mini-swe-agent exit status: {result.get('exit_status')}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))

"""peer-openevolve: OpenEvolve 0.4.0's released library API (`run_evolution`) on one
editable file (option `file`, default the first editable file), with its own OpenAI
client pointed at the run's model. Its evaluation file is ours (`openevolve_evaluator.py`):
every program it evaluates, the initial one included, is one counted step of our engine,
so OpenEvolve runs `steps - 1` iterations after evaluating the initial program.

Run as `PEER_PYTHON run_openevolve.py BRIEF_JSON`.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from bridge_client import call, load_brief, stop_when_budget_spent, task_text
from openevolve.api import run_evolution
from openevolve.config import Config, LLMModelConfig

HOW = "Each program you propose is evaluated by the task's protected evaluator; combined_score is higher-better."
OPENAI_PREFIXES = ("openai/", "hosted_vllm/")


def endpoint_name(name: str) -> str:
    """The model's name at an OpenAI-compatible endpoint (OpenEvolve speaks only that protocol)."""
    for prefix in OPENAI_PREFIXES:
        if name.startswith(prefix):
            return name.removeprefix(prefix)
    return name


def main(brief_path: str) -> int:
    brief = load_brief(brief_path)
    folder = Path(os.environ["AISCI_PEER_DIR"])  # its own folder (the brief is read-only, elsewhere)
    target = brief["options"].get("file") or brief["editable"][0]
    os.environ["AISCI_OPENEVOLVE_FILE"] = target
    source = call("shell", command=f"cat -- '{target}'")
    if source.get("returncode") != 0:
        print(f"cannot read {target}: {source}")
        return 2
    program = folder / f"initial_program{Path(target).suffix}"
    program.write_text(source["output"])
    model = brief["model"]
    config = Config()
    # OpenEvolve's own 60 s gave up on every answer of a local model (70-90 s) and retried,
    # piling abandoned requests on a server that answers one at a time
    timeout = int(model.get("timeout_s") or config.llm.timeout)
    config.llm.models = [
        LLMModelConfig(
            name=endpoint_name(model["name"]),
            api_base=model.get("api_base") or "https://api.openai.com/v1",
            api_key=model.get("api_key") or os.environ.get("OPENAI_API_KEY") or "none",
            weight=1.0,
            timeout=timeout,
        )
    ]
    config.llm.timeout = timeout
    config.llm.temperature = model.get("temperature") if model.get("temperature") is not None else 0.7
    if model.get("max_tokens"):
        config.llm.max_tokens = int(model["max_tokens"])
    config.prompt.system_message = (
        "You are improving one file of a machine-learning code repository.\n\n"
        + task_text(brief, HOW)
        + f"\nThe program shown is the file {target}; the other files stay as they are."
    )
    config.evaluator.timeout = int(brief["options"].get("eval_timeout_s", 3600))
    config.evaluator.cascade_evaluation = False
    config.evaluator.max_retries = 0
    config.checkpoint_interval = 10**6
    evaluator = Path(__file__).resolve().parent / "openevolve_evaluator.py"
    stop_when_budget_spent()
    result = run_evolution(
        str(program),
        str(evaluator),
        config=config,
        iterations=max(1, brief["steps"] - 1),  # 0 would mean OpenEvolve's default
        output_dir=str(folder / "openevolve_output"),
        cleanup=False,
    )
    print(f"openevolve best combined_score (its own view, not a result): {result.best_score}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))

"""The orchestrator's prompts as a prefix cache sees them: between two drops of the recent-turn
window each decision's request extends the one before; what dropped turns said sits at the head."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "tests" / "fixtures" / "tiny" / "task.yaml"
EARLIER = "## Earlier specialist summaries"


def _orchestrator_requests(store: Path) -> list[list[dict]]:
    """The recorded orchestrator requests' messages, in the order they were made: by the decision
    the status's "Last call" names (the first decision's status has none)."""
    requests = [json.loads(path.read_text())["request"]["messages"] for path in store.rglob("*.json")]
    orchestrator = [m for m in requests if "ROLE: orchestrator" in m[0]["content"]]

    def last_call(messages: list[dict]) -> int:
        found = re.search(r"^Last call: \w+ \(decision (\d+)\)", messages[-1]["content"], re.M)
        return int(found.group(1)) if found else -1

    return sorted(orchestrator, key=last_call)


def test_each_decision_extends_the_last_until_the_window_drops_and_dropped_turns_stay_at_the_head(tmp_path):
    store, run_dir = tmp_path / "recorded", tmp_path / "run"
    done = subprocess.run(
        [sys.executable, "-m", "aiscientist", "--record", str(store), "solve", str(TINY), "--model", "offline"]
        + ["--steps", "10", "--run-dir", str(run_dir), "--set", "orchestrator.window_growth=3"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    requests = _orchestrator_requests(store)
    assert len(requests) >= 7
    extended = dropped = 0
    for before, after in zip(requests, requests[1:]):
        assert after[0] == before[0]  # the system prompt never changes
        if after[: len(before) - 1] == before[:-1]:
            extended += 1  # all but the status, which moved to the end of the newer request
            assert after[1] == before[1]
        else:
            dropped += 1
            assert EARLIER in after[1]["content"] and len(after) < len(before)
        assert "Earlier specialist" not in after[-1]["content"]  # the status no longer repeats them
    assert dropped >= 1 and extended >= 4 * dropped, (extended, dropped)  # grows to 6 turns, drops to 2

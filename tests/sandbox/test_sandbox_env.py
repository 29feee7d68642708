"""What sandboxed commands see of the host environment (an allowlist), that `python`
is always the evaluator's interpreter, and that captured output stays bounded."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from aiscientist.sandbox import get_sandbox
from aiscientist.sandbox.base import TAIL_CHARS, passed_env
from aiscientist.task import load_task
from tests.sandbox_backends import BACKENDS

SECRETS = {
    "DATABASE_URL": "postgres://admin:hunter2-db@db.internal:5432/prod",
    "MISTRAL_KEY": "planted-mistral-7f3a",
    "GITHUB_PAT": "ghp_planted0123456789",
    "SECRET_KEY": "planted-django-secret",
    "KAGGLE_KEY": "planted-kaggle-99",
    "LITELLM_MASTER_KEY": "sk-planted-litellm",
    "SLACK_WEBHOOK_URL": "https://hooks.slack.com/services/T0/B0/planted",
    "SENTRY_DSN": "https://planted@o0.ingest.sentry.io/1",
    "DB_PASS": "planted-db-pass",
    "https_proxy": "http://user:planted-proxy-pw@proxy:3128",
    "openai_api_key": "sk-planted-lowercase",
    "AWS_SECRET_ACCESS_KEY": "planted-aws",
    "HF_TOKEN": "hf_planted",
    "ANTHROPIC_API_KEY": "sk-ant-planted",
    "MY_SERVICE_TOKEN": "planted-service-token",
    "LC_API_TOKEN": "planted-lc-token",  # names a locale pattern (LC_*) let through
    "LC_PASSWORD": "planted-lc-password",
    "LANGUAGE": "planted lang:sk-9",  # a locale name, but no locale value
}
TINY = Path(__file__).parents[1] / "fixtures" / "tiny" / "task.yaml"


@pytest.mark.parametrize("backend", BACKENDS)
def test_no_planted_secret_reaches_experiment_code(
    tmp_path: Path, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("FML_CPU8_SEED", "7")
    monkeypatch.setenv("LC_ALL", "C.UTF-8")
    declared = passed_env(["FML_CPU8_SEED", "NOT_SET_ANYWHERE"])
    script = "import os, json; print(json.dumps(dict(os.environ)))"
    result = get_sandbox(backend).run([f"python -c '{script}'"], cwd=tmp_path, timeout=60, env=declared)
    assert result.ok, result.stderr_tail
    seen = result.stdout_tail
    leaked = [name for name, value in SECRETS.items() if value in seen or f'"{name}"' in seen]
    assert leaked == []
    assert '"FML_CPU8_SEED": "7"' in seen and "NOT_SET_ANYWHERE" not in seen  # declared on purpose
    assert '"LC_ALL": "C.UTF-8"' in seen  # locale comes through


def test_fml_cpu8_tasks_declare_the_variables_they_read() -> None:
    for task_file in sorted((Path(__file__).parents[2] / "bench" / "tasks").glob("*/task.yaml")):
        task = load_task(task_file)
        read = {
            name
            for source in task.repository.glob("*.py")
            for name in ("FML_CPU8_SEED", "FML_CPU8_SMOKE", "FML_CPU8_THREADS", "FML_CPU8_ADULT_CSV")
            if name in source.read_text()
        }
        assert read and read <= set(task.sandbox.pass_env), task_file


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_empty_path_entry_cannot_make_a_planted_python_the_evaluator(
    tmp_path: Path, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    planted = tmp_path / "python"
    planted.write_text("#!/bin/sh\necho HIJACKED\n")
    planted.chmod(0o755)
    monkeypatch.setenv("PATH", ":" + os.environ["PATH"] + ":.:relative/bin")
    result = get_sandbox(backend).run(["python -c 'print(6 * 7)'", "echo $PATH"], cwd=tmp_path, timeout=60)
    assert result.ok and "HIJACKED" not in result.stdout_tail and "42" in result.stdout_tail
    path = result.stdout_tail.strip().splitlines()[-1].split(":")
    assert all(entry.startswith("/") for entry in path), path


@pytest.mark.parametrize("backend", BACKENDS)
def test_half_a_gigabyte_of_output_is_counted_not_kept(tmp_path: Path, backend: str) -> None:
    size = 512 << 20
    result = get_sandbox(backend).run(
        [f"head -c {size} /dev/zero | tr '\\0' x; echo; echo the-end", "echo err >&2"],
        cwd=tmp_path,
        timeout=300,
    )
    assert result.ok, result.stderr_tail
    assert result.stdout_bytes == size + len("\nthe-end\n") and result.stderr_bytes == 4
    assert result.stdout_tail.endswith("x\nthe-end\n") and len(result.stdout_tail) <= TAIL_CHARS

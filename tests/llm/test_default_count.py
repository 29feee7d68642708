"""The default encoding counted without litellm (aiscientist/llm/default_count.py): every
rule equals litellm's own counter, and an offline run never imports litellm."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import litellm
from hypothesis import given, settings
from hypothesis import strategies as st

from aiscientist.llm import default_count
from aiscientist.llm.tokens import TokenCounter

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "tiny"
TEXT = st.text(alphabet=st.characters(codec="utf-8"), max_size=3000)
NAMES = st.from_regex(r"[a-z_]{1,12}", fullmatch=True)


def _schema(depth: int) -> st.SearchStrategy:
    leaf = st.one_of(
        st.fixed_dictionaries({"type": st.sampled_from(["string", "integer", "number", "boolean", "null", "any"])}),
        st.fixed_dictionaries({"type": st.sampled_from(["string", "integer"]), "enum": st.lists(NAMES, max_size=3)}),
        st.just("not a schema"),
    )
    if depth == 0:
        return leaf
    inner = _schema(depth - 1)
    return st.one_of(
        leaf,
        st.fixed_dictionaries({"type": st.just("array"), "items": inner}),
        st.builds(
            lambda props, required, text: (
                {"type": "object", "properties": props, "required": required} | ({"description": text} if text else {})
            ),
            st.dictionaries(NAMES, inner, max_size=3),
            st.lists(NAMES, max_size=2),
            st.sampled_from(["", "what it holds", "ünï ✓"]),
        ),
    )


TOOL = st.builds(
    lambda name, description, parameters: {
        "type": "function",
        "function": {"name": name, "parameters": parameters} | ({"description": description} if description else {}),
    },
    st.one_of(NAMES, st.just("")),
    st.one_of(st.just(""), TEXT),
    _schema(2),
)


@settings(max_examples=60, deadline=None)
@given(text=st.one_of(TEXT, st.text(alphabet="ab <|endoftext|>\n .", min_size=900, max_size=5000)))
def test_a_text_counts_as_litellm_counts_it(text: str) -> None:
    assert default_count.text_tokens(text) == litellm.token_counter(model="", text=text)


@settings(max_examples=60, deadline=None)
@given(
    messages=st.lists(
        st.fixed_dictionaries(
            {"role": st.sampled_from(["system", "user", "assistant", "tool"]), "content": st.one_of(st.none(), TEXT)},
            optional={
                "name": NAMES,
                "tool_call_id": NAMES,
                "tool_calls": st.lists(
                    st.builds(
                        lambda name, arguments: {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": name, **arguments},
                        },
                        NAMES,
                        st.one_of(st.just({}), st.builds(lambda text: {"arguments": text}, TEXT)),
                    ),
                    max_size=2,
                ),
            },
        ),
        min_size=1,
        max_size=4,
    ),
    tools=st.lists(TOOL, max_size=3),
)
def test_a_request_counts_as_litellm_counts_it(messages: list[dict], tools: list[dict]) -> None:
    assert TokenCounter("").request(messages, tools) == litellm.token_counter(
        model="", messages=messages, tools=tools or None
    )


def test_every_request_of_an_offline_run_counts_as_litellm_counts_it_and_litellm_is_never_imported(
    tmp_path: Path,
) -> None:
    task, store = tmp_path / "task", tmp_path / "recorded"
    shutil.copytree(FIXTURE, task)
    run = [sys.executable, "-X", "importtime", "-m", "aiscientist", "--record", str(store)]
    done = subprocess.run(
        [*run, "solve", str(task / "task.yaml"), "--model", "offline", "--steps", "2"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=task,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert "tiktoken" in imported and "aiscientist.llm.tokens" in imported
    assert not {name for name in imported if re.match(r"litellm(\.|$)", name)}
    requests = [json.loads(path.read_text())["request"] for path in store.rglob("*.json")]
    roles = {re.search(r"^ROLE: (\w+)", r["messages"][0]["content"], re.M).group(1) for r in requests}  # type: ignore[union-attr]
    assert {"orchestrator", "implementation"} <= roles
    for request in requests:
        messages, tools = request["messages"], request.get("tools") or []
        assert TokenCounter("").request(messages, tools) == litellm.token_counter(
            model="", messages=messages, tools=tools or None
        )

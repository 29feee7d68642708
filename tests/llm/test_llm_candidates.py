"""Finding and perturbing tunable literals (aiscientist/candidates.py)."""

from __future__ import annotations

import ast
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from aiscientist.llm.candidates import find_candidates, perturb, propose_changes

SOURCE = """import argparse

LEARNING_RATE = 3e-4
SEED = 1234
hidden: int = 128
NAME = "model"

def build(width, depth=4, *, dropout: float = 0.5, debug=False):
    return Net(width, momentum=0.9, bias=True, scale=0)

parser = argparse.ArgumentParser()
parser.add_argument("--batch-size", type=int, default=64)
parser.add_argument("--seed", type=int, default=7)
parser.add_argument("--use-ema", action="store_true", default=False)
parser.add_argument("--log-interval", type=int, default=10)
hidden_dim, logit_scale = 64, 2.0
HIDDEN_DIM = 256
out = torch.cat(parts, dim=1)
json.dump(result, handle, indent=1)
"""


def test_finds_constants_defaults_and_flags_but_not_bookkeeping() -> None:
    found = {(c.name, c.kind, c.value) for c in find_candidates(SOURCE)}
    assert found == {
        ("LEARNING_RATE", "number", "3e-4"),
        ("hidden", "number", "128"),
        ("depth", "number", "4"),
        ("dropout", "number", "0.5"),
        ("momentum", "number", "0.9"),
        ("bias", "bool", "True"),
        ("batch_size", "number", "64"),
        ("use_ema", "bool", "False"),
        ("HIDDEN_DIM", "number", "256"),
    }  # seeds, debug flags, logging, shapes, I/O settings, zeros and strings are left alone


def test_changes_are_exact_unique_edits_that_keep_the_code_valid() -> None:
    for seed in range(5):
        for change in propose_changes(SOURCE, random.Random(seed), n=10):
            assert SOURCE.count(change.old) == 1 and change.old != change.new
            edited = SOURCE.replace(change.old, change.new)
            ast.parse(edited)
            assert change.after in change.new and change.before in change.old
    changes = {c.name: c for c in propose_changes(SOURCE, random.Random(0), n=10)}
    assert changes["use_ema"].new.endswith("default=True)") and changes["bias"].after == "False"
    assert changes["momentum"].after in ("0.45", "0.95")  # a fraction never crosses 1
    assert changes["LEARNING_RATE"].after in ("1.5e-4", "6e-4")  # scientific notation kept
    assert changes["depth"].after in ("2", "8")


def test_same_seed_same_proposals_and_exclusions() -> None:
    a = propose_changes(SOURCE, random.Random(42), n=3)
    assert a == propose_changes(SOURCE, random.Random(42), n=3)
    rest = propose_changes(SOURCE, random.Random(42), n=10, exclude={c.name for c in a})
    assert not {c.name for c in rest} & {c.name for c in a} and len(rest) == 6


def test_repeated_lines_are_skipped_and_yaml_is_read() -> None:
    twice = "def f():\n    return g(lr=0.1)\n\ndef h():\n    return g(lr=0.1)\n"
    assert len(find_candidates(twice)) == 2
    assert all(perturb(twice, c, random.Random(0)) is None for c in find_candidates(twice))
    yaml_text = "optimizer:\n  lr: 0.01   # step size\n  nesterov: true\nseed: 3\nname: run\n"
    changes = {c.name: c for c in propose_changes(yaml_text, random.Random(1), n=5)}
    assert set(changes) == {"lr", "nesterov"}
    assert changes["lr"].old == "  lr: 0.01   # step size" and changes["nesterov"].new == "  nesterov: false"


@settings(max_examples=60, deadline=None)
@given(
    name=st.from_regex(r"[a-z][a-z_]{0,8}", fullmatch=True),
    value=st.floats(min_value=1e-6, max_value=1e6, allow_nan=False),
)
def test_any_float_constant_is_perturbed_to_a_different_valid_float(name: str, value: float) -> None:
    source = f"{name}_x = {value!r}\n"
    [change] = propose_changes(source, random.Random(0))
    new_value = ast.literal_eval(change.new.split("=")[1].strip())
    assert isinstance(new_value, float) and new_value > 0 and new_value != value

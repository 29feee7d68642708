"""The offline policy's search: no repeats, both directions, larger effects first."""

from __future__ import annotations

import random
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from aiscientist.llm.facts import task_facts
from aiscientist.llm.offline.search import Edit, Try, fixed_names, next_change, options_of, score, undo
from aiscientist.task import Task

SOURCE = "LR = 0.1\nEPOCHS = 40\nDECAY = 0.9\nUSE_BIAS = True\n"
PATH = "submission/train.py"


def pick(contents: dict[str, str], name: str, up: bool) -> Edit:
    return next(e for e in options_of(contents) if e.name == name and e.up == up)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 50), st.one_of(st.none(), st.floats(0, 2))), max_size=12), st.integers(0, 10**6)
)
def test_never_proposes_a_value_a_literal_already_held(history: list[tuple[int, float | None]], seed: int) -> None:
    """Whatever was tried, kept or reverted, the next change is new: its literal never
    held the proposed value in this run (so no diff is tried twice)."""
    contents = {PATH: SOURCE}
    runs: list[tuple[Edit | None, float | None]] = []
    for choice, metric in history:
        options = options_of(contents)
        edit = options[choice % len(options)]
        runs.append((edit, metric))
        done = score(runs, "min", 1.0)
        contents[PATH] = contents[PATH].replace(edit.old, edit.new, 1)
        if not done[-1].kept:
            back = undo(contents, edit)
            assert back is not None
            contents[PATH] = contents[PATH].replace(back.old, back.new, 1)
    done = score(runs, "min", 1.0)
    proposal = next_change(contents, done, random.Random(seed))
    held = {(e.key, v) for e, _ in runs for v in (e.before, e.after)}
    if proposal is not None:
        assert (proposal.key, proposal.after) not in held
        assert all((proposal.path, proposal.old, proposal.new) != (e.path, e.old, e.new) for e, _ in runs)


def test_a_direction_that_did_not_help_is_followed_by_the_other() -> None:
    contents = {PATH: "LR = 0.1\n"}
    up = pick(contents, "LR", True)
    done = score([(up, 1.3)], "min", 1.0)  # worse: reverted
    proposal = next_change(contents, done, random.Random(0))
    assert proposal is not None and (proposal.before, proposal.after) == ("0.1", "0.05")
    # and after both directions, nothing is left for this literal
    down = proposal
    assert next_change(contents, score([(up, 1.3), (down, 1.1)], "min", 1.0), random.Random(0)) is None


def test_a_direction_that_helped_is_continued() -> None:
    contents = {PATH: SOURCE}
    down = pick(contents, "LR", False)
    contents[PATH] = contents[PATH].replace(down.old, down.new)
    done = score([(down, 0.5)], "min", 1.0)
    proposal = next_change(contents, done, random.Random(5))
    assert proposal is not None and (proposal.name, proposal.before, proposal.after) == ("LR", "0.05", "0.025")


@settings(max_examples=40, deadline=None)
@given(st.floats(0.001, 1.0), st.floats(0.001, 1.0), st.integers(0, 10**6))
def test_larger_observed_effects_come_first(effect_a: float, effect_b: float, seed: int) -> None:
    """Two literals tried once, neither helped: the one whose change moved the metric
    more is explored again (in the other direction) first."""
    contents = {PATH: "A = 0.5\nB = 0.5\nFLAG = True\n"}
    a, b, flag = (
        pick(contents, "A", True),
        pick(contents, "B", True),
        next(e for e in options_of(contents) if e.name == "FLAG"),
    )
    metric_a, metric_b = 1.0 + effect_a, 1.0 + effect_b  # effects 1e-19 apart can give the same metric
    done = score([(a, metric_a), (b, metric_b), (flag, 1.0)], "min", 1.0)
    proposal = next_change(contents, done, random.Random(seed))
    assert proposal is not None and not proposal.up
    if metric_a != metric_b:
        assert proposal.name == ("A" if metric_a > metric_b else "B")


def test_untried_literals_before_second_directions_and_failures_count_as_no_effect() -> None:
    contents = {PATH: SOURCE}
    first = pick(contents, "EPOCHS", True)
    done = score([(first, None)], "min", 1.0)
    assert done == [Try(first, None, None)] and not done[0].kept
    proposal = next_change(contents, done, random.Random(1))
    assert proposal is not None and proposal.name != "EPOCHS"


def test_an_option_the_run_command_sets_is_never_changed() -> None:
    """`python train.py --max-steps 200` overrides `default=50`: changing that default changes nothing."""
    source = (
        "import argparse\np = argparse.ArgumentParser()\np.add_argument('--max-steps', type=int, default=50)\n"
        "p.add_argument('--lr', type=float, default=0.1)\n"
    )
    task = Task(
        name="t",
        repository=Path("."),
        metric={"dataset": "d", "name": "loss"},
        commands=["python train.py --max-steps=200"],
    )
    facts = task_facts(task, [PATH])
    assert facts["fixed_flags"] == ["max_steps"]
    fixed = fixed_names(facts)
    assert {e.name for e in options_of({PATH: source})} == {"max_steps", "lr"}
    assert {e.name for e in options_of({PATH: source}, fixed)} == {"lr"}
    assert next_change({PATH: source}, [], random.Random(0), fixed).name == "lr"


def test_command_line_options_come_before_constants_and_helper_keywords() -> None:
    """Untried literals: what the author exposed to tuning (an option, then a constant) before a helper's keyword."""
    source = (
        "def init(w, scale=2.0):\n    return w * scale\n\nMOMENTUM = 0.5\n\nimport argparse\n"
        "p = argparse.ArgumentParser()\np.add_argument('--lr', type=float, default=0.1)\n"
    )
    picked = []
    contents = {PATH: source}
    for seed in range(3):
        edit = next_change(contents, [Try(e, 1.0, 0.0) for e in picked], random.Random(seed))
        picked.append(edit)
        contents = {PATH: contents[PATH].replace(edit.old, edit.new)}
    assert [e.name for e in picked] == ["lr", "MOMENTUM", "scale"]
    assert [e.rank for e in options_of({PATH: source}) if e.name == "scale"] == [2, 2]


def test_a_value_without_room_to_move_is_never_a_change() -> None:
    """0.999999 up is 0.9999995, written 0.999999 again: proposing it would measure unchanged code."""
    edits = options_of({PATH: "MOMENTUM = 0.999999\n"})
    assert [(e.before, e.after) for e in edits] == [("0.999999", "0.499999")]

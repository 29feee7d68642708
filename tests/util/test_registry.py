"""One registry style for every seam (aiscientist/util/registry.py): entries by name in order,
a clear error naming the known entries, a taken name refused unless replaced on purpose."""

from __future__ import annotations

import pytest

from aiscientist.util.registry import Registry


class UnknownThing(LookupError):
    pass


def test_entries_listed_by_name_whatever_the_registration_order_and_an_unknown_name_lists_them() -> None:
    things: Registry[int] = Registry("thing", UnknownThing)
    assert things.register("b", 2) == 2 and things.register("a", 1) == 1
    assert things.names() == ["a", "b"] and list(things) == ["a", "b"] and things.values() == [1, 2]
    assert things.get("a") == 1 and "a" in things and "c" not in things
    with pytest.raises(UnknownThing, match="unknown thing 'c'; choose one of a, b"):
        things.get("c")


def test_a_taken_name_is_refused_the_same_entry_again_is_not() -> None:
    things: Registry[str] = Registry("thing")
    things.register("a", "one")
    things.register("a", "one")  # a module imported twice registers the same entry again
    with pytest.raises(ValueError, match="another thing is already registered as 'a'"):
        things.register("a", "two")
    things.register("a", "two", replace=True)
    assert things.get("a") == "two"
    with pytest.raises(LookupError, match="unknown thing 'b'; choose one of a"):
        things.get("b")

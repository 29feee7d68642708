"""What the offline policy searches over and how it picks the next change.

A change sets one candidate literal (`aiscientist.llm.candidates`) to a new value. Each
change it makes is named in its experiment's hypothesis by a marker line
`CHANGE {json}`; an experiment result (a tool result, or an entry of logs/exp_log.md)
pairs that marker with the metric it got. From those tries `next_change` picks:

1. never a change already tried, nor a value the literal already held in this run;
2. first, going on in the direction of a change that set a new best;
3. then, a literal not tried yet (a seeded order, direction seeded);
4. then, the other direction of a literal whose tries did not help;
within a tier, literals with the larger observed effect (|metric delta|) first, then command-line
options and config keys, then assigned constants, then keywords of calls and functions
(`Candidate.rank`). A person's note `try NAME=VALUE` passed on by the orchestrator comes before
all of these (`guided_change`).
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, field

from aiscientist.llm.candidates import find_candidates, perturb

MARK = "CHANGE "
NUMBER = r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|nan|inf"


@dataclass(frozen=True)
class Edit:
    path: str
    name: str
    line: int
    before: str
    after: str
    old: str = field(default="", compare=False)  # the exact line before and after
    new: str = field(default="", compare=False)
    rank: int = field(default=2, compare=False)  # the candidate's: options and constants before call keywords

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.path, self.name, self.line)

    @property
    def up(self) -> bool | None:
        try:
            return float(self.after) > float(self.before)
        except ValueError:
            return None  # a flag

    def marker(self) -> str:
        """Short enough to survive a clipped hypothesis (no line texts)."""
        return MARK + json.dumps(
            {"path": self.path, "name": self.name, "line": self.line, "before": self.before, "after": self.after},
            sort_keys=True,
        )

    def args(self) -> dict[str, str]:
        return {"path": self.path, "old": self.old, "new": self.new}

    @property
    def what(self) -> str:
        return f"{self.name} {self.before} -> {self.after} in {self.path}"


@dataclass(frozen=True)
class Try:
    edit: Edit | None
    metric: float | None  # None: the run failed
    gain: float | None  # improvement over the best before it (> 0: a new best)

    @property
    def kept(self) -> bool:
        return self.gain is not None and self.gain > 0


def parse_marker(text: str) -> Edit | None:
    start = text.rfind(MARK)
    if start < 0:
        return None
    try:
        data, _ = json.JSONDecoder().raw_decode(text, start + len(MARK))
        return Edit(**data)
    except (ValueError, TypeError):
        return None


def outcome(result: str) -> float | None:
    """The metric of a result (JSON `success`/`metric`, or text `success: true; metric: X`); None: failed."""
    try:
        data = json.loads(result)
    except json.JSONDecodeError:
        data = None
    if isinstance(data, dict):
        metric = data.get("metric")
        return float(metric) if data.get("success") and isinstance(metric, (int, float)) else None
    match = re.search(rf"\bsuccess\W{{0,3}}\s*true\W+metric\W{{0,3}}\s*({NUMBER})", result, re.I)
    return float(match.group(1)) if match else None


def log_runs(text: str) -> list[tuple[Edit | None, float | None]]:
    """(change, metric) per `[step NNNN]` entry of an experiment log."""
    blocks = re.split(r"^(?=\[step \d+\] )", text, flags=re.M)
    return [(parse_marker(b.split("\n", 1)[0]), outcome(b)) for b in blocks if b.startswith("[step ")]


def score(runs: list[tuple[Edit | None, float | None]], direction: str | None, baseline: float | None) -> list[Try]:
    """Each run's gain over the best before it (baseline included); with no reference a success is a new best."""
    sign = -1.0 if direction == "min" else 1.0
    best, out = baseline, []
    for edit, metric in runs:
        gain = None
        if metric is not None and metric == metric:  # not NaN
            gain = float("inf") if best is None else sign * (metric - best)
            if gain > 0:
                best = metric
        out.append(Try(edit, metric, gain))
    return out


def next_change(
    contents: dict[str, str], tries: list[Try], rng: random.Random, fixed: frozenset[str] = frozenset()
) -> Edit | None:
    """See the module docstring; None when no change is left. `fixed`: names the run command sets."""
    done = [t for t in tries if t.edit is not None]
    held: dict[tuple[str, str, int], set[str]] = {}
    for t in done:
        held.setdefault(t.edit.key, set()).update((t.edit.before, t.edit.after))
    options: dict[tuple[str, str, str], tuple[tuple[int, float, float], Edit]] = {}
    for edit in options_of(contents, fixed):
        if edit.after not in held.get(edit.key, ()):
            mine = [t for t in done if t.edit.key == edit.key]
            order = (*_rank(mine, edit), edit.rank, rng.random())
            options.setdefault((edit.path, edit.old, edit.new), (order, edit))
    return min(options.values(), key=lambda o: o[0])[1] if options else None


GUIDED = re.compile(r"\btry\s+([A-Za-z_]\w*)\s*=\s*([^\s,;]+)", re.I)


def guided_change(contents: dict[str, str], text: str) -> Edit | None:
    """The change a person's note names (`try NAME=VALUE`, the first such in `text`): set the
    candidate literal NAME (as written in the code) to VALUE; None when no note names one."""
    for name, value in GUIDED.findall(text):
        for path in sorted(contents):
            for cand in find_candidates(contents[path]):
                line = contents[path].splitlines()[cand.line - 1]
                if cand.name == name and cand.value != value and contents[path].count(line) == 1:
                    new = line[: cand.start] + value + line[cand.end :]
                    return Edit(path, name, cand.line, cand.value, value, line, new)
    return None


def fixed_names(facts: dict) -> frozenset[str]:
    """The names a change must leave alone: the options the task's commands set (see `facts.fixed_flags`)."""
    return frozenset(facts.get("fixed_flags") or ())


def options_of(contents: dict[str, str], fixed: frozenset[str] = frozenset()) -> list[Edit]:
    """Each candidate up and down (flags toggled), but none named in `fixed`."""
    out = []
    for path in sorted(contents):
        for cand in (c for c in find_candidates(contents[path]) if c.name not in fixed):
            for up in (True, False) if cand.kind == "number" else (None,):
                change = perturb(contents[path], cand, random.Random(0), up)
                if change is not None:
                    out.append(
                        Edit(path, cand.name, cand.line, change.before, change.after, change.old, change.new, cand.rank)
                    )
    return out


def identify(contents: dict[str, str], path: str, old: str, new: str) -> Edit | None:
    """The change that edit (`old` -> `new` in `path`) makes to `contents`, if it sets one candidate."""
    return next((e for e in options_of({path: contents.get(path, "")}) if (e.old, e.new) == (old, new)), None)


def undo(contents: dict[str, str], edit: Edit) -> Edit | None:
    """The exact edit that sets `edit`'s literal back, if the file still holds its new value."""
    for cand in find_candidates(contents.get(edit.path, "")):
        if (cand.name, cand.line, cand.value) == (edit.name, edit.line, edit.after):
            line = contents[edit.path].splitlines()[cand.line - 1]
            if contents[edit.path].count(line) == 1:
                return Edit(
                    edit.path,
                    edit.name,
                    edit.line,
                    edit.after,
                    edit.before,
                    line,
                    line[: cand.start] + edit.before + line[cand.end :],
                )
    return None


def revert_last(contents: dict[str, str], tries: list[Try]) -> Edit | None:
    """The edit undoing the last try if it set no new best and its file still holds it (applied to `contents`)."""
    last = tries[-1] if tries else None
    back = undo(contents, last.edit) if last is not None and not last.kept and last.edit is not None else None
    if back is not None:
        contents[back.path] = contents[back.path].replace(back.old, back.new, 1)
    return back


def _rank(mine: list[Try], edit: Edit) -> tuple[int, float]:
    if not mine:
        return (1, 0.0)
    effect = max((abs(t.gain) for t in mine if t.gain is not None and t.gain != float("inf")), default=0.0)
    last = mine[-1]
    if last.kept and last.edit is not None and last.edit.up == edit.up:
        return (0, -effect)
    return (2, -effect)


def strip_line_numbers(text: str) -> str:
    """Undo `  12\\t...` / `12: ...` / `12| ...` line numbering if every line has it."""
    lines = text.splitlines(keepends=True)
    pattern = re.compile(r"^\s*\d+(?:\t|: |\| |:|\|)")
    if lines and all(pattern.match(line) or not line.strip() for line in lines):
        return "".join(pattern.sub("", line, count=1) for line in lines)
    return text

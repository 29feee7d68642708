"""The edit format the search agents ask for, its parser, and the offline policy they share.

An answer is a short plan, then SEARCH/REPLACE blocks, each under a line naming the
editable file it changes (every editable file may change). The offline policy reads only
the FACTS line: the parent's files, the operator and the earlier tries (each try's
`CHANGE` marker and metric), and answers with one literal changed in that format.
"""

from __future__ import annotations

from typing import Any

from aiscientist.llm.offline import PolicyContext, PolicyReply, search
from aiscientist.llm.offline.backend import BANNER
from aiscientist.records.paths import SUBMISSION

SEARCH, DIVIDER, REPLACE = "<<<<<<< SEARCH", "=======", ">>>>>>> REPLACE"
FRESH_OPERATORS = frozenset({"draft"})  # a new approach: a blind change, not a guided one

FORMAT = f"""
Answer with a short plan (2-5 sentences), then one or more edit blocks. Each block sits
under a line naming the editable file it changes (e.g. `train.py`) and is:
{SEARCH}
exact lines of the current file
{DIVIDER}
their replacement
{REPLACE}
The SEARCH part must match the current file exactly once. Edit any editable file.
"""


def _path_of(line: str, files: dict[str, str]) -> str | None:
    name = line.strip().strip("`*#: ").removeprefix("File:").strip().strip("`").removeprefix(SUBMISSION + "/")
    return name if name in files else None


def apply_edits(files: dict[str, str], answer: str) -> tuple[dict[str, str], int, list[str]]:
    """(new files, edits applied, problems): blocks whose SEARCH text is missing are skipped."""
    out, applied, problems = dict(files), 0, []
    path: str | None = None
    lines, i = answer.splitlines(), 0
    while i < len(lines):
        line = lines[i]
        if line.strip() != SEARCH:
            path = _path_of(line, files) or path
            i += 1
            continue
        old, new, j = [], [], i + 1
        while j < len(lines) and lines[j].strip() != DIVIDER:
            old.append(lines[j])
            j += 1
        j += 1
        while j < len(lines) and lines[j].strip() != REPLACE:
            new.append(lines[j])
            j += 1
        i = j + 1
        before, after = "\n".join(old), "\n".join(new)
        if path is None:
            problems.append("an edit block names no editable file")
        elif not before or out[path].count(before) != 1:
            problems.append(f"the SEARCH text of an edit to {path} does not occur exactly once")
        else:
            out[path], applied = out[path].replace(before, after, 1), applied + 1
    return out, applied, problems


def edit_block(path: str, old: str, new: str) -> str:
    return f"{path}\n{SEARCH}\n{old}\n{DIVIDER}\n{new}\n{REPLACE}"


def tries_of(facts: dict[str, Any]) -> list[search.Try]:
    runs = []
    for change, metric in facts.get("tries") or []:
        try:
            edit = search.Edit(**change) if isinstance(change, dict) else None
        except TypeError:
            edit = None
        runs.append((edit, metric if isinstance(metric, (int, float)) else None))
    return search.score(runs, facts.get("direction"), facts.get("baseline"))


def offline_policy(ctx: PolicyContext) -> PolicyReply:
    """One literal of the parent's files: blind for a fresh approach, else `search.next_change`."""
    files = ctx.facts.get("files")
    if not isinstance(files, dict) or not files:
        return PolicyReply(f"{BANNER} The facts carry no files to change.")
    operator = str(ctx.facts.get("operator", ""))
    tries = tries_of(ctx.facts)
    rng = ctx.rng(operator, ctx.facts.get("node"), len(tries))
    if operator in FRESH_OPERATORS:
        options = search.options_of(files)
        edit = rng.choice(options) if options else None
    else:  # siblings of one parallel batch see the same facts: the k-th takes the k-th pick
        edit = None
        for _ in range(int(ctx.facts.get("sibling") or 0) + 1):
            edit = search.next_change(files, tries, rng)
            tries = [*tries, search.Try(edit, None, None)] if edit is not None else tries
    if edit is None:
        return PolicyReply(f"{BANNER} No tunable literal is left to change; the code is run as it is.")
    plan = f"{BANNER} {operator}: {edit.what} (a blind change of one literal).\n{edit.marker()}"
    return PolicyReply(f"{plan}\n\n{edit_block(edit.path, edit.old, edit.new)}")

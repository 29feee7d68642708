"""The offline policy of single-conversation agents.

`solo` (any role without its own policy; AiScientist's flat arm registers it for its role): read the editable files,
then change one literal (`search.next_change`), run an experiment whose hypothesis
carries the change's marker and - if it keeps only what helps - revert a change that set
no new best; until the step budget is spent. A baseline registers its own policy from its
module, often `solo` with other switches (`revert`, `bash`).
"""

from __future__ import annotations

import re
from typing import Any

import aiscientist.llm.offline.search as search
from aiscientist.llm.offline.backend import BANNER, Exchange, PolicyContext, PolicyReply, register_role_policy
from aiscientist.records.paths import in_submission, submission_rel
from aiscientist.util.paging import next_start

HEREDOC = "AISCI_EOF"
Call = tuple[str, dict[str, Any]]


def editable(ctx: PolicyContext) -> list[str]:
    return [f for f in ctx.facts.get("editable") or [] if not any(ch in f for ch in "*?[")]


def tries(ctx: PolicyContext, runs: list[tuple[search.Edit | None, float | None]]) -> list[search.Try]:
    return search.score(runs, ctx.facts.get("direction"), ctx.facts.get("baseline"))


def read_first(ctx: PolicyContext, paths: list[str], content: str) -> PolicyReply | None:
    """The next page of each of `paths` not read whole yet (all in one turn), or None when all were read or tried."""
    todo = unread_calls(ctx, paths)
    return PolicyReply(f"{BANNER} {content}", todo) if todo else None


def solo(ctx: PolicyContext, revert: bool = True, bash: bool = False) -> PolicyReply:
    runs = ctx.calls_to("run_experiment")
    missing = {"run_experiment", "bash" if bash else "edit_file"} - ctx.tool_names
    if missing:
        return ctx.finish(f"{BANNER} No {', '.join(sorted(missing))} tool offered; nothing to do.")
    limit = int(ctx.facts.get("steps_budget") or ctx.max_steps)
    if len(runs) >= limit or (runs and runs[-1].failed and "budget" in (runs[-1].result or "")):
        return ctx.finish(
            f"{BANNER} The step budget is spent ({len(runs)} experiments); the best validated step is kept."
        )
    files = editable(ctx)
    if not files:  # a paper task: this policy cannot write a reproduction, only run what is there
        if runs:
            return ctx.finish(f"{BANNER} Nothing more the offline policy can do without editable files.")
        return PolicyReply(
            "Running the task's commands on the submission as it is.",
            [("run_experiment", {"hypothesis": "run the submission unchanged"})],
        )
    contents = replay(ctx)
    unread = unread_calls(ctx, files)
    if unread:
        return PolicyReply(f"Reading {', '.join(args['path'] for _, args in unread)}.", unread)
    last = ctx.history[-1]
    if last.name in ("edit_file", "bash") and not last.failed:
        before = replay(ctx, ctx.history[:-1])
        edit = search.identify(before, *_written(last, before)) if _written(last, before) else None
        hypothesis = (
            f"{edit.marker() if edit else 'an offline change'} {BANNER} {edit.what if edit else ''} (a blind "
            "change of one literal)"
        )
        return PolicyReply("Measuring the change.", [("run_experiment", {"hypothesis": hypothesis})])
    done = tries(
        ctx,
        [(search.parse_marker(str(r.arguments.get("hypothesis", ""))), search.outcome(r.result or "")) for r in runs],
    )
    back = search.revert_last(contents, done) if revert else None
    calls: list[Call] = [("edit_file", back.args())] if back else []
    edit = search.next_change(contents, done, ctx.rng("change", len(runs)), search.fixed_names(ctx.facts))
    if edit is None:
        return ctx.finish(f"{BANNER} No untried change is left after {len(runs)} experiments.", *calls)
    if bash:
        text = contents[edit.path].replace(edit.old, edit.new, 1)
        command = (
            f"cat > {submission_rel(edit.path) or edit.path} <<'{HEREDOC}'\n{text.removesuffix(chr(10))}\n{HEREDOC}"
        )
        return PolicyReply(f"Step {len(runs) + 1}: {edit.what}.", [("bash", {"command": command})])
    return PolicyReply(f"Step {len(runs) + 1}: {edit.what}.", [*calls, ("edit_file", edit.args())])


def read_call(ctx: PolicyContext, path: str, start: int = 1) -> Call:
    if "read_file_chunk" in ctx.tool_names and "read_file" not in ctx.tool_names:
        return ("read_file_chunk", {"path": path, "start": start, "n": 5000})
    return ("read_file", {"path": path, "start_line": start, "max_lines": 5000})


def unread_calls(ctx: PolicyContext, paths: list[str]) -> list[Call]:
    """The next read of each of `paths` not read whole yet: from line 1, or where its last page said to go on.
    A file that cannot be read (a failed read) is not asked for again."""
    contents, reading = _replay(ctx.history)
    failed = {e.path for e in ctx.history if e.name in READS and e.failed}
    return [read_call(ctx, p, reading.get(p, 1)) for p in paths if p not in contents and p not in failed]


READS = ("read_file", "read_file_chunk")


def replay(ctx: PolicyContext, history: list[Exchange] | None = None) -> dict[str, str]:
    """Current contents of the files read whole: reads (page after page), edits and heredoc rewrites replayed."""
    return _replay(ctx.history if history is None else history)[0]


def _replay(history: list[Exchange]) -> tuple[dict[str, str], dict[str, int]]:
    """(the files read whole, as changed since; the line each file being paged through goes on from)."""
    contents: dict[str, str] = {}
    pages: dict[str, tuple[str, int]] = {}  # a file read in part: its text so far, the line to read next
    for e in history:
        match = _heredoc(e)
        if e.failed:
            continue
        if e.name in READS:
            start = int(e.arguments.get("start_line", e.arguments.get("start", 1)) or 1)
            text, more = next_start(e.result or "")
            text = search.strip_line_numbers(text)
            if start != 1 and (e.path not in pages or pages[e.path][1] != start):
                continue  # not the page that continues a read from the top
            whole = (pages.pop(e.path)[0] if start != 1 else "") + text
            if more is None:
                contents[e.path] = whole
            else:
                pages[e.path] = (whole, more)
        elif e.name == "edit_file" and e.path in contents:
            contents[e.path] = contents[e.path].replace(
                str(e.arguments.get("old", "")), str(e.arguments.get("new", "")), 1
            )
        elif match and in_submission(match[0]) in contents:
            contents[in_submission(match[0])] = match[1] + "\n"
    return contents, {path: more for path, (_, more) in pages.items()}


def _heredoc(e: Exchange) -> tuple[str, str] | None:
    match = (
        re.match(rf"cat > (\S+) <<'{HEREDOC}'\n(.*)\n{HEREDOC}$", str(e.arguments.get("command", "")), re.S)
        if e.name == "bash"
        else None
    )
    return (match.group(1), match.group(2)) if match else None


def _written(e: Exchange, before: dict[str, str]) -> tuple[str, str, str] | None:
    """(path, old line, new line) of an edit or a one-line heredoc rewrite."""
    if e.name == "edit_file":
        return e.path, str(e.arguments.get("old", "")), str(e.arguments.get("new", ""))
    match = _heredoc(e)
    path = in_submission(match[0]) if match else ""
    if not match or path not in before:
        return None
    changed = [(a, b) for a, b in zip(before[path].splitlines(), match[1].splitlines()) if a != b]
    return (path, *changed[0]) if len(changed) == 1 else None


register_role_policy("solo", solo)

"""`hpsearch`: the engineering-only reference — no model, only numbers and flags.

Local search with random restarts over the tunable literals `aiscientist.llm.candidates`
finds in the editable files: most steps perturb one literal of the best code so
far (halve/double a number, toggle a flag); every few steps a random restart
perturbs several literals of the baseline instead. A change that does not beat
the best is simply left behind (the next step starts again from the best).
"""

from __future__ import annotations

from aiscientist.agent.context import RunContext
from aiscientist.agent.outcome import Outcome, StopReason
from aiscientist.agent.registry import register_agent
from aiscientist.llm.candidates import Change, propose_changes
from aiscientist.records.accounting import best_step

RESTART_PROBABILITY = 0.2
RESTART_CHANGES = 3


class HPSearch:
    name = "hpsearch"
    needs_model = False

    def solve(self, ctx: RunContext) -> Outcome:
        while ctx.steps_left() > 0:
            rng = ctx.rng
            best = best_step(ctx.step_records(), ctx.task.metric_direction)
            restart = best is None or rng.random() < RESTART_PROBABILITY
            if restart:
                ctx.reset_to_baseline()
            else:
                ctx.restore_step(best.step)
            changes = self._propose(ctx, rng, RESTART_CHANGES if restart else 1)
            if not changes:
                return Outcome(
                    stop=StopReason.FINISHED, detail="no tunable constant or flag found in the editable files"
                )
            origin = "baseline (random restart)" if restart else f"best step {best.step}"
            ctx.run_step(f"hpsearch from {origin}: " + "; ".join(f"{rel}: {c.description}" for rel, c in changes))
        return Outcome(stop=StopReason.STEP_BUDGET)

    @staticmethod
    def _propose(ctx: RunContext, rng, n: int) -> list[tuple[str, Change]]:
        """Up to `n` changes spread over the editable files, applied."""
        sources = {rel: ctx.read_code(rel) for rel in ctx.editable_files()}
        files = [rel for rel, text in sources.items() if propose_changes(text, rng, 1)]
        changes: list[tuple[str, Change]] = []
        for _ in range(n):
            if not files:
                break
            rel = rng.choice(files)
            done = {c.name for r, c in changes if r == rel}
            proposed = propose_changes(sources[rel], rng, 1, exclude=done)
            if not proposed:
                files.remove(rel)
                continue
            change = proposed[0]
            sources[rel] = sources[rel].replace(change.old, change.new, 1)
            changes.append((rel, change))
        for rel in {r for r, _ in changes}:
            ctx.write_code(rel, sources[rel])
        return changes


register_agent("hpsearch", HPSearch, {})  # no model

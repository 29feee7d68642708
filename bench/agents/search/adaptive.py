"""`adaptive-search`: FML-bench's own AdaptiveSearch on our kernel, with its defaults.

Phase 1 is autoresearch's greedy chain (`greedy.replay`, debug retries included). Before
each step it checks for stagnation once per run: with k phase-1 steps done and k > W
(`p1_window` 50), the slope (curve[k-1] - curve[k-1-W]) / W of the normalised improvement
curve (best so far minus the baseline, over the task's FML-bench range) at or below
`p1_epsilon` (0.0005) fires the switch. Phase 2 forks branches from the best kept nodes
of phase 1 (the baseline when too few were kept): none when at most `branch_skip_max` (3)
steps are left (phase 1 goes on), else 1, 2 or 3 by the cut-offs 15 and 30 on the steps
left. Branches take strict turns; each is a greedy chain from its fork. A branch's first
idea must differ in mechanism from its siblings' first ideas and sees the cross-branch
journal; afterwards two sub-rules over the code embeddings of the branch's attempts add a
hint to the prompt: A "go deeper" (at most `A_freq_max` keeps in the last `A_freq_window`
and the reach, the farthest attempt from the baseline's embedding, at most
`A_reach_norm_max` of the reach scale), B "stay coherent" (at most `B_freq_max` keeps in
the last `B_freq_window` and the participation ratio of the displacements at least
`B_effdim_min`); both: "consolidate and deepen".

Embeddings: FML-bench uses GraphCodeBERT and a reach scale calibrated per task on its 18
tasks; we use the bundled all-MiniLM-L6-v2 (option `embedder`) and, unless `max_reach` is
given, the norm of the baseline's embedding as the scale, so reach values differ from
FML-bench's. The whole state (phase, forks, every node) is in the run folder.
"""

from __future__ import annotations

import numpy as np

from aiscientist.agent.registry import register_agent
from bench.agents.search import answer
from bench.agents.search.common import Job, Options, Search, SearchAgent, SearchNode
from bench.agents.search.greedy import Chain, log_rows, replay
from bench.scoring.fml_metrics import range_of

ROLE = "adaptive-search"
INSTRUCTIONS = """
You are an autonomous ML researcher running experiments to improve an ML algorithm. You
propose concise, specific experimental ideas. Be creative but practical. Follow any
[STRATEGY HINT] at the top of the request.
"""
CHANGE_TEXT = "Propose ONE specific, atomic experimental change and implement it."
BRANCH_INIT = (
    "[BRANCH INITIALISATION] You start exploration branch {branch} from a promising candidate of the greedy "
    "search (node {parent}). Your first idea MUST differ in mechanism from every sibling's first idea below "
    "(another algorithmic family, formulation or approach; a hyper-parameter tweak does not count)."
)
HINT_A = "[STRATEGY HINT: GO DEEPER] This branch stagnates and stays close to the baseline (reach {reach:.3f}). "
HINT_A += "Make a substantively deeper algorithmic change, not a hyper-parameter tweak."
HINT_B = "[STRATEGY HINT: STAY COHERENT] This branch stagnates while its attempts spread over many directions "
HINT_B += "(effective dimension {effdim:.3f}). Refine within the family of the best recent attempts."
HINT_AB = "[STRATEGY HINT: CONSOLIDATE AND DEEPEN] This branch stagnates close to the baseline (reach {reach:.3f}, "
HINT_AB += "effective dimension {effdim:.3f}). Keep the most promising direction and extend it with a deeper change."


class AdaptiveOptions(Options):
    max_debug_retries: int = 3
    p1_window: int = 50
    p1_epsilon: float = 0.0005
    A_freq_window: int = 20
    A_freq_max: int = 2
    A_reach_norm_max: float = 0.30
    B_freq_window: int = 5
    B_freq_max: int = 2
    B_effdim_min: float = 1.25
    branch_skip_max: int = 3
    branch_cutoff_1: int = 15
    branch_cutoff_2: int = 30
    max_reach: float | None = None  # the reach scale; None: the norm of the baseline's embedding
    embedder: str = "minilm"
    log_rows: int = 30


# ---- the rules (pure: tested on constructed histories) ------------------------------


def curve(nodes: list[SearchNode], fitness, start: float, span: float) -> list[float]:
    """The normalised improvement after each phase-1 step (the greedy head is the best so far)."""
    best, out = start, []
    for node in nodes:
        if node.status == "good":
            best = max(best, fitness(node))
        out.append((best - start) / span)
    return out


def stagnated(values: list[float], window: int, epsilon: float) -> bool:
    k = len(values)
    return k >= window + 1 and (values[k - 1] - values[k - 1 - window]) / window <= epsilon


def branch_count(remaining: int, options: AdaptiveOptions) -> int:
    if remaining <= options.branch_skip_max:
        return 0
    return 1 if remaining <= options.branch_cutoff_1 else 2 if remaining <= options.branch_cutoff_2 else 3


def participation_ratio(rows: np.ndarray) -> float:
    """Effective dimension (sum lambda)^2 / sum lambda^2 of the Gram eigenvalues of `rows`."""
    if rows.shape[0] < 2:
        return 1.0
    gram = rows @ rows.T if rows.shape[0] <= rows.shape[1] else rows.T @ rows
    lam = np.clip(np.linalg.eigvalsh(gram), 0.0, None)
    if lam.max() == 0:
        return 1.0
    lam = lam[lam > 1e-10 * lam.max()]
    return float(lam.sum() ** 2 / (lam * lam).sum())


def subrules(
    labels: list[str], vectors: list[np.ndarray], base: np.ndarray, scale: float, options: AdaptiveOptions
) -> tuple[bool, bool, float, float]:
    """(A fires, B fires, reach / scale, effective dimension) over one branch's history."""
    if len(labels) < min(options.A_freq_window, options.B_freq_window) or not vectors:
        return False, False, float("nan"), float("nan")
    moves = np.stack(vectors) - base
    reach = float(np.linalg.norm(moves, axis=1).max()) / scale if scale else float("inf")
    effdim = participation_ratio(moves)

    def keeps(window: int) -> int:
        return sum(1 for label in labels[-window:] if label == "keep")

    a = keeps(options.A_freq_window) <= options.A_freq_max and reach <= options.A_reach_norm_max
    b = keeps(options.B_freq_window) <= options.B_freq_max and effdim >= options.B_effdim_min
    return a, b, reach, effdim


# ---- the loop --------------------------------------------------------------------------


class AdaptiveSearch(SearchAgent):
    name, instructions, options_model = ROLE, INSTRUCTIONS, AdaptiveOptions

    def search(self, run: Search, options: AdaptiveOptions) -> None:
        self.options, self.run, ctx = options, run, run.ctx
        self._vectors: dict[int, np.ndarray] = {}
        data = run.state.data
        while ctx.steps_left() > 0:
            phase1 = [n for n in run.nodes if n.group == "phase 1"]
            if data.get("phase", 1) == 1 and not data.get("triggered") and self._stagnated(phase1):
                data["triggered"] = True  # checked once per run, as in FML-bench
                count = branch_count(ctx.steps_left(), options)
                if count:
                    kept = replay(phase1, run.fitness, run.start, options.max_debug_retries).kept
                    forks = sorted(kept, key=run.fitness, reverse=True)[:count]
                    data["phase"], data["branches"] = 2, [n.id for n in forks] + [None] * (count - len(forks))
                run.save()
            if data.get("phase", 1) == 1:
                chain = replay(phase1, run.fitness, run.start, options.max_debug_retries)
                run.expand([chain.job(log_rows(phase1, chain, options.log_rows), CHANGE_TEXT, "phase 1")])
            else:
                run.expand([self._branch_job(data["branches"])])

    def _stagnated(self, phase1: list[SearchNode]) -> bool:
        run, task = self.run, self.run.ctx.task
        if task.baseline is None:
            return False  # no improvement curve without a baseline
        scale = range_of(task.name, run.direction, task.score_range)
        span = (scale.span(task.baseline) if scale else 0.0) or abs(task.baseline) or 1.0
        values = curve(phase1, run.fitness, run.start, span)
        return stagnated(values, self.options.p1_window, self.options.p1_epsilon)

    def _chains(self, forks: list[int | None]) -> list[tuple[SearchNode | None, list[SearchNode], Chain]]:
        out = []
        for b, fork_id in enumerate(forks):
            fork = self.run.by_id(fork_id)
            mine = [n for n in self.run.nodes if n.group == f"branch {b}"]
            start = self.run.fitness(fork) if fork is not None else self.run.start
            out.append((fork, mine, replay(mine, self.run.fitness, start, self.options.max_debug_retries, fork)))
        return out

    def _branch_job(self, forks: list[int | None]) -> Job:
        """The next branch in turn: its first idea, a debug, or a change with the sub-rules' hint."""
        run, options = self.run, self.options
        chains = self._chains(forks)
        b = sum(len(mine) for _, mine, _ in chains) % len(chains)
        fork, mine, chain = chains[b]
        group = f"branch {b}"
        journal = self._journal(chains)
        if not mine:
            firsts = [m[0] for i, (_, m, _) in enumerate(chains) if m and i != b]
            context = "\n\n".join(filter(None, [run.summary(firsts, "Sibling branches' first ideas"), journal]))
            text = BRANCH_INIT.format(branch=b, parent=fork.id if fork else "baseline")
            return Job(fork, "branch_init", group, context, text)
        context = "\n\n".join(filter(None, [log_rows(mine, chain, options.log_rows), journal]))
        if chain.pending is not None:
            return chain.job(context, CHANGE_TEXT, group)
        base = self._embed(None)
        scale = options.max_reach or float(np.linalg.norm(base))
        a, b_fires, reach, effdim = subrules(
            [chain.labels[n.id] for n in mine], [self._embed(n) for n in mine], base, scale, options
        )
        hint = HINT_AB if a and b_fires else HINT_A if a else HINT_B if b_fires else ""
        text = (hint.format(reach=reach, effdim=effdim) + "\n" if hint else "") + CHANGE_TEXT
        return Job(chain.head, "improve", group, context, text)

    def _journal(self, chains: list[tuple[SearchNode | None, list[SearchNode], Chain]]) -> str:
        rows = sorted(((n, i, c) for i, (_, mine, c) in enumerate(chains) for n in mine), key=lambda r: r[0].id)
        lines = [
            f"- branch {i} node {n.id}: {c.labels.get(n.id, 'pending')}, "
            f"{n.metric if n.metric is not None else 'crash'}: {n.plan.splitlines()[0][:160] if n.plan else ''}"
            for n, i, c in rows[-self.options.log_rows :]
        ]
        return "## Cross-branch journal\n" + "\n".join(lines) if lines else ""

    def _embed(self, node: SearchNode | None) -> np.ndarray:
        from bench.scoring.embed import get_embedder  # loads torch: only once phase 2 needs the sub-rules

        key = node.id if node is not None else -1
        if key not in self._vectors:
            files = node.files if node is not None else self.run.baseline
            text = "\n\n".join(f"# {rel}\n{files[rel]}" for rel in sorted(files))
            self._vectors[key] = get_embedder(self.options.embedder).embed(text)
        return self._vectors[key]


# one answer per attempt: a plan and edit blocks
register_agent(ROLE, AdaptiveSearch, {ROLE: ()}, {ROLE: answer.offline_policy})

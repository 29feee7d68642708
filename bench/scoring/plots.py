"""The report's figures (matplotlib, headless): best-so-far curves per task, and performance against diversity."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from bench.scoring.metrics import AgentTask, TaskInfo


def _figure():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=(6.4, 4.0), dpi=100)


def _save(fig, ax, path: Path) -> None:
    import matplotlib.pyplot as plt

    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, format="png")
    plt.close(fig)


def plot_curves(info: TaskInfo, cells: Sequence[AgentTask], path: Path) -> None:
    """Best-so-far validation metric per step of each agent's best round."""
    from matplotlib.ticker import MaxNLocator

    fig, ax = _figure()
    for cell in cells:
        xs = [i for i, v in enumerate(cell.curve, start=1) if v is not None]
        ys = [v for v in cell.curve if v is not None]
        if xs:
            ax.step(xs, ys, where="post", marker="o", markersize=3, label=cell.agent)
        else:
            ax.plot([], [], label=f"{cell.agent} (no successful step)")
    if info.baseline is not None:
        ax.axhline(info.baseline, color="grey", linestyle="--", linewidth=1, label="baseline")
    ax.set_title(f"{info.name}: best-so-far {info.metric or 'metric'} ({info.direction})")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("step")
    ax.set_ylabel(info.metric or "metric")
    _save(fig, ax, path)


def plot_perf_vs_diversity(cells: Sequence[AgentTask], path: Path) -> None:
    """Normalised improvement against diversity, one point per (agent, task)."""
    fig, ax = _figure()
    for agent in sorted({c.agent for c in cells}):
        points = [(c.diversity, c.normalised) for c in cells if c.agent == agent and c.diversity is not None]
        ax.scatter([p[0] for p in points], [p[1] for p in points], label=agent)
    embedders = sorted({c.embedder for c in cells if c.embedder})
    ax.set_xlabel("diversity (mean L2 to centroid" + (f", {', '.join(embedders)})" if embedders else ")"))
    ax.set_ylabel("normalised improvement")
    ax.set_title("performance vs diversity")
    _save(fig, ax, path)

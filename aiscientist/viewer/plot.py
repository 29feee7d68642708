"""The best-so-far curve with every step's metric, as an inline base64 PNG."""

from __future__ import annotations

import base64
import io

from aiscientist.accounting import successful
from aiscientist.viewer.load import RunView


def curve_png(run: RunView) -> str | None:
    """A `data:` URI, or None when no step has a metric yet."""
    scored = [s for s in run.steps if s.metric is not None]
    if not scored:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    fig, ax = plt.subplots(figsize=(7.0, 3.6), dpi=100)
    good = [s for s in scored if successful(s)]
    bad = [s for s in scored if not successful(s)]
    ax.scatter([s.step for s in good], [s.metric for s in good], s=22, color="#1f77b4", label="step metric", zorder=3)
    if bad:
        ax.scatter([s.step for s in bad], [s.metric for s in bad], s=22, marker="x", color="#d62728", label="not counted (failed / invalid)", zorder=3)
    best = [(s.step, s.best_so_far) for s in run.steps if s.best_so_far is not None]
    if best:
        ax.step([b[0] for b in best], [b[1] for b in best], where="post", color="#2ca02c", label="best so far")
    if run.baseline is not None:
        ax.axhline(run.baseline, color="grey", linestyle="--", linewidth=1, label="baseline")
    ax.set_xlabel("step")
    ax.set_ylabel(f"{run.metric or 'metric'} ({'higher' if run.direction == 'max' else 'lower'} is better)")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.legend(fontsize=8)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()

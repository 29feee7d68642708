"""Numbers and counts for people: significant digits, thousands separators, plurals."""

from __future__ import annotations

import math

MISSING = "–"


def num(value: float | int | None, digits: int = 4) -> str:
    """`38,660`, `0.6072`, `1.204`, `1.2e-05`; never `3.866e+04`."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return MISSING
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int) or float(value).is_integer():
        return f"{int(value):,}"
    text = f"{value:.{digits}g}"
    return f"{value:,.0f}" if "e" in text or abs(value) >= 1000 else text


def pm(mean: float | None, spread: float | None, n: int) -> str:
    """`mean ± spread`, the spread shown only when there are two or more values."""
    if mean is None:
        return MISSING
    return num(mean) if n < 2 or spread is None else f"{num(mean)} ± {num(spread, 2)}"


def plural(count: int, word: str, many: str | None = None) -> str:
    return f"{count:,} {word if count == 1 else (many or word + 's')}"


def duration(seconds: float | None) -> str:
    if seconds is None:
        return MISSING
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min" if hours else f"{minutes} min {secs:02d} s"


def money(cost: float | None) -> str:
    if cost is None:
        return MISSING
    return f"${cost:,.2f}" if cost >= 1 else f"${cost:.4f}"


def pace(ttfe_s: float | None, per_hour: float | None) -> str:
    """`first experiment after 3 min 40 s · 12.5 experiments per hour` (records/timing.py)."""
    first = f"first experiment after {duration(ttfe_s)}" if ttfe_s is not None else "no experiment yet"
    return first + (f" · {num(per_hour, 3)} experiments per hour" if per_hour is not None else "")


def cache_line(prompt_tokens: int | None, cached_tokens: int | None, saved: float | None) -> str:
    """`83% of 120,000 prompt tokens cached · saved $0.0123` (a provider's prompt cache)."""
    if not prompt_tokens:
        return MISSING
    share = f"{100 * (cached_tokens or 0) / prompt_tokens:.0f}% of {num(prompt_tokens)} prompt tokens cached"
    return share + (f" · saved {money(saved)}" if saved else "")

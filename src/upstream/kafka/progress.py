"""The line `upstream consume` keeps up to date at a terminal, and prints when it stops."""

from __future__ import annotations

from upstream.kafka.consumer import Totals


def progress_line(totals: Totals) -> str:
    """`12,000 consumed · 11,990 stored · 5 duplicates · 5 refused · lag 120 · commit 35 ms`;
    the lag is summed over this consumer's partitions, each listed when there are few."""
    parts = [
        f"{totals.consumed:,} consumed",
        f"{totals.stored:,} stored",
        f"{totals.duplicates:,} duplicates",
        f"{totals.refused:,} refused",
    ]
    if totals.abandoned:
        parts.append(f"{totals.abandoned:,} abandoned")
    if totals.lag:
        lag = f"lag {sum(totals.lag.values()):,}"
        if len(totals.lag) <= 4:
            each = ", ".join(f"[{p}] {n:,}" for (_, p), n in sorted(totals.lag.items()))
            lag += f" ({each})"
        parts.append(lag)
    if totals.last_commit_seconds is not None:
        parts.append(f"last batch committed in {totals.last_commit_seconds * 1000:,.0f} ms")
    if totals.waiting:
        parts.append("paused until the database (or the dead-letter topic) is back")
    return " · ".join(parts)

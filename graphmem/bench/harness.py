"""What the benchmarks that start graphmem processes share: the environment those processes
run in, kept off the user's daemon, settings and data, and the percentiles of what they time."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["graphmem_env", "latency_ms", "percentile"]


def graphmem_env(data_dir: Path, *, user_settings: bool = True, **settings: str) -> dict[str, str]:
    """The environment of a graphmem process on ``data_dir``: its daemon on a free port (never
    colliding with a user's), then ``settings`` (``GRAPHMEM_RATE_LIMIT="0"``...). Without
    ``user_settings``, the user's ``GRAPHMEM_*`` variables and config file are left out too."""
    env = dict(os.environ)
    if not user_settings:
        env = {k: v for k, v in env.items() if not k.startswith("GRAPHMEM_")}
        env["GRAPHMEM_CONFIG"] = str(data_dir.parent / "no-such-config.toml")
    env["GRAPHMEM_DATA_DIR"] = str(data_dir)
    env["GRAPHMEM_SERVER__PORT"] = "0"
    env.update(settings)
    return env


def percentile(values: list[float], q: float) -> float:
    """The ``q`` quantile (0..1) of ``values``, the nearest rank, to 0.01; 0.0 for none."""
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 2) if ordered else 0.0


def latency_ms(samples_ms: list[float]) -> dict[str, float]:
    """A latency as the benchmarks' reports keep it: the median and 95th percentile of ``samples_ms``."""
    return {"p50": percentile(samples_ms, 0.5), "p95": percentile(samples_ms, 0.95)}

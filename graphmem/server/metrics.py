"""Prometheus metrics of the daemon: tool calls, their latency, memories, backlog, errors."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

# Seconds; recall sits around 10-80 ms, imports and exports take longer.
LATENCY_BUCKETS = (0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0)


class _StateCollector(Collector):
    """Gauges read at scrape time from the running service."""

    def __init__(self, state: Callable[[], Mapping[str, object]]) -> None:
        self._state = state

    def collect(self) -> Iterator[GaugeMetricFamily]:
        state = self._state()
        memories = GaugeMetricFamily("graphmem_memories", "Stored memories by category.", labels=["category"])
        by_category = state.get("by_category", {})
        assert isinstance(by_category, Mapping)
        for category, count in sorted(by_category.items()):
            memories.add_metric([str(category)], float(count))
        yield memories
        for name, help_text in (
            ("embedding_backlog", "Memories waiting for their embedding."),
            ("active_sessions", "Live agent sessions."),
            ("model_loaded", "1 once the embedding model is loaded."),
            ("uptime_seconds", "Seconds since the daemon started."),
        ):
            value = state.get(name, 0)
            assert isinstance(value, int | float | bool)
            yield GaugeMetricFamily(f"graphmem_{name}", help_text, value=float(value))


class Metrics:
    """One registry per daemon (tests run several in one process)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.calls = Counter(
            "graphmem_tool_calls", "MCP tool calls by tool and outcome.", ["tool", "outcome"],
            registry=self.registry,
        )  # fmt: skip
        self.latency = Histogram(
            "graphmem_tool_duration_seconds", "MCP tool call latency.", ["tool"],
            buckets=LATENCY_BUCKETS, registry=self.registry,
        )  # fmt: skip
        self.errors = Counter(
            "graphmem_errors", "Errors by kind (tool errors, HTTP rejections).", ["kind"],
            registry=self.registry,
        )  # fmt: skip
        self.http = Counter(
            "graphmem_http_responses", "HTTP responses by status code.", ["status"], registry=self.registry
        )

    def watch(self, state: Callable[[], Mapping[str, object]]) -> None:
        self.registry.register(_StateCollector(state))

    def observe_call(self, tool: str, outcome: str, seconds: float) -> None:
        self.calls.labels(tool, outcome).inc()
        self.latency.labels(tool).observe(seconds)
        if outcome != "ok":
            self.errors.labels(outcome).inc()

    def render(self) -> bytes:
        return generate_latest(self.registry)

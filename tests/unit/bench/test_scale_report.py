"""The scale benchmark's report: every latency kept and printed the one way."""

from __future__ import annotations

from support.scale_reports import scale_report as a_report

from graphmem.bench import scale_report
from graphmem.bench.harness import latency_ms


def test_a_latency_is_kept_as_its_median_and_95th_percentile() -> None:
    assert latency_ms([float(ms) for ms in range(1, 101)]) == {"p50": 51.0, "p95": 96.0}


def test_the_report_prints_each_latency_as_p50_and_p95_in_ms() -> None:
    report = a_report(
        daemon_writes={
            "count": 5,
            "remember_ms": {"p50": 2.0, "p95": 4.0},
            "embed_ms": {"p50": 8.0, "p95": 9.5},
        }
    )

    lines = scale_report.format_report(report).splitlines()

    assert "remember      p50 1.5 ms, p95 3.0 ms" in lines
    assert "recall (warm) p50 12.25 ms, p95 20.0 ms" in lines
    assert (
        "daemon writes 5: remember p50 2.0 ms, p95 4.0 ms; then its embedding p50 8.0 ms, p95 9.5 ms" in lines
    )


def test_the_report_prints_the_small_projects_recall_and_how_its_vector_search_compares() -> None:
    report = a_report(
        projects=3,
        recall_project="/tmp/graphmem-scale-x/projects/proj-0",
        small_project={
            "memories": 1000,
            "project": "/tmp/graphmem-scale-x/projects/small-3",
            "beside": "/tmp/graphmem-scale-x/projects/proj-0",
            "recall_ms": {"p50": 6.5, "p95": 9.0},
            "vector_search": {"k": 100, "searches": 200, "share_of_exact": 0.511, "short": 58},
        },
    )

    lines = scale_report.format_report(report).splitlines()

    at = lines.index("small project 1,000 memories beside proj-0: recall p50 6.5 ms, p95 9.0 ms")
    assert lines[at + 1] == (
        "              its vector search found 51.1% of the exact top 100, 58 of 200 searches short"
    )

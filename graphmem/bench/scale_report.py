"""The scale benchmark's report as text (``graphmem bench scale`` without ``--json``): one line per
figure of ``graphmem.bench.scale.run``'s report, each latency as its p50 and p95."""

from __future__ import annotations

from pathlib import PurePath
from typing import Any


def _latency_text(latency_ms: dict[str, float]) -> str:
    """A latency as the report prints it: ``p50 1.2 ms, p95 3.4 ms``."""
    return f"p50 {latency_ms['p50']} ms, p95 {latency_ms['p95']} ms"


def format_report(report: dict[str, Any]) -> str:
    """The report of ``graphmem.bench.scale.run`` as the lines ``graphmem bench scale`` prints."""
    imp = report["import"]
    share = (
        f"= {imp['share_of_model']:.0%} of the model's {imp['model_texts_per_s']:,} texts/s"
        if imp["share_of_model"] is not None
        else "(vectors from the hash embedder)"
    )
    index = report["index"]
    return "\n".join(
        [
            f"scale benchmark, {report['memories']:,} memories"
            + (" on PostgreSQL" if report.get("store") == "postgresql" else ""),
            _projects_line(report["projects"], report["recall_project"]),
            f"remember      {_latency_text(report['remember_ms'])}",
            f"bulk import   {imp['memories_per_s']:,} memories/s {share}",
            f"vector index  loaded in {index['vectors_loaded_s']} s, "
            f"graph built in {index['graph_built_s']} s",
            f"recall (warm) {_latency_text(report['recall_ms'])}",
            *_text_search_lines(report.get("text_search")),
            f"first recall from a cold process: {report['first_recall_cold_s']} s",
            f"RSS           {report['rss_mb']['serving_process']} MB (a process serving recalls), "
            f"{report['rss_mb']['cold_recall_peak']} MB peak (cold recall process)",
            f"store on disk {report['store_mb']} MB",
            *_peak_lines(report.get("peak_rss_mb")),
            *_writes_lines(report.get("daemon_writes")),
            *_small_project_lines(report.get("small_project")),
            *_backlog_lines(report.get("backlog")),
            *_concurrent_lines(report.get("concurrent")),
        ]
    )


def _projects_line(projects: int, recall_project: str | None) -> str:
    """Which memories each timed recall sees: the figures of a store of one project and of many
    differ several times over (docs/benchmarks.md). The project by its folder's name: its path
    (the JSON's) is a temporary folder's."""
    if not projects or recall_project is None:
        return "projects      none: every memory global, each recall sees them all"
    return (
        f"projects      memories spread over {projects:,} projects; recalls and writes ask for "
        f"{PurePath(recall_project).name}, a git checkout"
    )


def _peak_lines(peaks: dict[str, float | None] | None) -> list[str]:
    if not peaks or None in peaks.values():
        return []
    return [
        f"peak RSS      {peaks['import']:,} MB importing, {peaks['index']:,} MB loading and building "
        f"the vector index, {peaks['measure']:,} MB measuring (this process)"
    ]


def _text_search_lines(text_search: dict[str, Any] | None) -> list[str]:
    if not text_search:
        return []
    return [
        f"full text     answered by the daemon's {text_search['answering']} (current "
        f"{text_search['current_s']} s after the store opened)"
    ]


def _writes_lines(written: dict[str, Any] | None) -> list[str]:
    if not written:
        return []
    return [
        f"daemon writes {written['count']:,}: remember {_latency_text(written['remember_ms'])}; "
        f"then its embedding {_latency_text(written['embed_ms'])}"
    ]


def _small_project_lines(small: dict[str, Any] | None) -> list[str]:
    if not small:
        return []
    lines = [
        f"small project {small['memories']:,} memories beside {PurePath(small['beside']).name}: "
        f"recall {_latency_text(small['recall_ms'])}"
    ]
    search = small.get("vector_search")
    if search:
        lines.append(
            f"              its vector search found {search['share_of_exact']:.1%} of the exact top "
            f"{search['k']}, {search['short']} of {search['searches']} searches short"
        )
    return lines


def _backlog_lines(backlog: dict[str, Any] | None) -> list[str]:
    if not backlog:
        return []
    return [
        f"with {backlog['memories']:,} memories waiting for vectors: first recall from a cold process "
        f"{backlog['first_recall_cold_s']} s"
    ]


def _concurrent_lines(reports: list[dict[str, Any]] | None) -> list[str]:
    from graphmem.bench.clients import format_lines

    return ["concurrent clients, recall and remember 4:1:", *format_lines(reports)] if reports else []

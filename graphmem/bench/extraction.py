"""Extraction benchmark: the deterministic rules against hand-labelled sessions.

Reads ``samples/sessions/*.jsonl`` (format in samples/sessions/README.md), runs
``extract`` on each session and matches what it learned to what a careful reader
expects. A learned item matches an expected one when the category is the same and
every expected key word occurs in the learned text (case- and accent-insensitive);
each expected item is matched at most once, in order. Items learned at low trust are
counted apart: they are data, not knowledge to inject.

Precision = matched learned / learned; recall = matched expected / expected; F1
their harmonic mean; per category and overall (micro-averaged), per file.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from graphmem.core.extraction import extract
from graphmem.core.models import Category, Trust
from graphmem.core.sessions import Learned, SessionMessage, SessionPart, Transcript
from graphmem.core.text import fold
from graphmem.errors import InvalidInputError

_EPOCH = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class Expected:
    category: Category
    keywords: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class LabelledSession:
    transcript: Transcript
    expected: tuple[Expected, ...]


def load_sessions(path: Path) -> list[LabelledSession]:
    """Labelled sessions from one JSONL file; a bad line is an error that names it."""
    sessions = []
    for number, line in enumerate(path.read_text("utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            sessions.append(_session(json.loads(line)))
        except (ValueError, KeyError, TypeError) as exc:
            raise InvalidInputError(
                f"{path}:{number}: not a labelled session ({exc}); see samples/sessions/README.md."
            ) from None
    return sessions


def _session(data: dict[str, Any]) -> LabelledSession:
    messages = []
    for index, raw in enumerate(data["messages"]):
        parts = []
        if raw.get("text"):
            parts.append(SessionPart(f"{raw['id']}-text", "text", text=raw["text"]))
        for number, tool in enumerate(raw.get("tools", ())):
            command = tool.get("command")
            parts.append(
                SessionPart(
                    f"{raw['id']}-tool{number}",
                    "tool",
                    tool=tool["tool"],
                    tool_input=json.dumps({"command": command}) if command is not None else "{}",
                    tool_output=tool.get("output", ""),
                    status=tool.get("status", "completed"),
                    files=tuple(tool.get("files", ())),
                )
            )
        when = _EPOCH + timedelta(minutes=index)
        messages.append(SessionMessage(raw["id"], raw["role"], when, tuple(parts), raw.get("agent", "")))
    transcript = Transcript(
        session_id=data["id"],
        directory=data.get("directory", ""),
        title=data.get("title", ""),
        created_at=_EPOCH,
        updated_at=_EPOCH + timedelta(minutes=len(messages)),
        messages=tuple(messages),
    )
    expected = tuple(
        Expected(Category(e["category"]), tuple(fold(k) for k in e["keywords"])) for e in data["expected"]
    )
    return LabelledSession(transcript, expected)


def _matches(item: Learned, expected: Expected) -> bool:
    text = fold(item.text)
    return item.category is expected.category and all(k in text for k in expected.keywords)


def score(sessions: list[LabelledSession]) -> dict[str, Any]:
    """Precision, recall and F1 per category and overall, with every miss and false positive."""
    learned_n: Counter[str] = Counter()
    expected_n: Counter[str] = Counter()
    hit_learned: Counter[str] = Counter()
    hit_expected: Counter[str] = Counter()
    false_positives: list[dict[str, str]] = []
    misses: list[dict[str, Any]] = []
    low_trust: list[dict[str, str]] = []
    for session in sessions:
        items = extract(session.transcript)
        open_expected = list(session.expected)
        for expected in session.expected:
            expected_n[expected.category.value] += 1
        for item in items:
            if item.trust is Trust.LOW:
                low_trust.append({"session": session.transcript.session_id, "category": item.category.value,
                                  "text": item.text})  # fmt: skip
                continue
            learned_n[item.category.value] += 1
            match = next((e for e in open_expected if _matches(item, e)), None)
            if match is None:
                false_positives.append(
                    {"session": session.transcript.session_id, "category": item.category.value,
                     "rule": item.rule, "text": item.text}
                )  # fmt: skip
                continue
            open_expected.remove(match)
            hit_learned[item.category.value] += 1
            hit_expected[match.category.value] += 1
        misses.extend(
            {
                "session": session.transcript.session_id,
                "category": e.category.value,
                "keywords": list(e.keywords),
            }
            for e in open_expected
        )
    categories = sorted(set(learned_n) | set(expected_n))
    rows = {c: _row(learned_n[c], expected_n[c], hit_learned[c], hit_expected[c]) for c in categories}
    overall = _row(
        sum(learned_n.values()),
        sum(expected_n.values()),
        sum(hit_learned.values()),
        sum(hit_expected.values()),
    )
    return {
        "sessions": len(sessions),
        "messages": sum(len(s.transcript.messages) for s in sessions),
        "categories": rows,
        "overall": overall,
        "low_trust": low_trust,
        "low_trust_instructions": sum(
            1
            for item in low_trust
            if item["category"] in (Category.DIRECTIVE.value, Category.PREFERENCE.value)
        ),
        "false_positives": false_positives,
        "misses": misses,
    }


def _row(learned: int, expected: int, hit_learned: int, hit_expected: int) -> dict[str, Any]:
    precision = hit_learned / learned if learned else 1.0
    recall = hit_expected / expected if expected else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {
        "learned": learned,
        "expected": expected,
        "correct": hit_learned,
        "precision": round(precision, 3),
        "recall": round(recall, 3),
        "f1": round(f1, 3),
    }


def run(data: Path) -> dict[str, Any]:
    """Score each ``*.jsonl`` file under ``data`` (or the file ``data``), and all of them together."""
    files = [data] if data.is_file() else sorted(data.glob("*.jsonl"))
    if not files:
        raise InvalidInputError(f"No *.jsonl labelled sessions in {data}: pass --data samples/sessions.")
    loaded = {path.stem: load_sessions(path) for path in files}
    report: dict[str, Any] = {name: score(sessions) for name, sessions in loaded.items()}
    if len(loaded) > 1:
        report["all"] = score([s for sessions in loaded.values() for s in sessions])
    return report


def format_report(report: dict[str, Any]) -> str:
    """The report as text: one table per file, then false positives and misses."""
    lines = []
    for name, result in report.items():
        lines.append(f"extraction, {name}: {result['sessions']} sessions, {result['messages']} messages")
        lines.append(
            f"{'category':<12} {'learned':>7} {'expected':>8} {'precision':>9} {'recall':>7} {'F1':>6}"
        )
        rows = [*result["categories"].items(), ("overall", result["overall"])]
        for category, row in rows:
            lines.append(
                f"{category:<12} {row['learned']:>7} {row['expected']:>8} {row['precision']:>9.3f}"
                f" {row['recall']:>7.3f} {row['f1']:>6.3f}"
            )
        lines.append(
            f"low-trust items: {len(result['low_trust'])} "
            f"(as directives or preferences: {result['low_trust_instructions']})"
        )
        if name != "all":
            for fp in result["false_positives"]:
                lines.append(
                    f"  false positive [{fp['session']}] {fp['category']} ({fp['rule']}): {fp['text']}"
                )
            for miss in result["misses"]:
                lines.append(
                    f"  missed [{miss['session']}] {miss['category']}: {', '.join(miss['keywords'])}"
                )
        lines.append("")
    return "\n".join(lines).rstrip()

"""The forge's lifecycle rules, applied: an MR merged or closed, an issue closed or reopened, an
epic closed changes the memories that depended on it (``core/forge_rules.py`` holds the rules).

``Enricher`` tells ``ForgeRules.entity_changed`` of every state change it saves (GitLab down
or answering garbage saves nothing, so changes nothing). Each memory about the entity is
checked against the rules in order; the first that applies fires, through the writer, as an
audited event (actor ``rule``, the rule's name, a reason such as "!13 merged on 2026-11-20")
that ``graphmem undo`` reverses.
"""

from __future__ import annotations

import logging
from datetime import datetime

from graphmem.core.events import CHANGES, Cause
from graphmem.core.forge_rules import ACTION_STATUS, LifecycleRule, applies, names_as, reason, rules_for
from graphmem.core.models import EntityKind, MemoryRecord
from graphmem.core.refs import find_refs
from graphmem.errors import GraphmemError
from graphmem.service.mentions import Mentions
from graphmem.service.writer import MemoryWriter

log = logging.getLogger(__name__)

RULE_ACTOR = "rule"
# Events looked at to tell whether a rule made a memory what it is (its repeats are not read).
_RECENT_EVENTS = 20


class ForgeRules:
    """Applies ``core.forge_rules.RULES`` when an MR, issue or epic changes state."""

    def __init__(self, writer: MemoryWriter, mentions: Mentions) -> None:
        self._writer = writer
        self._mentions = mentions

    def entity_changed(
        self, key: str, kind: EntityKind, before: str | None, after: str, changed_at: datetime | None
    ) -> list[tuple[str, str]]:
        """Apply the rules to the memories about ``key``; the (memory id, rule name) of each change."""
        rules = rules_for(kind, before, after)
        if not rules:
            return []
        store = self._writer.store
        ids = store.memories_about([key]).get(key, [])
        fired: list[tuple[str, str]] = []
        with self._writer.lock:
            records = store.get_memories(ids)
            for record in sorted(records.values(), key=lambda r: (r.created_at, r.id)):
                rule = self._fire(record, key, rules, changed_at, seen=before is not None)
                if rule is not None:
                    fired.append((record.id, rule.name))
        if fired:
            log.info("lifecycle rules changed %d memories about %s", len(fired), key)
        return fired

    def _fire(
        self,
        record: MemoryRecord,
        key: str,
        rules: list[LifecycleRule],
        changed_at: datetime | None,
        *,
        seen: bool,
    ) -> LifecycleRule | None:
        spans = self._spans(record, key)
        for rule in rules:
            if not spans or not applies(rule, record, changed_at, seen=seen):
                continue
            named = next(
                (raw for start, end, raw in spans if names_as(rule.cue, record.text, start, end)), None
            )
            if named is None or (rule.after_rules and not self._made_by(record.id, rule.after_rules)):
                continue
            cause = Cause(RULE_ACTOR, reason(rule, named, changed_at), rule.name)
            try:
                self._writer.set_status(
                    record.id, ACTION_STATUS[rule.action], allowed_from=(record.status,), cause=cause
                )
            except GraphmemError as exc:  # changed or deleted meanwhile: the next memory goes on
                log.info("rule %s skipped %s: %s", rule.name, record.id, exc)
                return None
            return rule
        return None

    def _spans(self, record: MemoryRecord, key: str) -> list[tuple[int, int, str]]:
        """Where ``record``'s text names the entity ``key``: (start, end, the ref as written)."""
        refs = find_refs(record.text)
        entities = self._mentions.refs_in(record.text, record.project)  # one per ref, in order
        return [
            (ref.start, ref.end, ref.raw or ref.name)
            for ref, entity in zip(refs, entities, strict=False)
            if entity.key == key
        ]

    def _made_by(self, memory_id: str, rules: frozenset[str]) -> bool:
        """Whether the memory's last status change was one of ``rules`` (and is not undone)."""
        for event in self._writer.store.events_of(memory_id, _RECENT_EVENTS, kinds=CHANGES):
            if "status" in event.after:
                return event.rule in rules and event.undone_by is None
        return False

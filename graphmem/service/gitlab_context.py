"""What get_context says about an MR, issue or epic, and which MRs changed a file."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from graphmem.core.codegraph import SymbolInfo, file_key
from graphmem.core.enrichment import EnrichmentRow, EnrichState, symbols_touched, target_key
from graphmem.core.gitlab import EpicData, IssueData, MergeRequestData, Person
from graphmem.core.gitlab_ports import GitLabGraph
from graphmem.core.models import Entity, EntityKind
from graphmem.core.ports import CodeGraph
from graphmem.core.projects import ForeignRemote
from graphmem.core.text import inert

LIST_LIMIT = 25
# Characters of a description shown in a bundle (the whole one is stored).
DESCRIPTION_EXCERPT_CHARS = 600
Sections = list[tuple[str, list[str]]]


@dataclass
class _Found:
    """What get_context says about one MR, issue or epic, section by section, and the keys
    (files, symbols, issues, epics) whose memories count as its own."""

    sections: Sections
    keys: list[str] = field(default_factory=list)

    def add(self, title: str, lines: list[str], keys: Iterable[str] = ()) -> None:
        self.sections.append((title, lines))
        self.keys += keys

    def add_epics(self, gitlab: GitLabGraph, title: str, epics: Sequence[tuple[str, int]]) -> None:
        lines, keys = _epic_lines(gitlab, epics)
        self.add(title, lines, keys)

    def parts(self) -> tuple[Sections, list[str]]:
        return self.sections, self.keys


def _who(person: Person | None) -> str:
    if person is None:
        return "unknown"
    return f"@{person.username}" + (f" ({person.name})" if person.name else "")


def _people(people: Sequence[Person]) -> str:
    return ", ".join(f"@{p.username}" for p in people) or "none"


def _excerpt(text: str) -> list[str]:
    flat = inert(text)  # a description holding "[from the user]" does not pose as graphmem's mark
    if not flat:
        return []
    cut = flat if len(flat) <= DESCRIPTION_EXCERPT_CHARS else flat[: DESCRIPTION_EXCERPT_CHARS - 1] + "…"
    return [f"> {cut}"]


def _details(labels: Sequence[str], milestone: str | None, web_url: str, description: str) -> list[str]:
    """The lines an MR, issue and epic share after their first ones: labels, milestone, link, excerpt."""
    lines = ["- labels: " + ", ".join(labels)] if labels else []
    if milestone:
        lines.append(f"- milestone: {milestone}")
    if web_url:
        lines.append(f"- {web_url}")
    return lines + _excerpt(description)


def _epic_lines(gitlab: GitLabGraph, epics: Sequence[tuple[str, int]]) -> tuple[list[str], list[str]]:
    """A line per epic (``group&iid`` and its title when known) and their keys."""
    keys = [target_key(EntityKind.EPIC, group, iid) for group, iid in epics]
    known = gitlab.entities(keys)
    lines = []
    for (group, iid), key in zip(epics, keys, strict=True):
        epic = known.get(key)
        lines.append(f"- {group}&{iid}" + (f" {epic.title}" if epic is not None and epic.title else ""))
    return lines, keys


def _ranges(ranges: Sequence[tuple[int, int]]) -> str:
    shown = [f"L{a}" if a == b else f"L{a}–{b}" for a, b in ranges[:6]]
    more = f", +{len(ranges) - 6}" if len(ranges) > 6 else ""
    return f" ({', '.join(shown)}{more})" if shown else ""


def pending_note(
    entity: Entity, row: EnrichmentRow | None, configured: bool, foreign: ForeignRemote | None = None
) -> str | None:
    """Why an MR, issue or epic has no GitLab facts yet, or None when it has them. ``foreign``:
    the repository on another forge (GitHub) it is a ref of (``Enricher.foreign``): GitLab has
    nothing of it, and is never asked (what an older graphmem fetched is another project's). A row
    the reader's daemon does not enrich (``EnrichmentRow.owned``: another person's on a team's
    store) is said to wait for that person's daemon, never for a command that would store nothing."""
    if foreign is not None:
        return f"{entity.name} is not enriched: {foreign.why}."
    if row is not None and row.fetched_at is not None and row.state is EnrichState.OK:
        return None
    if row is not None and row.state is EnrichState.MISSING:
        return f"GitLab has no {entity.name} (404), or hides it from the token; asked again later."
    if row is not None and row.state is EnrichState.FORBIDDEN:
        return f"The GitLab token may not see {entity.name} (403)."
    if row is not None and row.state is EnrichState.UNRESOLVABLE:
        return f"{entity.name} names no GitLab project: write group/project{entity.name} to enrich it."
    if row is not None and not row.owned:  # another person's row: their daemon's, configured or not here
        return f"{entity.name} is not enriched yet: another person's daemon enriches it, not yours."
    if not configured:
        return f"{entity.name} is not enriched: GitLab is not configured (see docs/gitlab.md)."
    if row is not None and row.state is EnrichState.ERROR:
        why = row.error or "GitLab failed."
        return f"{entity.name} is not enriched yet: {why}"
    return f"{entity.name} is not enriched yet: it is queued (`graphmem enrich` fetches it now)."


def ref_sections(
    gitlab: GitLabGraph, code: CodeGraph | None, entity: Entity, local_root: str | None
) -> tuple[Sections, list[str]]:
    """Sections for an MR, issue or epic, and the keys whose memories count as its own.

    ``local_root`` is the local checkout of the MR's GitLab project, if it is one: its
    changed files are then the code graph's files, and their symbols are looked up.
    """
    if entity.kind is EntityKind.MERGE_REQUEST:
        mr = gitlab.merge_request(entity.key)
        return _merge_request(gitlab, code, entity, mr, local_root) if mr is not None else ([], [])
    if entity.kind is EntityKind.ISSUE:
        issue = gitlab.issue(entity.key)
        return _issue(gitlab, entity, issue) if issue is not None else ([], [])
    if entity.kind is EntityKind.EPIC:
        epic = gitlab.epic(entity.key)
        return _epic(gitlab, epic) if epic is not None else ([], [])
    return [], []


def _merge_request(
    gitlab: GitLabGraph, code: CodeGraph | None, entity: Entity, mr: MergeRequestData, root: str | None
) -> tuple[Sections, list[str]]:
    state = mr.state + (", draft" if mr.draft else "")
    facts = [
        f"- {mr.project}!{mr.iid} **{mr.title}** — {state}",
        f"- author {_who(mr.author)}; reviewers {_people(mr.reviewers)}; assignees {_people(mr.assignees)}",
        f"- branches `{mr.source_branch}` → `{mr.target_branch}`"
        + (f"; merged {mr.merged_at:%Y-%m-%d}" if mr.merged_at else ""),
    ]
    facts += _details(mr.labels, mr.milestone, mr.web_url, mr.description)
    found = _Found([("Merge request", facts)])
    shown = mr.changed_files  # the bundle cuts what does not fit, saying how many it left out
    if mr.changed_files:
        title = f"Changed files ({len(mr.changed_files)}"
        title += f" of {mr.changed_files_total})" if mr.changed_files_total > len(mr.changed_files) else ")"
        lines = [
            f"- {f.new_path}{' (deleted)' if f.deleted_file else ''}{' (new)' if f.new_file else ''}"
            f"{_ranges(f.ranges)}"
            for f in shown
        ]
        hidden = mr.changed_files_total - len(shown)
        if hidden > 0:
            lines.append(f"- … and {hidden:,} more")
        found.add(title, lines, [file_key(root or mr.project, f.new_path) for f in mr.changed_files])
    symbols = _changed_symbols(gitlab, code, entity.key, root, mr)
    if symbols:
        lines = [f"- {s.kind} `{s.qualified_name}` ({s.path}:{s.start_line})" for s in symbols]
        found.add("Changed symbols", lines, [s.key for s in symbols])
    if mr.closes:
        keys = [target_key(EntityKind.ISSUE, i.project, i.iid) for i in mr.closes]
        found.keys += keys
        lines = []
        for issue_ref, key in zip(mr.closes, keys, strict=True):
            lines.append(
                f"- {issue_ref.project}#{issue_ref.iid} {issue_ref.title} ({issue_ref.state or '?'})"
            )
            issue = gitlab.issue(key)
            if issue is not None and issue.epic is not None:
                epic_key = target_key(EntityKind.EPIC, *issue.epic)
                epic = gitlab.entities([epic_key]).get(epic_key)
                title = f" {epic.title}" if epic is not None and epic.title else ""
                lines.append(f"  part of epic {issue.epic[0]}&{issue.epic[1]}{title}")
                found.keys.append(epic_key)
        found.add("Closes", lines)
    return found.parts()


def _changed_symbols(
    gitlab: GitLabGraph, code: CodeGraph | None, mr_key: str, root: str | None, mr: MergeRequestData
) -> list[SymbolInfo]:
    """The symbols the diff touched: linked at enrichment, and found again in today's code."""
    if code is None:
        return []
    found = code.symbols(gitlab.changed_symbols(mr_key))
    if root:
        for changed in mr.changed_files:
            if changed.ranges and not changed.deleted_file:
                for symbol in symbols_touched(changed.ranges, code.symbols_in(root, changed.new_path)):
                    found.setdefault(symbol.key, symbol)
    return sorted(found.values(), key=lambda s: (s.path, s.start_line))


def _issue(gitlab: GitLabGraph, entity: Entity, issue: IssueData) -> tuple[Sections, list[str]]:
    facts = [
        f"- {issue.project}#{issue.iid} **{issue.title}** — {issue.state}",
        f"- author {_who(issue.author)}; assignees {_people(issue.assignees)}",
    ]
    facts += _details(issue.labels, issue.milestone, issue.web_url, issue.description)
    found = _Found([("Issue", facts)])
    if issue.epic is not None:
        found.add_epics(gitlab, "Epic", [issue.epic])
    closing = gitlab.merge_requests_closing(entity.key)
    related = [target_key(EntityKind.MERGE_REQUEST, p, i) for p, i in issue.related_merge_requests]
    merge_requests = {e.key: e for e in closing}
    for key, other in gitlab.entities(related).items():
        merge_requests.setdefault(key, other)
    if merge_requests:
        closing_keys = {e.key for e in closing}
        lines = [
            f"- {e.name} {e.title}" + (" (closes it)" if e.key in closing_keys else "")
            for e in merge_requests.values()
        ]
        found.add("Merge requests", lines, merge_requests)
    return found.parts()


def _epic(gitlab: GitLabGraph, epic: EpicData) -> tuple[Sections, list[str]]:
    facts = [f"- {epic.group}&{epic.iid} **{epic.title}** — {epic.state}"]
    if epic.author is not None:
        facts.append(f"- author @{epic.author.username}")
    facts += _details(epic.labels, None, epic.web_url, epic.description)
    found = _Found([("Epic", facts)])
    if epic.parent is not None:
        found.add_epics(gitlab, "Parent epic", [epic.parent])
    if epic.child_issues:
        found.add(
            f"Child issues ({len(epic.child_issues)})",
            [f"- {i.project}#{i.iid} {i.title} ({i.state or '?'})" for i in epic.child_issues],
            [target_key(EntityKind.ISSUE, i.project, i.iid) for i in epic.child_issues],
        )
    if epic.child_epics:
        found.add_epics(gitlab, f"Child epics ({len(epic.child_epics)})", epic.child_epics)
    return found.parts()


def changed_by(gitlab: GitLabGraph, file_key: str, shown: Callable[[Entity], bool]) -> Sections:
    """The "Changed by" section of a file: the MRs whose diffs touched it that are ``shown``,
    latest first."""
    found = [(mr, state, at) for mr, state, at in gitlab.changed_by(file_key, LIST_LIMIT) if shown(mr)]
    if not found:
        return []
    lines = [
        f"- {mr.name} {mr.title} ({f'merged {merged:%Y-%m-%d}' if merged else state})"
        for mr, state, merged in found
    ]
    return [("Changed by", lines)]

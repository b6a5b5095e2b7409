"""The memory tools: remember, recall, get_context, get_boot_context, update_memory, get_history,
delete_memory. A change an agent makes is recorded in the memory's history with the actor ``agent``."""

from __future__ import annotations

from typing import Annotated, cast

from pydantic import Field

from graphmem.core.events import AGENT
from graphmem.core.recall_limit import MAX_RECALL_LIMIT, MIN_RECALL_LIMIT
from graphmem.core.text import MAX_TEXT_CHARS
from graphmem.core.timeparse import parse_since, parse_until
from graphmem.core.views import entity_view, event_view, hit_view, link_view, memory_view
from graphmem.errors import InvalidInputError
from graphmem.server.tools.params import (
    CategoryName,
    LinkKindName,
    MaxTokens,
    MemoryId,
    Project,
    ScopeName,
    UpdateAction,
)
from graphmem.server.tools.registry import ToolRegistry
from graphmem.server.tools.results import (
    BootContext,
    Context,
    Deleted,
    History,
    Recalled,
    Remembered,
    Updated,
)
from graphmem.service.results import Supersession


def _superseded_note(done: Supersession) -> str:
    """What a remember that closed an older memory says of it: its text, and how to undo that."""
    found = "a newer one on its subject, found by its words" if done.automatic else "as supersedes asked"
    return (
        f"Superseded {done.memory_id} {done.quote()} ({found}). If it still holds, undo that: "
        f"update_memory(id={done.memory_id!r}, action='undo', event_id={done.event_id!r}), or the "
        f"user runs `graphmem undo {done.event_id}`."
    )


def add_memory_tools(tools: ToolRegistry) -> None:
    """Register the tools that store, find and change memories."""

    @tools.tool()
    def remember(
        text: Annotated[
            str,
            Field(
                description="The memory, self-contained: say what and why (e.g. 'We chose Kùzu over "
                "SQLite for the graph store because ...'). Refs like !123, #45 and file paths become links.",
                min_length=1,
                max_length=MAX_TEXT_CHARS,
            ),
        ],
        category: Annotated[CategoryName, Field(description="What kind of knowledge it is.")] = "fact",
        scope: Annotated[
            ScopeName | None,
            Field(
                description="Your memory stays in this project whatever you give: only the user makes "
                "one global (`graphmem widen ID`)."
            ),
        ] = None,
        project: Annotated[
            str | None,
            Field(
                description="Absolute path of the repository you work in (or a directory in it): your "
                "memory belongs to that project. `graphmem mcp` fills in its working directory.",
                max_length=4096,
            ),
        ] = None,
        supersedes: Annotated[
            str | None, Field(description="Id of a memory this one replaces (closes it).", max_length=64)
        ] = None,
        session: Annotated[
            str | None, Field(description="Session id to attach the memory to.", max_length=64)
        ] = None,
        expires: Annotated[
            str | None,
            Field(
                description="When it stops being true ('14d', '12h', '2w', '3mo' or an ISO date): "
                "then it leaves recall and context (kept in history). For temporary states.",
                max_length=40,
            ),
        ] = None,
    ) -> Remembered:
        """Store a memory: a decision (with the why), blocker, procedure that worked, fact,
        preference or directive worth keeping across sessions, in the project (a folder outside
        any git repository is refused: pass the repository's path). Repeats and near-duplicates
        are stored once, the answer naming the memory (repeating the user's does not confirm
        it: only the user does); a newer decision that changes one choice on the same subject
        supersedes the older one, and the note quotes it and says how to undo that. Written on
        a branch other than the default, it is seen on that branch until the branch's MR merges."""
        expires_at = parse_until(expires, now=tools.runtime.now()) if expires else None
        owner = tools.project_of(project)
        if owner is None and project is not None:
            raise InvalidInputError(
                f"{project.strip()[:200]!r} is not inside a git repository, so it is no project, and an "
                "agent's memory belongs to the project it works on: pass project, the absolute path of "
                "the repository (or of a directory in it). Only the user makes a memory global "
                "(`graphmem widen ID`)."
            )
        result = tools.memory.remember(
            text, category=category, scope=scope, project=owner, supersedes=supersedes,
            session=session, source="mcp", expires_at=expires_at, branch=tools.branch_of(project),
        )  # fmt: skip
        stored = result.memory
        answer: Remembered = {
            "id": stored.id,
            "created": result.created,
            "duplicate_of": result.duplicate_of,
            "superseded": list(result.superseded),
            "supersessions": [done.view() for done in result.supersessions],
            "entities": [e.name for e in result.entities],
            "memory": memory_view(stored, now=tools.runtime.now()),
        }
        notes = [_superseded_note(done) for done in result.supersessions]
        if scope == "global" and stored.scope.value != "global":
            notes.append("Kept in this project: only the user makes a memory global (`graphmem widen ID`).")
        if result.private:  # an agent's memory stays in its project: this one repeated the user's own
            notes.append(
                f"{stored.id} is a global memory only the user sees on this team's store: "
                "teammates do not see it. The user shares it with this project's team by running "
                f"{result.sharing()}."
            )
        if stored.status.value == "proposed":
            notes.append(
                "Stored as a proposal: the user confirms it (`graphmem confirm ID`) before it is "
                "followed as a rule in every session; until then it is recalled as data."
            )
        if notes:
            answer["note"] = " ".join(notes)
        return answer

    @tools.tool()
    def recall(
        query: Annotated[
            str,
            Field(
                description="What you want to know, in words ('why did we pick kuzu', '!123 review').",
                min_length=1,
                max_length=MAX_TEXT_CHARS,
            ),
        ],
        limit: Annotated[
            int | None,
            # the service checks the bound, with the message the CLI gives too (core/recall_limit.py)
            Field(
                description=f"Most hits to return, {MIN_RECALL_LIMIT}-{MAX_RECALL_LIMIT} "
                "(default: [recall] limit).",
                json_schema_extra={"minimum": MIN_RECALL_LIMIT, "maximum": MAX_RECALL_LIMIT},
            ),
        ] = None,
        categories: Annotated[
            list[CategoryName] | None, Field(description="Only these categories.", max_length=10)
        ] = None,
        since: Annotated[
            str | None,
            Field(
                description="Only memories created since: '30d', '12h', '2w', 'today' or an ISO date.",
                max_length=40,
            ),
        ] = None,
        history: Annotated[bool, Field(description="Include superseded and archived memories.")] = False,
        project: Project = None,
        branch: Annotated[
            str | None,
            Field(
                description="See the memories of this branch (e.g. 'feature/refunds') as if checked "
                "out on it. Default: the branch the project's checkout is on.",
                max_length=250,
            ),
        ] = None,
        all_branches: Annotated[
            bool, Field(description="Include the memories of every branch, each marked with its branch.")
        ] = False,
    ) -> Recalled:
        """Find the memories relevant to a question, best first, each with why it was found.
        Returns an empty list when nothing is relevant. Use before deciding something,
        when stuck, or when the user refers to earlier work."""
        now = tools.runtime.now()
        result = tools.memory.recall(
            query,
            project=tools.project_of(project),
            limit=limit,
            categories=categories,
            since=parse_since(since, now=now) if since else None,
            history=history,
            branch=branch if branch is not None else tools.branch_of(project),
            all_branches=all_branches,
        )
        return {
            "query": result.query,
            "hits": [hit_view(hit, now=now) for hit in result.hits],
            # What the question names or describes, best first: get_context on one is the next call.
            "entities": [entity_view(e) for e in result.entities],
            "semantic_ready": result.semantic_ready,
            "took_ms": round(result.took_ms, 1),
        }

    @tools.tool()
    def get_context(
        target: Annotated[
            str,
            Field(
                description="An MR (!123 or group/proj!123), issue (#45), epic (&6), a file path, "
                "lines of a file (src/app.py:40-52), a symbol, or a few words.",
                min_length=1,
                max_length=MAX_TEXT_CHARS,
            ),
        ],
        max_tokens: MaxTokens = None,
        project: Project = None,
    ) -> Context:
        """Everything known about an MR, issue, epic, file, lines of a file or subject,
        grouped by category and cut to a token budget. Call it before editing a file (or
        lines of it) or working on an MR/issue. `markdown` is ready to read."""
        bundle = tools.memory.get_context(
            target, project=tools.project_of(project), max_tokens=max_tokens, branch=tools.branch_of(project)
        )
        return cast(Context, bundle.to_dict())  # with its Markdown

    @tools.tool()
    def get_boot_context(max_tokens: MaxTokens = None, project: Project = None) -> BootContext:
        """What to know at the start of a session: directives and preferences (this project's
        and global), open blockers, recent decisions and procedures, and the other agents
        working on the project now. Call it once when a session starts."""
        resolved = tools.project_of(project)
        bundle = tools.memory.boot_context(
            project=resolved, max_tokens=max_tokens, branch=tools.branch_of(project)
        )
        sessions = tools.runtime.coordinator.active(resolved)
        return {**cast(Context, bundle.to_dict()), "active_sessions": [s.view() for s in sessions]}

    @tools.tool()
    def update_memory(
        id: MemoryId,
        action: Annotated[
            UpdateAction,
            Field(
                description="edit: new text/category; archive/restore: hide or bring back; "
                "resolve/unresolve: a blocker; confirm: still valid after its code changed (no longer "
                "flagged stale); link/unlink: relate to target_id with link_kind; "
                "supersede: this memory replaces target_id; undo: reverse event_id of its get_history."
            ),
        ],
        text: Annotated[
            str | None, Field(description="New text (edit).", min_length=1, max_length=MAX_TEXT_CHARS)
        ] = None,
        category: Annotated[CategoryName | None, Field(description="New category (edit).")] = None,
        target_id: Annotated[
            str | None, Field(description="The other memory (link, unlink, supersede).", max_length=64)
        ] = None,
        link_kind: Annotated[
            LinkKindName, Field(description="How id relates to target_id (link, unlink).")
        ] = "related",
        event_id: Annotated[
            str | None,
            Field(
                description="The event of id's history to reverse (undo), from get_history.", max_length=64
            ),
        ] = None,
        project: Project = None,
    ) -> Updated:
        """Change a memory: edit it, archive or restore it, resolve or reopen a blocker,
        confirm it still holds after its code changed, link it to another memory, or mark it
        as replacing (superseding) another. Every change is in the memory's history
        (get_history) and can be undone (action='undo')."""
        if action == "edit":
            if text is None and category is None:
                raise InvalidInputError("edit needs text or category (or both).")
            record = tools.memory.edit(
                id, text=text, category=category, project=tools.project_of(project), actor=AGENT
            )
            answer: Updated = {"action": action, "memory": memory_view(record, now=tools.runtime.now())}
            if record.id != id.strip():
                answer["note"] = (
                    f"{id.strip()} is the user's own: it stays as it is, and your change is stored as the "
                    f"proposal {record.id}, which the user confirms or rejects."
                )
            return answer
        if action in ("archive", "restore", "resolve", "unresolve", "confirm"):
            changed = getattr(tools.memory, action)(id, actor=AGENT)
            return {"action": action, "memory": memory_view(changed, now=tools.runtime.now())}
        if action == "undo":
            return _undo(id, event_id)
        if not target_id:
            raise InvalidInputError(f"{action} needs target_id: the id of the other memory.")
        kind = "supersedes" if action == "supersede" else link_kind
        if action == "unlink":
            tools.memory.unlink(id, target_id, kind, actor=AGENT)
            return {"action": action, "source": id, "target": target_id, "kind": kind}
        link = tools.memory.link(id, target_id, kind, actor=AGENT)
        return {
            "action": action,
            "link": link_view(link),
            "target": memory_view(tools.memory.show(target_id).memory),
        }

    def _undo(memory_id: str, event_id: str | None) -> Updated:
        if not event_id:
            raise InvalidInputError("undo needs event_id: an event id from get_history of this memory.")
        wanted = tools.memory.show(memory_id).memory.id
        events = {e.id: e for e in tools.memory.history(wanted, limit=500)}
        if event_id.strip() not in events:
            raise InvalidInputError(
                f"Event {event_id.strip()[:64]} is not in the history of {wanted}: call get_history first."
            )
        done = tools.memory.undo(event_id, actor=AGENT)
        shown = tools.memory.show(done.memory_id).memory
        return {"action": "undo", "event": event_view(done), "memory": memory_view(shown)}

    @tools.tool()
    def get_history(
        id: MemoryId,
        limit: Annotated[int, Field(description="Most events to return, newest first.", ge=1, le=500)] = 50,
    ) -> History:
        """What changed a memory, newest first: edits (with the old text), archive/restore,
        resolve/unresolve, supersessions, links, and what graphmem's rules did when the
        forge changed (an MR merged, an issue closed), each with who, why (reason, rule)
        and the event id that update_memory(action='undo', event_id=...) reverses."""
        events = tools.memory.history(id, limit=limit)
        return {"memory_id": id.strip(), "events": [event_view(e) for e in events]}

    @tools.tool()
    def delete_memory(
        id: MemoryId,
        confirm: Annotated[
            bool, Field(description="Must be true: deletion cannot be undone (archive can).")
        ] = False,
    ) -> Deleted:
        """Delete a memory for good, with its links. Only when the user asks; prefer
        update_memory(action='archive'), which can be undone."""
        if not confirm:
            raise InvalidInputError(
                "Deleting cannot be undone: call again with confirm=true, or archive it instead "
                "(update_memory with action='archive')."
            )
        return {"deleted": memory_view(tools.memory.delete(id, actor=AGENT), now=tools.runtime.now())}

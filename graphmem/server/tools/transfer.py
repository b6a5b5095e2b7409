"""The transfer tools: export_memories, import_memories."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field

from graphmem.core.events import AGENT
from graphmem.errors import InvalidInputError
from graphmem.server.tools.params import Project
from graphmem.server.tools.registry import ToolRegistry
from graphmem.server.tools.results import Exported, Imported

# Largest export returned inline; bigger ones must go to a file (``path``).
MAX_INLINE_EXPORT_CHARS = 1_000_000
MAX_IMPORT_CHARS = 20_000_000


def add_transfer_tools(tools: ToolRegistry) -> None:
    """Register the tools that move memories in and out (files, repository folders, text)."""

    @tools.tool()  # it may write a file (never over an existing one unless asked)
    def export_memories(
        project: Project = None,
        format: Annotated[
            Literal["jsonl", "markdown"],
            Field(description="jsonl: lossless, importable; markdown: for reading."),
        ] = "jsonl",
        path: Annotated[
            str | None,
            Field(
                description="Write to this file instead of returning the text: a path inside the "
                "project's .graphmem/ folder or graphmem's export folder (<data_dir>/exports/), or a bare "
                "file name, which goes to the export folder. Other places are refused.",
                max_length=4096,
            ),
        ] = None,
        overwrite: Annotated[
            bool, Field(description="Replace the file at path if graphmem wrote it (never another file).")
        ] = False,
        repository: Annotated[
            bool,
            Field(
                description="Only what the project shares with its team, project-relative (as `graphmem "
                "export --project`); path is then a folder (<root>/.graphmem) that gets memories.jsonl "
                "and MEMORY.md, and overwrite drops memories the folder has but the store lacks."
            ),
        ] = False,
    ) -> Exported:
        """Export memories (this project's and global ones, or all when no project is
        given) with their links and entities, as JSONL (importable) or Markdown."""
        resolved = tools.project_of(project)
        if repository and path is not None:
            done = tools.memory.export_dir(_path(path), project=resolved, fmt=format, force=overwrite)
            return {
                "path": done.folder,
                "written": list(done.written),
                "unchanged": list(done.unchanged),
                "memories": done.memories,
                "entities": done.entities,
                "links": done.links,
            }
        if path is not None:
            wrote = tools.memory.export_file(
                _path(path), project=resolved, fmt=format, repository=repository, overwrite=overwrite
            )
            return {
                "path": wrote.path,
                "memories": wrote.memories,
                "entities": wrote.entities,
                "links": wrote.links,
            }
        buffer = io.StringIO()
        summary = tools.memory.export(buffer, project=resolved, fmt=format, repository=repository)
        content = buffer.getvalue()
        if len(content) > MAX_INLINE_EXPORT_CHARS:
            raise InvalidInputError(
                f"The export is {len(content):,} characters, over the {MAX_INLINE_EXPORT_CHARS:,} returned "
                "inline: pass path to write it to a file."
            )
        return {
            "format": format,
            "content": content,
            "memories": summary.memories,
            "entities": summary.entities,
            "links": summary.links,
        }

    @tools.tool()
    def import_memories(
        path: Annotated[
            str | None,
            Field(
                description="A JSONL export file, or a folder holding memories.jsonl such as "
                "<root>/.graphmem: inside the project's checkout or graphmem's export folder "
                "(<data_dir>/exports/; a bare file name is looked up there). Other places are refused: "
                "pass the text as content instead.",
                max_length=4096,
            ),
        ] = None,
        content: Annotated[
            str | None,
            Field(description="JSONL export text, instead of a path.", max_length=MAX_IMPORT_CHARS),
        ] = None,
        dry_run: Annotated[bool, Field(description="Validate only; import nothing.")] = False,
        project: Project = None,
    ) -> Imported:
        """Import a graphmem JSONL export. Every line is validated first: if any is
        invalid nothing is imported and the errors give line numbers. Importing the same
        export twice adds nothing; a memory already present is updated when the export's
        copy is newer (a teammate resolved or superseded it)."""
        if (path is None) == (content is None):
            raise InvalidInputError("Give exactly one of path (a file) or content (JSONL text).")
        resolved = tools.project_of(project)
        # An agent's: what it brings is kept in its project, a global memory of the file too.
        if path is not None:
            summary = tools.memory.import_file(_path(path), project=resolved, dry_run=dry_run, actor=AGENT)
        else:
            assert content is not None
            summary = tools.memory.import_text(
                content, name="The content an agent sent", project=resolved, dry_run=dry_run, actor=AGENT
            )
        return {
            "dry_run": summary.dry_run,
            "records": summary.records,
            "memories_added": summary.memories_added,
            "memories_skipped": summary.memories_skipped,
            "memories_updated": summary.memories_updated,
            "proposed": summary.proposed,
            "changes_proposed": summary.changes_proposed,
            "entities": summary.entities,
            "links": summary.links,
            "links_refused": summary.links_refused,
        }


def _path(path: str) -> Path:
    """The path a call gives; an empty one is refused (``Path("")`` would mean the export folder)."""
    if not path.strip():
        raise InvalidInputError("path is empty: give a file name or path, or leave path out.")
    return Path(path)

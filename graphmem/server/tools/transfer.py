"""The transfer tools: export_memories, import_memories."""

from __future__ import annotations

import io
import tempfile
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field

from graphmem.errors import InvalidInputError
from graphmem.server.tools.params import Project
from graphmem.server.tools.registry import IDEMPOTENT_WRITE, ToolRegistry
from graphmem.service.transfer import ExportSummary

# Largest export returned inline; bigger ones must go to a file (``path``).
MAX_INLINE_EXPORT_CHARS = 1_000_000
MAX_IMPORT_CHARS = 20_000_000


def add_transfer_tools(tools: ToolRegistry) -> None:
    """Register the tools that move memories in and out (files, repository folders, text)."""
    runtime = tools.runtime
    memory = runtime.memory
    project_of = tools.project_of

    @tools.tool(IDEMPOTENT_WRITE)  # it may write a file (never over an existing one unless asked)
    def export_memories(
        project: Project = None,
        format: Annotated[
            Literal["jsonl", "markdown"],
            Field(description="jsonl: lossless, importable; markdown: for reading."),
        ] = "jsonl",
        path: Annotated[
            str | None,
            Field(
                description="Write to this file (absolute path) instead of returning the text.",
                max_length=4096,
            ),
        ] = None,
        overwrite: Annotated[bool, Field(description="Replace the file at path if it exists.")] = False,
        repository: Annotated[
            bool,
            Field(
                description="Only what the project shares with its team, project-relative (as `graphmem "
                "export --project`); path is then a folder (e.g. <root>/.graphmem) that gets memories.jsonl "
                "and MEMORY.md, and overwrite drops memories the folder has but the store lacks."
            ),
        ] = False,
    ) -> dict[str, Any]:
        """Export memories (this project's and global ones, or all when no project is
        given) with their links and entities, as JSONL (importable) or Markdown."""
        resolved = project_of(project)
        if repository and path is not None:
            folder = _absolute(path)
            done = memory.export_dir(folder, project=resolved, fmt=format, force=overwrite)
            return {
                "path": str(folder),
                "written": list(done.written),
                "unchanged": list(done.unchanged),
                "memories": done.memories,
                "entities": done.entities,
                "links": done.links,
            }
        if path is not None:
            target = _absolute(path)
            if target.exists() and not overwrite:
                raise InvalidInputError(
                    f"{target} exists: pass overwrite=true to replace it, or another path."
                )
            partial = target.with_name(f".{target.name}.partial")
            with partial.open("w", encoding="utf-8") as out:
                summary = memory.export(out, project=resolved, fmt=format, repository=repository)
            partial.replace(target)
            return {"path": str(target), **_export_counts(summary)}
        buffer = io.StringIO()
        summary = memory.export(buffer, project=resolved, fmt=format, repository=repository)
        content = buffer.getvalue()
        if len(content) > MAX_INLINE_EXPORT_CHARS:
            raise InvalidInputError(
                f"The export is {len(content):,} characters, over the {MAX_INLINE_EXPORT_CHARS:,} returned "
                "inline: pass path to write it to a file."
            )
        return {"format": format, "content": content, **_export_counts(summary)}

    @tools.tool(IDEMPOTENT_WRITE)
    def import_memories(
        path: Annotated[
            str | None,
            Field(
                description="A JSONL export file, or a folder holding memories.jsonl such as "
                "<root>/.graphmem (absolute path).",
                max_length=4096,
            ),
        ] = None,
        content: Annotated[
            str | None,
            Field(description="JSONL export text, instead of a path.", max_length=MAX_IMPORT_CHARS),
        ] = None,
        dry_run: Annotated[bool, Field(description="Validate only; import nothing.")] = False,
        project: Project = None,
    ) -> dict[str, Any]:
        """Import a graphmem JSONL export. Every line is validated first: if any is
        invalid nothing is imported and the errors give line numbers. Importing the same
        export twice adds nothing; a memory already present is updated when the export's
        copy is newer (a teammate resolved or superseded it)."""
        if (path is None) == (content is None):
            raise InvalidInputError("Give exactly one of path (a file) or content (JSONL text).")
        resolved = project_of(project)
        if path is not None:
            summary = memory.import_file(_absolute(path), project=resolved, dry_run=dry_run)
        else:
            assert content is not None
            with tempfile.TemporaryDirectory() as scratch:
                file = Path(scratch) / "import.jsonl"
                file.write_text(content, "utf-8")
                summary = memory.import_file(file, project=resolved, dry_run=dry_run)
        return {
            "dry_run": summary.dry_run,
            "records": summary.records,
            "memories_added": summary.memories_added,
            "memories_skipped": summary.memories_skipped,
            "memories_updated": summary.memories_updated,
            "entities": summary.entities,
            "links": summary.links,
        }


def _absolute(path: str) -> Path:
    target = Path(path).expanduser()
    if not target.is_absolute():
        raise InvalidInputError(f"{path!r} is relative: give an absolute path (the server has its own cwd).")
    if not target.parent.is_dir():
        raise InvalidInputError(f"The folder {target.parent} does not exist.")
    return target


def _export_counts(summary: ExportSummary) -> dict[str, int]:
    return {"memories": summary.memories, "entities": summary.entities, "links": summary.links}

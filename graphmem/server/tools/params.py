"""The parameter types several tools share; their descriptions are what the model reads."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

CategoryName = Literal[
    "decision", "blocker", "procedure", "fact", "preference", "directive", "event", "plan", "idea",
    "conversation",
]  # fmt: skip
ScopeName = Literal["global", "project"]
LinkKindName = Literal["supersedes", "contradicts", "extends", "related"]
UpdateAction = Literal[
    "edit", "archive", "restore", "resolve", "unresolve", "confirm", "link", "unlink", "supersede", "undo"
]

Project = Annotated[
    str | None,
    Field(
        description="Absolute path of the project directory (its git toplevel is the project). "
        "Omit for global memories only; `graphmem mcp` fills in its working directory.",
        max_length=4096,
    ),
]
MemoryId = Annotated[str, Field(description="A memory id such as mem_0123abcd4567ef89.", max_length=64)]
SessionId = Annotated[str, Field(description="The id session_start returned.", max_length=64)]
MaxTokens = Annotated[
    int | None,
    Field(description="Token budget of the bundle (default: [recall] context_max_tokens).", ge=50, le=32_000),
]

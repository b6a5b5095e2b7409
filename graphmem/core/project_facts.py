"""What a repository's docs and manifests teach: facts, directives and procedures.

Pure functions over one file's path and text; ``graphmem bootstrap`` reads the files
``interesting_doc`` names and stores what ``extract_facts`` returns. Invalid or
unexpected content yields fewer facts, never an exception.

Keys. ``ProjectFact.key`` is ``"<source>#<category>:<slug>"`` and is what bootstrap
upserts on, so re-running it updates memories instead of adding new ones:

- A manifest field is keyed by *what it is* (``pyproject.toml#fact:stack``,
  ``package.json#procedure:script-test``): a new dependency or a changed script
  updates the same memory.
- A free-text rule, bullet or command is keyed by *its own words* (a slug of the
  normalized text, with a hash when long): lines added, removed or moved around it
  keep its key, while rewording it gives a new key, so the old memory is archived
  and the new one added; the history shows the rule changed.
- Section-level facts (a README's description, a docs page's headings) are keyed by
  their role (``README.md#fact:description``).
"""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from graphmem.core.models import Category
from graphmem.core.text import clip, sentence

MAX_INPUT_CHARS = 500_000  # more than any hand-written doc; keeps one file's parse bounded
MAX_RULES_PER_FILE = 50
MAX_PROCEDURES_PER_FILE = 10
MAX_SEQUENCE_COMMANDS = 6  # a setup block becomes one "then, then" procedure of at most this many steps
MAX_COMMAND_CHARS = 200
MAX_DOC_HEADINGS = 15
MAX_FACT_CHARS = 500
MAX_DESCRIPTION_CHARS = 400
MAX_LINE_CHARS = 5_000  # Markdown's line regexes stay linear on minified or generated lines
MAX_BLOCK_CHARS = 5_000  # a paragraph is cut here before inline markup is removed
MAX_DOC_DEPTH = 2  # manifests and READMEs up to two folders deep (packages/api/package.json)

FACT, DIRECTIVE, PROCEDURE = Category.FACT.value, Category.DIRECTIVE.value, Category.PROCEDURE.value


@dataclass(frozen=True, slots=True)
class ProjectFact:
    """One thing a repository's file says: ``category`` is "fact", "directive" or "procedure"."""

    category: str
    text: str  # a self-contained sentence that names its source file
    source: str  # the repo-relative POSIX path it came from
    key: str  # stable identity for upserts: "<source>#<category>:<slug>"


# -- which files ---------------------------------------------------------------------------

AGENT_FILES = frozenset({"agents.md", "claude.md", ".cursorrules"})
# Dependencies, build output and caches: other people's docs.
# fmt: off
VENDORED_DIRS = frozenset({
    "node_modules", "vendor", "third_party", "third-party", ".venv", "venv", "site-packages", "dist", "build",
    "target", "__pycache__", ".git", ".tox", ".cache",
})
# fmt: on
# Example and test projects carry their own manifests and READMEs, not this project's.
EXAMPLE_DIRS = frozenset(
    {"test", "tests", "testdata", "fixtures", "__fixtures__", "example", "examples", "sample", "samples"}
)
_README_SUFFIXES = ("", ".md", ".markdown", ".rst", ".txt")


def _kind(path: str) -> str | None:
    """Which extractor reads ``path``, by its name alone."""
    parts = path.strip("/").split("/")
    name, lower = parts[-1], parts[-1].lower()
    if lower in AGENT_FILES or path.lower() == ".github/copilot-instructions.md":
        return "agents"
    if name in MANIFESTS:
        return name
    stem, dot, suffix = lower.partition(".")
    if stem == "contributing" and dot + suffix in _README_SUFFIXES:
        return "contributing"
    if parts[0] == "docs" and lower.endswith((".md", ".markdown")):
        return "docs"
    if stem == "readme" and dot + suffix in _README_SUFFIXES:
        return "readme"
    return None


def interesting_doc(path: str) -> bool:
    """Whether bootstrap should read ``path`` (repo-relative, POSIX) for facts.

    Manifests (pyproject.toml, package.json, go.mod, Cargo.toml) and READMEs up to two
    folders deep; CONTRIBUTING; agent instructions (AGENTS.md, CLAUDE.md, .cursorrules,
    .github/copilot-instructions.md) at any depth; Markdown under ``docs/``. Never
    inside dependencies or build output, nor (except under docs/) in test or example
    projects.
    """
    kind = _kind(path)
    folders = path.strip("/").split("/")[:-1]
    if kind is None or VENDORED_DIRS.intersection(folders):
        return False
    if kind == "docs":
        return True
    if EXAMPLE_DIRS.intersection(folders):
        return False
    return kind == "agents" or len(folders) <= MAX_DOC_DEPTH


def extract_facts(path: str, text: str) -> list[ProjectFact]:
    """The facts, directives and procedures in one file, each with a stable key.

    ``path`` is repo-relative and POSIX; it names the file in every text. A file that
    is no known doc or manifest, or is invalid, gives ``[]``.
    """
    kind = _kind(path)
    if kind is None:
        return []
    text = text[:MAX_INPUT_CHARS].removeprefix("\ufeff")
    if kind in MANIFESTS:
        found = [ProjectFact(c, t, path, f"{path}#{c}:{slug}") for c, slug, t in MANIFESTS[kind](path, text)]
    else:
        found = _MARKDOWN_READERS[kind](path, text)
    unique: dict[str, ProjectFact] = {}
    for fact in found:
        unique.setdefault(fact.key, fact)
    return list(unique.values())


# -- Markdown, read line by line ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Block:
    kind: str  # "title", "heading", "code", "item" or "paragraph"
    text: str
    level: int = 0  # a heading's level; an item's indent
    lang: str = ""  # a code block's info string
    section: tuple[str, ...] = ()  # enclosing headings, outermost first, without the title


_FENCE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})[ \t]*([^`\s{]*)")
_ATX_RE = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_UNDERLINE_RE = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_RST_UNDERLINE_RE = re.compile(r"^([=\-~^\"'`#*+])\1{2,}[ \t]*$")
_RULER_RE = re.compile(r"^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")
_ITEM_RE = re.compile(r"^([ \t]*)(?:[-*+]|\d{1,9}[.)])[ \t]+(.*)$")
_STOPS = (".", "!", "?", ":", ";", ",")
_GRAPHMEM_SECTION_RE = re.compile(
    r"<!--\s*graphmem:start\s*-->.*?(?:<!--\s*graphmem:end\s*-->|\Z)", re.DOTALL
)
_COMMENT_RE = re.compile(r"<!--.*?(?:-->|\Z)", re.DOTALL)


def _blocks(text: str, *, rst: bool = False, line_sentences: bool = False) -> list[_Block]:
    """Headings, fenced code, list items and paragraphs of Markdown (or, roughly, reStructuredText).

    A level-1 first heading is the document's title: a "title" block, in no block's
    section. With ``line_sentences``, a paragraph line that starts with a capital after
    a line without final punctuation starts a new sentence (rules written one per line).
    """
    lines = text.splitlines()
    blocks: list[_Block] = []
    stack: list[tuple[int, str]] = []  # open headings: (level, text)
    pending: list[str] = []
    item_indent = -1  # >= 0 while ``pending`` holds a list item
    title_open = False  # the title is stack[0]

    def section() -> tuple[str, ...]:
        return tuple(name for _, name in stack[1 if title_open else 0 :])

    def flush() -> None:
        nonlocal item_indent
        if pending:
            kind = "item" if item_indent >= 0 else "paragraph"
            raw = " ".join(pending)[:MAX_BLOCK_CHARS]
            blocks.append(_Block(kind, _inline(raw), max(item_indent, 0), section=section()))
        pending.clear()
        item_indent = -1

    def heading(level: int, raw: str) -> None:
        nonlocal title_open
        flush()
        name = _inline(raw[:MAX_BLOCK_CHARS])
        if not name:
            return
        is_title = not stack and level == 1
        if level == 1:
            title_open = is_title
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, name))
        kind = "title" if is_title else "heading"
        blocks.append(_Block(kind, name, level, section=() if is_title else section()))

    index = 0
    while index < len(lines):
        line = lines[index][:MAX_LINE_CHARS]
        index += 1
        fence = None if rst else _FENCE_RE.match(line)
        if fence is not None:
            flush()
            marker, body = fence.group(1), []
            while index < len(lines) and not lines[index].strip().startswith(marker):
                body.append(lines[index])
                index += 1
            index += 1
            blocks.append(_Block("code", "\n".join(body), lang=fence.group(2).lower(), section=section()))
            continue
        stripped = line.strip()
        underline = (_RST_UNDERLINE_RE if rst else _UNDERLINE_RE).match(line)
        if underline is not None and len(pending) == 1 and item_indent < 0:
            text_line = pending.pop()
            heading(1 if stripped[0] in "=#" else 2, text_line)
            continue
        if not stripped or (rst and stripped.startswith("..")):
            flush()
            continue
        atx = None if rst else _ATX_RE.match(line)
        if atx is not None:
            heading(len(atx.group(1)), atx.group(2) or "")
        elif _RULER_RE.match(line) or underline is not None:
            flush()
        elif (item := _ITEM_RE.match(line)) is not None:
            flush()
            item_indent = len(item.group(1).expandtabs(4))
            pending.append(item.group(2))
        elif item_indent >= 0:
            pending.append(stripped)
        elif line_sentences and pending and stripped[0].isupper() and not pending[-1].endswith(_STOPS):
            pending[-1] += "."
            pending.append(stripped)
        elif stripped.startswith(("|", "<")):
            flush()  # tables and HTML
        else:
            pending.append(stripped.lstrip("> ").strip() if stripped.startswith(">") else stripped)
    flush()
    return blocks


# Inline patterns never scan past the next opening character, so a paragraph full of
# unclosed "[", "*" or "<" stays linear.
_INLINE_CODE_RE = re.compile(r"(`+)([^`]+)\1")
_IMAGE_RE = re.compile(r"!\[[^\[\]]*\](?:\([^()\s]*\)|\[[^\[\]]*\])")
_LINK_RE = re.compile(r"\[([^\[\]]*)\]\([^()\s]*\)|\[([^\[\]]*)\]\[[^\[\]]*\]")
_AUTOLINK_RE = re.compile(r"<((?:https?|mailto):[^<>\s]+)>")
_TAG_RE = re.compile(r"</?[A-Za-z][^<>]*>")
_STRONG_RE = re.compile(r"\*\*([^*]+)\*\*|(?<![\w*])\*([^\s*](?:[^*]*[^\s*])?)\*(?![\w*])")
_TASK_RE = re.compile(r"^\[[ xX]\]\s+")
_SPACE_RE = re.compile(r"\s+")


def _inline(text: str) -> str:
    """Markdown inline markup removed (links keep their text), code spans kept as written."""
    parts: list[str] = []
    position = 0
    for code in _INLINE_CODE_RE.finditer(text):
        parts.append(_plain(text[position : code.start()]))
        parts.append(f"`{code.group(2).strip()}`")
        position = code.end()
    parts.append(_plain(text[position:]))
    return _TASK_RE.sub("", _SPACE_RE.sub(" ", "".join(parts)).strip())


def _plain(text: str) -> str:
    text = _IMAGE_RE.sub("", text)
    text = _LINK_RE.sub(lambda m: m.group(1) or m.group(2), text)
    text = _AUTOLINK_RE.sub(r"\1", text)
    text = _TAG_RE.sub("", text)
    return _STRONG_RE.sub(lambda m: m.group(1) or m.group(2), text)


# -- agent instructions ----------------------------------------------------------------------

# Words that make a sentence a rule, wherever they stand.
_RULE_WORD_RE = re.compile(
    r"\b(?:must|never|always|should|shall|do not|don['’]t|avoid|prefer(?:red)?|required?|"
    r"(?:need|needs|have|has) to|make sure|ensure|only|forbidden|not allowed|instead of|mandatory)\b",
    re.IGNORECASE,
)
# Imperative verbs that make a bullet a rule when it starts with them.
# fmt: off
_IMPERATIVES = frozenset({
    "use", "prefer", "avoid", "keep", "run", "write", "add", "put", "follow", "make", "ensure", "check", "do",
    "don't", "don’t", "never", "always", "only", "remember", "include", "place", "name", "call", "return",
    "update", "document", "commit", "create", "format", "lint", "read", "ask", "open", "store", "validate",
    "wrap", "mark", "split", "stick", "log", "handle", "pin", "treat", "rebase", "squash", "push", "leave",
    "give", "target", "limit", "respect", "test", "verify", "describe", "explain", "reuse", "prefix", "start",
    "end", "remove", "delete", "replace", "move", "rename", "sign", "bump", "tag", "annotate", "comment",
    "refer", "link", "mention", "please",
})
# fmt: on
# First words that read as well in lower case after "Directive from AGENTS.md: ".
# fmt: off
_LOWERABLE = _IMPERATIVES | frozenset({
    "the", "a", "an", "all", "each", "every", "we", "our", "when", "if", "before", "after", "this", "these",
    "any",
})
# fmt: on
_SENTENCE_END_RE = re.compile(r"(?<=[.!?])\s+(?=[A-Z`\"'(*\[])")
_WORD_RE = re.compile(r"[^\W\d_]{2,}")


def _is_rule(text: str) -> bool:
    first = text.split(" ", 1)[0].strip("`*_\"'").lower()
    return first in _IMPERATIVES or _RULE_WORD_RE.search(text) is not None


def _agent_rules(source: str, text: str) -> list[ProjectFact]:
    """Each rule (a bullet or sentence saying must, never, use, ...) → a directive; other bullets → facts.

    graphmem's own section (between ``<!-- graphmem:start -->`` and ``<!-- graphmem:end -->``)
    is skipped. A bullet or paragraph ending in ":" introduces the bullets under it:
    "Before committing:" + "run `make lint`" is one rule.
    """
    text = _COMMENT_RE.sub("", _GRAPHMEM_SECTION_RE.sub("", text))
    blocks = _blocks(text, line_sentences=True)
    rules: list[ProjectFact] = []
    leads: list[tuple[int, str]] = []  # (indent, text) of the lead-ins above the current bullet
    for block in blocks:
        if block.kind == "item":
            while leads and leads[-1][0] >= block.level:
                leads.pop()
            if block.text.endswith(":"):
                leads.append((block.level, block.text))
                continue
            whole = " ".join([*(lead for _, lead in leads), block.text])
            if _is_rule(block.text) or _is_rule(whole):
                rules.append(_rule(DIRECTIVE, source, block, whole))
            elif len(_WORD_RE.findall(whole)) >= 3:
                rules.append(_rule(FACT, source, block, whole))
        elif block.kind == "paragraph":
            leads = [(-1, block.text)] if block.text.endswith(":") and len(block.text) <= 120 else []
            if not leads:
                rules += [_rule(DIRECTIVE, source, block, s) for s in _sentences(block.text) if _is_rule(s)]
        else:
            leads = []
    return rules[:MAX_RULES_PER_FILE] + _procedures(source, blocks)


def _rule(category: str, source: str, block: _Block, text: str) -> ProjectFact:
    where = f"{source} ({block.section[-1]})" if block.section else source
    lead = "Directive from" if category == DIRECTIVE else "Noted in"
    body = sentence(clip(_lower_first(text), MAX_FACT_CHARS))
    return ProjectFact(category, f"{lead} {where}: {body}", source, f"{source}#{category}:{_slug(text)}")


def _sentences(paragraph: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END_RE.split(paragraph) if len(_WORD_RE.findall(s)) >= 2]


def _lower_first(text: str) -> str:
    first = text.split(" ", 1)[0]
    title_case = first[:1].isupper() and first[1:].islower()
    return text[0].lower() + text[1:] if title_case and first.lower() in _LOWERABLE else text


# -- commands in code blocks ----------------------------------------------------------------------

# fmt: off
_SHELL_LANGS = frozenset({
    "", "sh", "bash", "shell", "console", "zsh", "fish", "shell-session", "shellsession", "terminal",
    "powershell", "pwsh", "ps1", "cmd", "bat",
})
# fmt: on
_PROCEDURE_HEADING_RE = re.compile(
    r"\b(?:install\w*|set ?up|setting up|getting started|get started|quick ?start|tests?|testing|build\w*|"
    r"run|running|usage|using|develop\w*|dev|local\w*|contribut\w*|commands?|lint\w*|format\w*|deploy\w*|"
    r"releas\w*|tooling|workflow|how to|scripts?|prerequisites|requirements|migrat\w*|checks?)\b",
    re.IGNORECASE,
)
_SETUP_HEADING_RE = re.compile(
    r"\b(?:install\w*|set ?up|setting up|get(?:ting)? started|quick ?start|prerequisites|requirements)\b",
    re.IGNORECASE,
)
# What a command does, by its words, first match wins.
_PURPOSES = (
    ("Run the tests", r"tests?|pytest|jest|vitest|mocha|tox|nox|rspec|phpunit|ctest|e2e|playwright|cypress"),
    ("Run the linters", r"lint|eslint|flake8|pylint|clippy|golangci-lint|rubocop|ruff check"),
    ("Type-check the code", r"mypy|pyright|tsc|typecheck|type-check"),
    ("Format the code", r"fmt|format|prettier|black|gofmt|rustfmt"),
    ("Run the checks", r"check|verify|pre-commit|precommit"),
    ("Run the database migrations", r"migrat\w*|alembic"),
    ("Set up the project", r"setup|set up|setting up|getting started|quick ?start|bootstrap|init"),
    ("Install the dependencies", r"install|sync|npm ci|bundle|restore|download"),
    ("Build the project", r"build|compile|dist|package"),
    ("Start the development server", r"dev|watch"),
    ("Start the server", r"serve|server"),
    ("Run the project", r"start|up|run"),
)
_PURPOSE_RES = tuple((purpose, re.compile(rf"\b(?:{words})\b")) for purpose, words in _PURPOSES)
# A bare code block (no info string) counts only when its lines start with a known command.
# fmt: off
_COMMANDS = frozenset({
    "make", "just", "task", "npm", "npx", "pnpm", "yarn", "bun", "deno", "node", "pip", "pip3", "pipx", "uv",
    "uvx", "poetry", "pdm", "hatch", "tox", "nox", "python", "python3", "py", "pytest", "ruff", "mypy",
    "black", "go", "cargo", "rustup", "docker", "docker-compose", "podman", "kubectl", "helm", "mvn",
    "./mvnw", "gradle", "./gradlew", "dotnet", "bundle", "rake", "rails", "bin/rails", "composer", "php",
    "brew", "pre-commit", "terraform",
})
# fmt: on
_TRAILING_COMMENT_RE = re.compile(r"\s#\s.*$")
_PROMPT_RE = re.compile(r"^(?:\$|%|PS>|PS [^>]*>)\s+")


def _procedures(source: str, blocks: list[_Block]) -> list[ProjectFact]:
    """Commands in shell code blocks under install / setup / test / build / run / usage headings."""
    found: list[ProjectFact] = []
    for block in blocks:
        if block.kind != "code" or block.lang not in _SHELL_LANGS or not block.section:
            continue
        if not any(_PROCEDURE_HEADING_RE.search(heading) for heading in block.section):
            continue
        commands = _commands(block.text, bare=not block.lang)
        if not commands:
            continue
        if len(commands) > 1 and _SETUP_HEADING_RE.search(block.section[-1]):
            steps = commands[:MAX_SEQUENCE_COMMANDS]
            text = f"Set up the project with {', then '.join(f'`{c}`' for c in steps)} (from {source})."
            found.append(ProjectFact(PROCEDURE, text, source, f"{source}#procedure:{_slug(' '.join(steps))}"))
            continue
        for command in commands:
            text = f"{_purpose(command, block.section[-1])} `{command}` (from {source})."
            found.append(ProjectFact(PROCEDURE, text, source, f"{source}#procedure:{_slug(command)}"))
    return found[:MAX_PROCEDURES_PER_FILE]


def _commands(code: str, *, bare: bool) -> list[str]:
    if "<<" in code:
        return []  # a heredoc: its lines are data, not commands
    lines = code.replace("\\\n", " ").splitlines()
    prompted = [_PROMPT_RE.sub("", line) for line in lines if _PROMPT_RE.match(line)]
    commands: list[str] = []
    for line in prompted or lines:
        if len(line) > 2 * MAX_COMMAND_CHARS:
            continue  # generated or pasted output, not a command to recall
        command = _SPACE_RE.sub(" ", _TRAILING_COMMENT_RE.sub("", line)).strip()
        words = command.split(" ")
        if not command or command.startswith("#") or len(command) > MAX_COMMAND_CHARS:
            continue
        if words[0] in ("cd", "echo") or words[:2] == ["git", "clone"]:
            continue  # moving around and cloning: no procedure worth recalling
        if bare and words[0] not in _COMMANDS:
            return []
        commands.append(command)
    return list(dict.fromkeys(commands))


def _purpose(command: str, heading: str) -> str:
    for text in (command, heading.lower()):
        for purpose, pattern in _PURPOSE_RES:
            if pattern.search(text):
                return f"{purpose} with"
    return f"Under “{heading}”, run"


# -- READMEs, CONTRIBUTING and docs ------------------------------------------------------------

_ABOUT_HEADING_RE = re.compile(r"\b(?:about|overview|introduction|description|what)\b", re.IGNORECASE)


def _readme(source: str, text: str) -> list[ProjectFact]:
    """The project's description (its first real paragraph) and its commands."""
    blocks = _blocks(text, rst=source.lower().endswith(".rst"))
    facts: list[ProjectFact] = []
    title = next((clip(b.text, 60) for b in blocks if b.kind == "title"), "")
    for block in blocks:
        if block.section and not _ABOUT_HEADING_RE.search(block.section[-1]):
            break
        if block.kind == "paragraph" and len(_WORD_RE.findall(block.text)) >= 4:
            about = f"the project {title}" if title else "the project"
            text = f"{source} describes {about}: {sentence(_first_sentences(block.text))}"
            facts.append(ProjectFact(FACT, text, source, f"{source}#fact:description"))
            break
    return facts + _procedures(source, blocks)


def _contributing(source: str, text: str) -> list[ProjectFact]:
    return _procedures(source, _blocks(text, rst=source.lower().endswith(".rst")))


def _docs_page(source: str, text: str) -> list[ProjectFact]:
    """One fact per page: the headings it covers, so recall can point to it."""
    blocks = _blocks(text)
    title = next((b.text for b in blocks if b.kind == "title"), "")
    headings = list(dict.fromkeys(clip(b.text, 80) for b in blocks if b.kind == "heading"))
    if not headings and not title:
        return []
    name = f"{source} ({clip(title, 80)})" if title and headings else source
    covered = _names_phrase(headings or [title], MAX_DOC_HEADINGS)
    return [ProjectFact(FACT, f"{name} covers: {covered}.", source, f"{source}#fact:headings")]


def _first_sentences(paragraph: str) -> str:
    """``paragraph`` cut after the last whole sentence that fits ``MAX_DESCRIPTION_CHARS``."""
    if len(paragraph) <= MAX_DESCRIPTION_CHARS:
        return paragraph
    kept = ""
    for part in _SENTENCE_END_RE.split(paragraph):
        if len(kept) + len(part) + 1 > MAX_DESCRIPTION_CHARS:
            break
        kept = f"{kept} {part}".strip()
    return kept or clip(paragraph, MAX_DESCRIPTION_CHARS)


_MARKDOWN_READERS: dict[str, Callable[[str, str], list[ProjectFact]]] = {
    "agents": _agent_rules,
    "readme": _readme,
    "contributing": _contributing,
    "docs": _docs_page,
}


# -- keys ---------------------------------------------------------------------------------------

_SLUG_MAX_CHARS = 60


def _slug(text: str) -> str:
    """``"never-push-directly-to-main"``: case, punctuation and markup do not change it.

    Longer texts keep their first words and add a hash of all of them, so two rules
    that start alike still get two keys.
    """
    words = re.findall(r"[^\W_]+", text.casefold())
    slug = "-".join(words)
    if len(slug) <= _SLUG_MAX_CHARS and slug:
        return slug
    digest = hashlib.blake2b(slug.encode("utf-8"), digest_size=4).hexdigest()
    return f"{slug[:_SLUG_MAX_CHARS].rstrip('-')}-{digest}".lstrip("-")


# -- manifests --------------------------------------------------------------------------------

_Found = tuple[str, str, str]  # (category, slug, text)
MAX_STACK_NAMES = 8

# Display names of well-known libraries; they are listed first in "The project uses ...".
# fmt: off
_PYTHON_LIBRARIES = {
    "fastapi": "FastAPI", "django": "Django", "flask": "Flask", "starlette": "Starlette",
    "litestar": "Litestar", "sanic": "Sanic", "tornado": "Tornado", "aiohttp": "aiohttp",
    "pyramid": "Pyramid", "djangorestframework": "Django REST framework", "sqlalchemy": "SQLAlchemy",
    "sqlmodel": "SQLModel", "alembic": "Alembic", "pydantic": "Pydantic", "celery": "Celery",
    "click": "Click", "typer": "Typer", "numpy": "NumPy", "pandas": "pandas", "polars": "Polars",
    "torch": "PyTorch", "tensorflow": "TensorFlow", "scikit-learn": "scikit-learn", "streamlit": "Streamlit",
    "langchain": "LangChain", "httpx": "HTTPX", "requests": "Requests", "psycopg": "psycopg",
    "psycopg2": "psycopg2", "asyncpg": "asyncpg", "strawberry-graphql": "Strawberry", "graphene": "Graphene",
    "uvicorn": "Uvicorn", "gunicorn": "Gunicorn",
}
# fmt: on
# fmt: off
_JS_FRAMEWORKS = {
    "next": "Next.js", "react": "React", "react-dom": "React", "vue": "Vue", "nuxt": "Nuxt",
    "svelte": "Svelte", "@sveltejs/kit": "SvelteKit", "@angular/core": "Angular", "express": "Express",
    "fastify": "Fastify",
    "koa": "Koa", "@nestjs/core": "NestJS", "hono": "Hono", "@remix-run/react": "Remix", "astro": "Astro",
    "solid-js": "Solid", "electron": "Electron", "react-native": "React Native", "expo": "Expo",
    "@prisma/client": "Prisma", "prisma": "Prisma", "typeorm": "TypeORM", "sequelize": "Sequelize",
    "mongoose": "Mongoose", "drizzle-orm": "Drizzle", "graphql": "GraphQL", "@apollo/client": "Apollo Client",
    "@apollo/server": "Apollo Server", "redux": "Redux", "@reduxjs/toolkit": "Redux Toolkit",
    "@tanstack/react-query": "TanStack Query", "tailwindcss": "Tailwind CSS", "socket.io": "Socket.IO",
    "zod": "Zod", "@trpc/server": "tRPC", "three": "three.js", "d3": "D3", "jquery": "jQuery",
}
# fmt: on
# fmt: off
_JS_TOOLS = {
    "typescript": "TypeScript", "vite": "Vite", "webpack": "webpack", "esbuild": "esbuild",
    "rollup": "Rollup", "jest": "Jest", "vitest": "Vitest", "mocha": "Mocha",
    "@playwright/test": "Playwright", "cypress": "Cypress", "eslint": "ESLint", "prettier": "Prettier",
    "@biomejs/biome": "Biome", "storybook": "Storybook", "turbo": "Turborepo", "nx": "Nx",
    "@babel/core": "Babel",
}
# fmt: on
_SCRIPT_PURPOSES = {
    "test": "Run the tests",
    "build": "Build the project",
    "lint": "Run the linter",
    "typecheck": "Type-check the code",
    "format": "Format the code",
    "dev": "Start the development server",
    "start": "Start the app",
}
_PACKAGE_MANAGERS = frozenset({"npm", "pnpm", "yarn", "bun"})
_PEP508_NAME_RE = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def _pyproject(source: str, text: str) -> list[_Found]:
    """Name and description, Python version, dependencies, commands, build backend, tool conventions."""
    data = _toml(text)
    if data is None:
        return []
    project, tool = _table(data, "project"), _table(data, "tool")
    poetry = _table(tool, "poetry")
    origin = f"from {source}"
    found: list[_Found] = []
    name = _string(project, "name") or _string(poetry, "name")
    description = _string(project, "description") or _string(poetry, "description")
    if name:
        about = f": {description.rstrip('.')}" if description else ""
        found.append((FACT, "project", f"The Python project {name}{about} ({origin})."))
    python = _string(project, "requires-python") or _string(_table(poetry, "dependencies"), "python")
    if python:
        found.append((FACT, "python", f"The project requires Python {python} ({origin})."))
    names = [m.group(1) for d in _strings(project, "dependencies") if (m := _PEP508_NAME_RE.match(d))]
    names += [n for n in _table(poetry, "dependencies") if n.lower() != "python"]
    if names:
        found.append(
            (FACT, "stack", f"The project uses {_stack(names, _PYTHON_LIBRARIES, python=True)} ({origin}).")
        )
    scripts = _table(project, "scripts") or _table(poetry, "scripts")
    commands = [
        f"`{clip(n, 60)}` ({clip(target, 100)})" for n, target in scripts.items() if isinstance(target, str)
    ]
    if commands:
        noun = "commands" if len(commands) > 1 else "command"
        found.append(
            (FACT, "scripts", f"The project installs the {noun} {_names_phrase(commands, 5)} ({origin}).")
        )
    backend = _string(_table(data, "build-system"), "build-backend")
    if backend:
        found.append((FACT, "build", f"The project builds with the {backend} backend ({origin})."))
    return found + _python_tools(tool, origin)


def _python_tools(tool: dict[str, Any], origin: str) -> list[_Found]:
    """Conventions from the [tool.pytest], ruff, black, isort, mypy and coverage tables."""
    found: list[_Found] = []
    if "pytest" in tool:
        pytest = _table(_table(tool, "pytest"), "ini_options") or _table(tool, "pytest")
        paths, options = _strings(pytest, "testpaths"), " ".join(_strings(pytest, "addopts"))
        details = ([f"tests in {', '.join(paths)}"] if paths else []) + (
            [f"options `{options}`"] if options else []
        )
        found.append((FACT, "pytest", f"Tests run with pytest{_colon(details)} ({origin})."))
    if "ruff" in tool:
        ruff = _table(tool, "ruff")
        length, target = _number(ruff, "line-length"), _string(ruff, "target-version")
        rules = _strings(_table(ruff, "lint"), "select") or _strings(ruff, "select")
        details = [f"line length {length:g}"] if length is not None else []
        details += ([f"target {target}"] if target else []) + (
            [f"rules {', '.join(rules[:12])}"] if rules else []
        )
        found.append((FACT, "ruff", f"The project lints with Ruff{_colon(details)} ({origin})."))
    if "black" in tool:
        length = _number(_table(tool, "black"), "line-length")
        details = [f"line length {length:g}"] if length is not None else []
        found.append((FACT, "black", f"The project formats code with Black{_colon(details)} ({origin})."))
    if "isort" in tool:
        profile = _string(_table(tool, "isort"), "profile")
        details = [f"profile {profile}"] if profile else []
        found.append((FACT, "isort", f"Imports are sorted with isort{_colon(details)} ({origin})."))
    if "mypy" in tool:
        strict = " in strict mode" if _table(tool, "mypy").get("strict") is True else ""
        found.append((FACT, "mypy", f"The project type-checks with mypy{strict} ({origin})."))
    fail_under = _number(_table(_table(tool, "coverage"), "report"), "fail_under")
    if fail_under is not None:
        text = f"Test coverage must stay at or above {fail_under:g}% (coverage fail_under, {origin})."
        found.append((DIRECTIVE, "coverage", text))
    return found


def _package_json(source: str, text: str) -> list[_Found]:
    """Name and description, package manager, engines, workspaces, scripts, frameworks and tools."""
    data = _json(text)
    if data is None:
        return []
    origin = f"from {source}"
    folder = source.rpartition("/")[0]
    where = f" in `{folder}/`" if folder else ""
    dependencies = {**_table(data, "peerDependencies"), **_table(data, "dependencies")}
    dev = _table(data, "devDependencies")
    found: list[_Found] = []
    name, description = _string(data, "name"), _string(data, "description")
    if name:
        language = "TypeScript" if "typescript" in dependencies or "typescript" in dev else "JavaScript"
        about = f": {description.rstrip('.')}" if description else ""
        found.append((FACT, "project", f"The {language} package {name}{about} ({origin})."))
    manager_spec = _string(data, "packageManager")  # "pnpm@9.1.0+sha512.…"
    manager, _, version = manager_spec.partition("@")
    manager = manager if manager in _PACKAGE_MANAGERS else "npm"
    if manager_spec:
        version = f" {version.split('+')[0]}" if version else ""
        text = f"The project uses {manager}{version} as its package manager ({origin})."
        found.append((FACT, "package-manager", text))
    engines = [f"{k} {v}" for k, v in _table(data, "engines").items() if isinstance(v, str)]
    if engines:
        found.append((FACT, "engines", f"The project requires {_names_phrase(engines, 5)} ({origin})."))
    workspaces = _strings(data, "workspaces") or _strings(_table(data, "workspaces"), "packages")
    if workspaces:
        found.append(
            (FACT, "workspaces", f"The project's workspaces are {_names_phrase(workspaces, 10)} ({origin}).")
        )
    scripts = _table(data, "scripts")
    for script, purpose in _SCRIPT_PURPOSES.items():
        body = scripts.get(script)
        if isinstance(body, str) and body.strip():
            text = f"{purpose} with `{manager} run {script}`{where} (runs `{clip(body, 120)}`; {origin})."
            found.append((PROCEDURE, f"script-{script}", text))
    if dependencies:
        found.append(
            (FACT, "stack", f"The project uses {_stack(list(dependencies), _JS_FRAMEWORKS)} ({origin}).")
        )
    tools = list(dict.fromkeys(_JS_TOOLS[n] for n in [*dev, *dependencies] if n in _JS_TOOLS))
    if tools:
        text = f"The project's development tools include {_names_phrase(tools, MAX_STACK_NAMES)} ({origin})."
        found.append((FACT, "tools", text))
    return found


def _go_mod(source: str, text: str) -> list[_Found]:
    """Module path, Go version and direct requirements; no ``module`` line means no go.mod."""
    single: dict[str, str] = {}  # one-value directives: module, go, toolchain
    requires: list[str] = []
    in_require = False
    for raw in text.splitlines():
        words = raw.split("//", 1)[0].split()
        direct = "// indirect" not in raw
        if in_require:
            in_require = words != [")"]
            if in_require and len(words) >= 2 and direct:
                requires.append(words[0])
        elif words[:2] == ["require", "("] or words[:1] == ["require("]:
            in_require = True
        elif len(words) >= 3 and words[0] == "require" and direct:
            requires.append(words[1])
        elif len(words) == 2:
            single.setdefault(words[0], clip(words[1].strip('"'), 200))
    module, go, toolchain = (single.get(name, "") for name in ("module", "go", "toolchain"))
    if not module:
        return []
    version = f", for Go {go}" if go else ""
    version += f" with the {toolchain} toolchain" if toolchain else ""
    found = [(FACT, "module", f"The project is the Go module {module}{version} (from {source}).")]
    if requires:
        uses = _names_phrase([clip(r, 100) for r in dict.fromkeys(requires)], MAX_STACK_NAMES)
        found.append((FACT, "stack", f"The project uses {uses} (from {source})."))
    return found


def _cargo_toml(source: str, text: str) -> list[_Found]:
    """Crate name and description, edition and Rust version, dependencies, workspace members."""
    data = _toml(text)
    if data is None:
        return []
    package, workspace = _table(data, "package"), _table(data, "workspace")
    shared = _table(workspace, "package")
    origin = f"from {source}"
    found: list[_Found] = []
    name, description = _string(package, "name"), _string(package, "description")
    if name:
        about = f": {description.rstrip('.')}" if description else ""
        found.append((FACT, "crate", f"The Rust crate {name}{about} ({origin})."))
    edition = _string(package, "edition") or _string(shared, "edition")
    rust = _string(package, "rust-version") or _string(shared, "rust-version")
    if edition or rust:
        parts = [f"Rust edition {edition}"] if edition else []
        parts += [f"Rust {rust} or newer"] if rust else []
        found.append((FACT, "rust", f"The project uses {' and '.join(parts)} ({origin})."))
    dependencies = list(dict.fromkeys([*_table(data, "dependencies"), *_table(workspace, "dependencies")]))
    if dependencies:
        uses = _names_phrase([clip(d, 60) for d in dependencies], MAX_STACK_NAMES)
        found.append((FACT, "stack", f"The project uses {uses} ({origin})."))
    members = _strings(workspace, "members")
    if members:
        text = f"The Cargo workspace has the members {_names_phrase(members, 10)} ({origin})."
        found.append((FACT, "workspace", text))
    return found


MANIFESTS: dict[str, Callable[[str, str], list[_Found]]] = {
    "pyproject.toml": _pyproject,
    "package.json": _package_json,
    "go.mod": _go_mod,
    "Cargo.toml": _cargo_toml,
}


def _toml(text: str) -> dict[str, Any] | None:
    try:
        return tomllib.loads(text)
    except (ValueError, RecursionError):  # TOMLDecodeError is a ValueError
        return None


def _json(text: str) -> dict[str, Any] | None:
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def _table(data: dict[str, Any], key: str) -> dict[str, Any]:
    value = data.get(key)
    return value if isinstance(value, dict) else {}


def _string(data: dict[str, Any], key: str) -> str:
    value = data.get(key)
    return clip(value, 200) if isinstance(value, str) else ""


def _number(data: dict[str, Any], key: str) -> float | None:
    value = data.get(key)
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def _strings(data: dict[str, Any], key: str) -> list[str]:
    value = data.get(key)
    items = [value] if isinstance(value, str) else value if isinstance(value, list) else []
    return [clip(item, 200) for item in items if isinstance(item, str) and item.strip()]


def _stack(names: list[str], known: dict[str, str], *, python: bool = False) -> str:
    """Well-known libraries first (most defining first), by their usual names, then the others as declared."""
    keys = [re.sub(r"[-_.]+", "-", n).lower() if python else n for n in names]
    order = {name: index for index, name in enumerate(known.values())}
    famous = sorted((known[k] for k in keys if k in known), key=order.__getitem__)
    others = [clip(n, 60) for n, k in zip(names, keys, strict=True) if k not in known]
    return _names_phrase(list(dict.fromkeys(famous + others)), MAX_STACK_NAMES)


def _colon(details: list[str]) -> str:
    return f": {', '.join(details)}" if details else ""


# -- sentences ----------------------------------------------------------------------------------


def _names_phrase(names: list[str], limit: int) -> str:
    """``"A"``, ``"A and B"``, ``"A, B and C"``; beyond ``limit`` names, ``"A, B and 5 more"``."""
    if len(names) > limit:
        return f"{', '.join(names[:limit])} and {len(names) - limit} more"
    if len(names) <= 1:
        return "".join(names)
    return f"{', '.join(names[:-1])} and {names[-1]}"

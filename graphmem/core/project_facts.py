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
import re
from collections.abc import Callable
from dataclasses import dataclass

from graphmem.core.manifest_facts import MANIFESTS, read_manifest
from graphmem.core.models import Category
from graphmem.core.text import clip, names_phrase, sentence

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
        found = [ProjectFact(c, t, path, f"{path}#{c}:{slug}") for c, slug, t in read_manifest(kind, path, text)]
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
    covered = names_phrase(headings or [title], MAX_DOC_HEADINGS)
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

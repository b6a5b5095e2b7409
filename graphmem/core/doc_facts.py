"""What a repository's docs teach: READMEs, CONTRIBUTING, agent instructions, docs pages.

Pure functions over one file's path and text, each returning ``(category, slug, text)``
findings; ``project_facts.extract_facts`` turns them into ``ProjectFact``s keyed
``"<source>#<category>:<slug>"``. A free-text rule, bullet or command is keyed by *its
own words* (``_slug``): lines added, removed or moved around it keep its key, while
rewording it gives a new key, so the old memory is archived and the new one added.
Section-level facts (a README's description, a docs page's headings) are keyed by their
role (``description``, ``headings``).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable

from graphmem.core.markdown import Block, read_blocks
from graphmem.core.models import Category
from graphmem.core.text import clip, names_phrase, sentence

MAX_RULES_PER_FILE = 50
MAX_PROCEDURES_PER_FILE = 10
MAX_SEQUENCE_COMMANDS = 6  # a setup block becomes one "then, then" procedure of at most this many steps
MAX_COMMAND_CHARS = 200
MAX_DOC_HEADINGS = 15
MAX_FACT_CHARS = 500
MAX_DESCRIPTION_CHARS = 400
MAX_HEADING_CHARS = 80  # of a heading a fact names (a heading may be 5,000 characters long)

FACT, DIRECTIVE, PROCEDURE = Category.FACT.value, Category.DIRECTIVE.value, Category.PROCEDURE.value

Found = tuple[str, str, str]  # (category, slug, text)

# The section ``graphmem install`` writes (adapters/agents_md.py), whose start marker names the
# clients it is for since the section is shared (``<!-- graphmem:start for opencode, codex -->``).
# The names are bounded: unbounded, each unclosed marker was searched to the end of the file.
_GRAPHMEM_SECTION_RE = re.compile(
    r"<!--\s*graphmem:start(?:\s+for\s[^>]{0,200}?)?\s*-->.*?(?:<!--\s*graphmem:end\s*-->|\Z)", re.DOTALL
)
_COMMENT_RE = re.compile(r"<!--.*?(?:-->|\Z)", re.DOTALL)
_SPACE_RE = re.compile(r"\s+")


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


def _agent_rules(source: str, text: str) -> list[Found]:
    """Each rule (a bullet or sentence saying must, never, use, ...) → a directive; other bullets → facts.

    graphmem's own section (between ``<!-- graphmem:start -->`` and ``<!-- graphmem:end -->``)
    is skipped. A bullet or paragraph ending in ":" introduces the bullets under it:
    "Before committing:" + "run `make lint`" is one rule.
    """
    text = _COMMENT_RE.sub("", _GRAPHMEM_SECTION_RE.sub("", text))
    blocks = read_blocks(text, line_sentences=True)
    rules: list[Found] = []
    leads: list[tuple[int, str]] = []  # (indent, text) of the lead-ins above the current bullet
    # The leads' text, whether it reads as a rule, and its words: read once for all the bullets
    # under them. Read again for each, a 200 KB AGENTS.md of long lead-ins over thousands of short
    # bullets took six minutes. A lead ends in ":", so no rule's words run on into the bullet.
    read: tuple[str, bool, int] | None = None
    for block in blocks:
        if len(rules) >= MAX_RULES_PER_FILE:
            break  # all a file's rules kept: those past them are not read
        if block.kind == "item":
            while leads and leads[-1][0] >= block.level:
                leads.pop()
                read = None
            if block.text.endswith(":"):
                leads.append((block.level, block.text))
                read = None
                continue
            if read is None:
                lead = " ".join(text for _, text in leads)
                read = (lead, _is_rule(lead), len(_WORD_RE.findall(lead)))
            lead, lead_rule, lead_words = read
            if _is_rule(block.text) or lead_rule:
                rules.append(_rule(DIRECTIVE, source, block, f"{lead} {block.text}".lstrip()))
            elif lead_words + len(_WORD_RE.findall(block.text)) >= 3:
                rules.append(_rule(FACT, source, block, f"{lead} {block.text}".lstrip()))
        elif block.kind == "paragraph":
            leads = [(-1, block.text)] if block.text.endswith(":") and len(block.text) <= 120 else []
            read = None
            if not leads:
                rules += [_rule(DIRECTIVE, source, block, s) for s in _sentences(block.text) if _is_rule(s)]
        else:
            leads, read = [], None
    return rules[:MAX_RULES_PER_FILE] + _procedures(source, blocks)


def _rule(category: str, source: str, block: Block, text: str) -> Found:
    where = f"{source} ({clip(block.section[-1], MAX_HEADING_CHARS)})" if block.section else source
    lead = "Directive from" if category == DIRECTIVE else "Noted in"
    body = sentence(clip(_lower_first(text), MAX_FACT_CHARS))
    return category, _slug(text), f"{lead} {where}: {body}"


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


# A command that installs a package by its name (``npm install express``, ``npm i -g
# express-generator@4``, ``pip install -U click``): in a README, its section is how to *use* the
# project, not how to work on it (that is ``npm install``, ``pip install -e .``, ``npm ci``).
_NAMED_INSTALL_RE = re.compile(
    r"^(?!.* (?:-[rce]|--requirement|--editable|--constraint)\b)"  # a requirements file, the checkout
    r"(?:sudo )?(?:(?:npm|pnpm|bun) (?:install|i|add)|yarn (?:global )?add|(?:pip3?|pipx|uv pip) install"
    # Options are ``-[\w-]+`` (``-g``, ``--save-dev``), one way to match each: ``-{1,2}[\w-]+``
    # matched ``--x`` two ways, so a line of 40 options that ends unlike a name took 2^40 tries.
    r"|gem install|cargo install|go install)(?: -[\w-]+)* (?![-.])[\w@][\w@/.:=<>~^-]*(?:\s|$)"
)


def _for_users(blocks: list[Block]) -> frozenset[tuple[str, ...]]:
    """The sections of a README whose commands install the project (or a package) by its name:
    what a user of the project runs, none of it a procedure of the repository."""
    return frozenset(
        block.section
        for block in blocks
        if block.kind == "code"
        and block.section
        and any(_NAMED_INSTALL_RE.match(command) for command in _commands(block.text, bare=not block.lang))
    )


def _procedures(source: str, blocks: list[Block], *, readme: bool = False) -> list[Found]:
    """Commands in shell code blocks under install / setup / test / build / run / usage headings
    (in a README, not those of a section about using the project: ``_for_users``)."""
    found: list[Found] = []
    skipped = _for_users(blocks) if readme else frozenset()
    for block in blocks:
        if block.kind != "code" or block.lang not in _SHELL_LANGS or not block.section:
            continue
        if block.section in skipped:
            continue
        if not any(_PROCEDURE_HEADING_RE.search(heading) for heading in block.section):
            continue
        commands = _commands(block.text, bare=not block.lang)
        if not commands:
            continue
        if len(commands) > 1 and _SETUP_HEADING_RE.search(block.section[-1]):
            steps = commands[:MAX_SEQUENCE_COMMANDS]
            text = f"Set up the project with {', then '.join(f'`{c}`' for c in steps)} (from {source})."
            found.append((PROCEDURE, _slug(" ".join(steps)), text))
            continue
        for command in commands:
            text = f"{_purpose(command, block.section[-1])} `{command}` (from {source})."
            found.append((PROCEDURE, _slug(command), text))
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
    return f"Under “{clip(heading, MAX_HEADING_CHARS)}”, run"


# -- READMEs, CONTRIBUTING and docs ------------------------------------------------------------

_ABOUT_HEADING_RE = re.compile(r"\b(?:about|overview|introduction|description|what)\b", re.IGNORECASE)


def _readme(source: str, text: str) -> list[Found]:
    """The project's description (its first real paragraph) and its commands."""
    blocks = read_blocks(text, rst=source.lower().endswith(".rst"))
    facts: list[Found] = []
    title = next((clip(b.text, 60) for b in blocks if b.kind == "title"), "")
    for block in blocks:
        if block.section and not _ABOUT_HEADING_RE.search(block.section[-1]):
            break
        if block.kind == "paragraph" and len(_WORD_RE.findall(block.text)) >= 4:
            about = f"the project {title}" if title else "the project"
            text = f"{source} describes {about}: {sentence(_first_sentences(block.text))}"
            facts.append((FACT, "description", text))
            break
    return facts + _procedures(source, blocks, readme=True)


def _contributing(source: str, text: str) -> list[Found]:
    return _procedures(source, read_blocks(text, rst=source.lower().endswith(".rst")))


def _docs_page(source: str, text: str) -> list[Found]:
    """One fact per page: the headings it covers, so recall can point to it."""
    blocks = read_blocks(text)
    title = next((b.text for b in blocks if b.kind == "title"), "")
    headings = list(dict.fromkeys(clip(b.text, 80) for b in blocks if b.kind == "heading"))
    if not headings and not title:
        return []
    name = f"{source} ({clip(title, 80)})" if title and headings else source
    covered = names_phrase(headings or [title], MAX_DOC_HEADINGS)
    return [(FACT, "headings", f"{name} covers: {covered}.")]


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


DOC_READERS: dict[str, Callable[[str, str], list[Found]]] = {
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

"""The custom commands OpenCode offers in a project, and their expansions in its sessions.

When the person types ``/name args``, OpenCode expands the command's template (``$1``.. and
``$ARGUMENTS`` replaced by what they typed, the arguments added after it when it has neither,
each ``!`cmd``` replaced by that shell command's output) and stores the result as the user
message's one text part, exactly as if the person had typed it: a real OpenCode 1.18.33 writes
no mark on the message or the part (no ``synthetic``, no command name; only a ``subtask``
command leaves one, a ``subtask`` part, which the reader leaves out). A repository can ship such
templates (``.opencode/command/*.md``, ``command`` in its ``opencode.json``): "From now on always
push to main" would be learned as the person's preference, and injected as their convention.

With no mark to go by, an expansion is recognised by the templates OpenCode itself expands, read
where OpenCode 1.18.33 reads them (its ``ConfigPaths``): ``{command,commands}/**/*.md`` (the body
after the front matter) and the ``command.<name>.template`` entries of ``opencode.json`` /
``opencode.jsonc`` (``{file:...}`` read as OpenCode reads it) in each ``.opencode`` folder from
the session's directory up to its worktree (the folder holding ``.git``), in
``$XDG_CONFIG_HOME/opencode``, ``~/.opencode`` and ``$OPENCODE_CONFIG_DIR``, and the config files
of the folders from the directory up to the worktree. A text is an expansion when it is a template
with each placeholder, ``!`cmd``` and ``{env:...}`` standing for any text, whitespace ignored (a
text the reader cut: when it starts as one would). A skill invoked as a command is recognised by
the lines OpenCode adds after it ("Base directory for this skill: ..."), wherever the skill came
from. ``tests/integration/opencode/test_custom_commands.py`` runs the real OpenCode.

What fills the placeholders is not learned either: it is the parameter of a prompt someone else
wrote (read alone it says something else: ``/deploy always skip tests``), and it cannot be told
apart from a shell command's output (a repository's file, through ``!`cat NOTES.md```) -- as
Claude Code's ``<command-args>`` (``own_words``). It fails closed: a template that is only a
shell's output matches any text, and a project whose command folders hold more than the bounds
below has every user text of its sessions taken as a possible expansion (both logged). A file
that is no regular file, is unreadable or is no valid config is one OpenCode cannot expand either.

Not recognised: MCP prompts and the built-in ``/init``, ``/review`` (no repository's text); a
skill's text longer than the reader's bound (its added lines are cut off); a template changed or
removed between the session and its reading. A template with ``!`cmd``` ran a command as the
person when it was expanded: what that command did (to OpenCode's database too) no reader undoes.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from graphmem.adapters.jsonc import get_value
from graphmem.core.sessions import SessionMessage, SessionRead
from graphmem.errors import InvalidInputError
from graphmem.regular_files import read_regular

__all__ = ["OpenCodeCommands"]

log = logging.getLogger(__name__)

# Templates read for one project (its folders and the person's): past these, nothing of what its
# sessions' users say is learned, since any of it could be the expansion of one not read.
MAX_TEMPLATES = 500
MAX_TEMPLATES_BYTES = 8_000_000
# Folders walked under the command folders (nested/child.md is the command /nested/child).
MAX_FOLDERS = 1_000
MAX_FOLDER_DEPTH = 16
# Of one template: a longer one is read as its start, followed by any text.
MAX_TEMPLATE_BYTES = 256_000
MAX_CONFIG_BYTES = 1_000_000
# Folders from a session's directory up to its worktree.
MAX_LEVELS = 64
_CONFIG_NAMES = ("opencode.json", "opencode.jsonc")
# What stands for any text in a template: what the person typed (placeholders), and what they did
# not (a shell command's output, a variable of OpenCode's environment).
_PLACEHOLDER = re.compile(r"\$\d+|\$ARGUMENTS")
_OUTPUT = re.compile(r"!`[^`]+`|\{env:[^}]+\}")
_HOLE = re.compile(f"{_PLACEHOLDER.pattern}|{_OUTPUT.pattern}")
_FILE = re.compile(r"\{file:([^}]+)\}")
_SPACE = re.compile(r"\s+")
# The end opencode_sessions.TRUNCATED puts on a text it cut.
_CUT = re.compile(r"… \[truncated: [0-9,]+ more characters\]\Z")
# The lines OpenCode 1.18.33 adds after a skill's text when the skill is invoked as a command.
_SKILL_TRAILER = re.compile(
    r"^Base directory for this skill: .*\n"
    r"Relative paths in this skill \(e\.g\., scripts/, references/\) are relative to this base directory\.$",
    re.MULTILINE,
)


@dataclass(frozen=True, slots=True)
class _Template:
    """A template as its expansions are matched: its literal pieces (whitespace removed), any text
    between each two, and after the last when ``open_end`` (the arguments, or what was not read)."""

    literals: tuple[str, ...]
    open_end: bool

    def matches(self, text: str, cut: bool) -> bool:
        """Whether ``text`` (whitespace removed) is an expansion; when ``cut``, starts as one."""
        first, *rest = self.literals
        if cut:  # it ends in the first piece, or past it: what stands for any text takes the rest
            return first.startswith(text) or (text.startswith(first) and bool(rest or self.open_end))
        if not text.startswith(first):
            return False
        if not rest:
            return self.open_end or len(text) == len(first)
        position = len(first)
        for literal in rest[:-1]:  # the leftmost place of each piece: enough when any text may fill the gaps
            found = text.find(literal, position)
            if found < 0:
                return False
            position = found + len(literal)
        if self.open_end:
            return text.find(rest[-1], position) >= 0
        return len(text) - len(rest[-1]) >= position and text.endswith(rest[-1])


def _template(text: str, cut: bool) -> _Template | None:
    """``text`` as a template; None when an expansion would hold nothing but what the person typed
    (a template blank or of placeholders alone)."""
    literals = tuple(_SPACE.sub("", piece) for piece in _HOLE.split(text))
    if not any(literals) and not _OUTPUT.search(text):
        return None
    return _Template(literals, open_end=cut or not _PLACEHOLDER.search(text))


@dataclass
class _Offered:
    """The templates of the commands OpenCode offers in one project, as read so far."""

    templates: list[_Template] = field(default_factory=list)
    read_bytes: int = 0
    folders: int = 0
    complete: bool = True  # False: past a bound, any text may be an expansion

    def expanded(self, text: str) -> bool:
        """Whether ``text``, a user message's text, is the expansion of a command or a skill."""
        if not self.complete or _SKILL_TRAILER.search(text):
            return True
        body = _CUT.sub("", text)
        flat = _SPACE.sub("", body)
        return any(template.matches(flat, cut=body != text) for template in self.templates)

    def add(self, name: str, text: str, cut: bool) -> None:
        """The template ``text`` of the command ``name`` (a path), read in part when ``cut``."""
        if len(self.templates) >= MAX_TEMPLATES:
            self.complete = False
            return
        template = _template(text, cut)
        if template is None:
            return
        self.templates.append(template)
        if not any(template.literals):
            log.warning(
                "OpenCode's command %s is a shell command's output alone: no user message of a session "
                "where it is offered is learned (any could be its expansion)",
                name[:300],
            )

    def read(self, path: Path, most: int) -> tuple[str, bool] | None:
        """The text of the regular file at ``path`` (its first ``most`` bytes) and whether it is
        longer; None when there is none to read (OpenCode cannot read it either)."""
        if self.read_bytes > MAX_TEMPLATES_BYTES:
            self.complete = False
            return None
        try:
            data = read_regular(path, most)
        except (OSError, ValueError):  # ValueError: a NUL in a name a config file gave
            return None
        cut = len(data) > most
        self.read_bytes += len(data)
        text = data[:most].decode("utf-8", "replace").removeprefix("\ufeff")
        return (text.removesuffix("\ufffd") if cut else text), cut  # a character cut by the bound


class OpenCodeCommands:
    """The custom commands OpenCode offers, read once per project directory: one instance per run
    (a template edited since is read by the next)."""

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        self._environ = os.environ if environ is None else environ
        self._offered: dict[str, _Offered] = {}

    def left_out(self, read: SessionRead) -> SessionRead:
        """``read`` without the user texts that are a command's or a skill's expansion."""
        messages = read.transcript.messages
        if not any(m.role == "user" and any(p.type == "text" for p in m.parts) for m in messages):
            return read  # nothing to recognise: no file read
        offered = self._for(read.transcript.directory)
        kept = tuple(_without(m, offered) if m.role == "user" else m for m in messages)
        return replace(read, transcript=replace(read.transcript, messages=kept))

    def _for(self, directory: str) -> _Offered:
        known = self._offered.get(directory)
        if known is not None:
            return known
        known = self._offered[directory] = _Offered()
        seen: set[Path] = set()
        for folder, configs, commands in self._folders(directory):
            if folder not in seen:
                seen.add(folder)
                _read_folder(known, folder, configs, commands=commands, home=self._environ.get("HOME", ""))
        if not known.complete:
            log.warning(
                "OpenCode's command folders for %r hold more than graphmem reads (%d templates, %d "
                "bytes, %d folders): no user message of its sessions is learned (any could be a command's)",
                directory[:300], MAX_TEMPLATES, MAX_TEMPLATES_BYTES, MAX_FOLDERS,
            )  # fmt: skip
        return known

    def _folders(self, directory: str) -> Iterator[tuple[Path, tuple[str, ...], bool]]:
        """Each folder OpenCode reads commands from: the names of its config files, and whether it
        has command folders."""
        env = self._environ
        home = env.get("HOME", "")
        config_home = env.get("XDG_CONFIG_HOME") or (os.path.join(home, ".config") if home else "")
        if config_home:
            yield Path(config_home, "opencode"), ("config.json", *_CONFIG_NAMES), True
        for folder in _up_to_worktree(directory):
            yield folder, _CONFIG_NAMES, False
            yield folder / ".opencode", _CONFIG_NAMES, True
        if home:
            yield Path(home, ".opencode"), _CONFIG_NAMES, True
        if env.get("OPENCODE_CONFIG_DIR"):
            yield Path(env["OPENCODE_CONFIG_DIR"]), _CONFIG_NAMES, True


def _up_to_worktree(directory: str) -> list[Path]:
    """The session's directory and those above it up to its worktree (the first holding ``.git``,
    else the root), where OpenCode looks for ``.opencode`` folders and ``opencode.json``."""
    if not directory or "\0" in directory or not os.path.isabs(directory):
        return []  # no directory OpenCode runs in
    here = Path(os.path.normpath(directory))
    folders = [here]
    while len(folders) < MAX_LEVELS and here.parent != here and not os.path.lexists(here / ".git"):
        here = here.parent
        folders.append(here)
    return folders


def _read_folder(
    offered: _Offered, folder: Path, configs: tuple[str, ...], *, commands: bool, home: str
) -> None:
    """The templates of ``folder``'s config files named ``configs`` and, with ``commands``, of the
    command files under it."""
    for name in configs:
        _read_config(offered, folder / name, home)
    for sub in ("command", "commands") if commands else ():
        for path in _markdown_under(offered, folder / sub):
            read = offered.read(path, MAX_TEMPLATE_BYTES)
            if read is not None:
                offered.add(str(path), _body(read[0]), read[1])


def _markdown_under(offered: _Offered, top: Path) -> Iterator[Path]:
    """The ``**/*.md`` under ``top``, in order, links followed as OpenCode's glob follows them (a
    loop ends at the bounds)."""
    for root, folders, files in os.walk(top, followlinks=True):
        offered.folders += 1
        if offered.folders > MAX_FOLDERS:
            offered.complete = False
            return
        if len(Path(root).relative_to(top).parts) >= MAX_FOLDER_DEPTH:
            folders.clear()
        folders.sort()
        yield from (Path(root, name) for name in sorted(files) if name.endswith(".md"))


def _body(text: str) -> str:
    """A command file's template: what follows its front matter (between ``---`` lines)."""
    first, _, rest = text.partition("\n")
    end = re.search(r"^---[ \t]*\r?$", rest, re.MULTILINE) if first.rstrip() == "---" else None
    return rest[end.end() :] if end else text


def _read_config(offered: _Offered, path: Path, home: str) -> None:
    """The templates of the ``command`` entries of the config file at ``path``, if there is one."""
    read = offered.read(path, MAX_CONFIG_BYTES)
    if read is None or read[1]:
        return  # none, or larger than a config file is
    try:
        commands = get_value(read[0], ("command",))
    except (InvalidInputError, ValueError, RecursionError):
        return  # not valid: OpenCode does not start with it
    for name, entry in commands.items() if isinstance(commands, dict) else ():
        template = entry.get("template") if isinstance(entry, dict) else None
        if isinstance(template, str):
            offered.add(f"{path}#{name}", *_with_files(offered, template, path.parent, home))


def _with_files(offered: _Offered, template: str, folder: Path, home: str) -> tuple[str, bool]:
    """``template`` with each ``{file:path}`` replaced by that file's text, as OpenCode replaces it
    (relative to the config file's folder; ``~/`` the home); and whether one was read in part."""
    cut = False
    pieces: list[str] = []
    at = 0
    for match in _FILE.finditer(template):
        name = match[1]
        if name.startswith("~/") and home:
            name = os.path.join(home, name[2:])
        read = offered.read(folder / name, MAX_TEMPLATE_BYTES)
        pieces += [template[at : match.start()], read[0].strip() if read else ""]
        cut = cut or (read is not None and read[1])
        at = match.end()
    return "".join(pieces) + template[at:], cut


def _without(message: SessionMessage, offered: _Offered) -> SessionMessage:
    """``message`` (a user's) without its texts that are an expansion."""
    parts = tuple(p for p in message.parts if p.type != "text" or not offered.expanded(p.text))
    return message if len(parts) == len(message.parts) else replace(message, parts=parts)

"""Secret redaction: API keys, tokens, passwords, private keys and credentials in URLs.

Pure functions over strings; no I/O. ``redact`` runs on everything graphmem stores
from a session or a ``remember`` call, so a secret pasted into a chat never reaches
the database. Each secret becomes a placeholder that names its kind
(``[REDACTED:github-token]``) and keeps the text around it, so a memory still reads.

Look-alikes survive: git SHAs, UUIDs, lockfile hashes, ``sk-learn``, ``password``
as a word, URLs without credentials, placeholders (``<token>``, ``${GITLAB_TOKEN}``),
type annotations (``password: str``). The provider patterns (``core/token_formats.py``)
follow the ``detect-secrets`` plugins and the providers' documented token formats; a generic
rule catches values after key-like names (``DB_PASSWORD=...``, ``"api_key": "..."``).
Secrets named in prose ("my password for the staging admin is ...", "our api key for the
geocoder is ...", a passphrase "correct-horse-battery-staple" after "password" or "passphrase"),
``.pgpass`` and ``.netrc`` entries and a Twilio auth token after its account SID go too.
``redact`` is idempotent and never raises.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from graphmem.core.token_formats import TOKEN_FORMATS, TokenFormat

PLACEHOLDER_PREFIX = "[REDACTED:"

# Shortest value after a token-like name (``TOKEN=``) taken for a secret; shorter
# values there are counts, flags and enum words (``max_tokens=4096``, ``auth=basic``).
MIN_KEYED_SECRET_CHARS = 8
# Shannon entropy (bits per character) from which a keyed value of only lower-case
# letters and dashes is still random enough to be a secret (words score below 3.5).
MIN_KEYED_ENTROPY_BITS = 3.6
# Longest value the generic rules consider: longer runs are data (base64 images), not keys.
MAX_KEYED_VALUE_CHARS = 512


@dataclass(frozen=True, slots=True)
class Redaction:
    """Text with its secrets replaced, how many were replaced, and of which kinds."""

    text: str
    count: int = 0
    kinds: tuple[str, ...] = ()  # distinct kinds, sorted ("github-token", "password")


def placeholder(kind: str) -> str:
    """What a secret of ``kind`` is replaced with: ``[REDACTED:kind]``."""
    return f"{PLACEHOLDER_PREFIX}{kind}]"


# -- what counts as a placeholder, not a secret ---------------------------------

_PLACEHOLDER_VALUE_RE = re.compile(
    r"""^(?:
        \[REDACTED:[a-z0-9-]+\]        # already redacted
      | <[^<>]*>                        # <token>, <your-password>
      | \$\{?[A-Za-z_][A-Za-z0-9_]*\}?  # $API_KEY, ${GITLAB_TOKEN}
      | \{\{[^{}]*\}\}                  # {{ secrets.TOKEN }}
      | %\(?[a-z_]*\)?s                 # %s, %(password)s
      | (.)\1*                          # xxx, ***, 0000
      | [xX*.•-]+                       # xxxx-xxxx
    )$""",
    re.VERBOSE,
)
# Words that stand for a value in docs and code (type names, examples), not a value.
_PLACEHOLDER_WORDS = frozenset(
    {
        "password", "passwd", "pass", "pwd", "secret", "token", "key", "apikey", "api_key",
        "changeme", "example", "redacted", "hidden", "masked", "none", "null", "nil",
        "true", "false", "str", "string", "bytes", "int", "bool", "optional", "secretstr",
        "required", "undefined", "empty", "your_password", "your_token", "yourpassword",
        "your-password", "your-token", "mypassword", "my_password", "dummy", "test",
        "xxx", "todo", "tbd", "env", "getenv", "process.env", "os.environ", "field",
    }
)  # fmt: skip


def _is_placeholder(value: str) -> bool:
    quoted = value.strip("'\"`")
    bare = quoted.rstrip(")]}>,")
    if not bare or _PLACEHOLDER_VALUE_RE.match(bare) or _PLACEHOLDER_VALUE_RE.match(quoted):
        return True
    lowered = bare.casefold()
    if lowered in _PLACEHOLDER_WORDS or lowered.split("[", 1)[0].split("(", 1)[0] in _PLACEHOLDER_WORDS:
        return True
    # Code, not a literal: os.environ["X"], settings.password, get_secret()
    if re.match(r"^[A-Za-z_][\w.]*(?:\[|\()", bare) or re.match(r"^[a-z_]+\.[a-z_.]+$", bare):
        return True
    return "example" in lowered or "your" in lowered or "placeholder" in lowered


def _entropy(value: str) -> float:
    counts = Counter(value)
    total = len(value)
    return -sum(n / total * math.log2(n / total) for n in counts.values())


def _looks_random(value: str) -> bool:
    """A keyed value that reads like a generated secret, not a word, number or name."""
    if len(value) < MIN_KEYED_SECRET_CHARS or len(value) > MAX_KEYED_VALUE_CHARS:
        return False
    if value.isdigit() or re.fullmatch(r"\d+(?:\.\d+)+", value):  # counts, versions
        return False
    has_digit = any(c.isdigit() for c in value)
    has_alpha = any(c.isalpha() for c in value)
    has_upper = any(c.isupper() for c in value)
    has_lower = any(c.islower() for c in value)
    if has_digit and has_alpha:
        return True
    if has_upper and has_lower and len(value) >= 16:
        return True
    return _entropy(value) >= MIN_KEYED_ENTROPY_BITS and len(value) >= 20


# -- the patterns ------------------------------------------------------------------

_PRIVATE_KEY_RE = re.compile(
    r"(?P<head>)(?P<secret>-----BEGIN (?P<label>[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?)-----"
    r".*?(?:-----END (?P=label)-----|\Z))",
    re.DOTALL,
)
# scheme://user:password@host: only the password goes (the host stays useful).
_URL_CREDENTIALS_RE = re.compile(
    r"(?P<head>\b[A-Za-z][A-Za-z0-9+.-]{1,20}://[^\s:/@'\"<>]*:)(?P<secret>[^\s@/'\"<>]+)(?=@[^\s@]+)"
)
# Authorization: Bearer <token>, Basic <base64>, token <token>
_AUTH_HEADER_RE = re.compile(
    r"(?P<head>\b(?:Proxy-)?Authorization\b[\"']?\s*[:=]\s*[\"']?(?:Bearer|Basic|Token|token|bearer|Digest|Bot)\s+)"
    r"(?P<secret>[A-Za-z0-9._~+/=-]{8,})",
    re.IGNORECASE,
)
_BEARER_RE = re.compile(r"(?P<head>\bBearer\s+)(?P<secret>[A-Za-z0-9._~+/-]{20,}=*)")
# Azure connection strings and SAS URLs: AccountKey=..., SharedAccessKey=..., sig=...
_AZURE_RE = re.compile(
    r"(?P<head>(?<![A-Za-z0-9])(?:AccountKey|SharedAccessKey|SharedSecret|PrimaryKey|SecondaryKey)\s*=\s*"
    r"|[?&;]sig=)(?P<secret>[A-Za-z0-9+/%=_-]{16,})",
    re.IGNORECASE,
)
# A password after its flag or keyword, bare or in the quotes it opens with: the quotes stay.
_QUOTED_SECRET = r"(?P<q>[\"']?)(?P<secret>[^\s\"']+)(?P=q)"
_COMMAND_REACH = r"[^\n|;&]{0,1000}?"
# The password of a command line: mysql -pSECRET, docker login -p SECRET, sshpass -p SECRET,
# curl -u user:SECRET. A bare -p elsewhere is a port or a path, so only these commands. The flag
# is looked for within _COMMAND_REACH characters of the command's name: searched from each name to
# the end of its line, a line of "curl curl ..." took minutes (each name scanning the rest).
_COMMAND_PASSWORDS: tuple[tuple[tuple[str, ...], re.Pattern[str]], ...] = tuple(
    (hints, re.compile(pattern, re.IGNORECASE))
    for hints, pattern in (
        (
            ("mysql", "mariadb"),
            r"(?P<head>\b(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlsh|mariadb|mariadb-dump)\b"
            rf"{_COMMAND_REACH}(?<!\S)-p){_QUOTED_SECRET}",
        ),
        (
            ("login", "sshpass"),
            rf"(?P<head>\b(?:(?:docker|podman|nerdctl|helm\s+registry|oras)\s+login\b{_COMMAND_REACH}|sshpass\s+)"
            rf"(?<!\S)-p\s+){_QUOTED_SECRET}",
        ),
        (
            ("curl", "wget", "http"),
            rf"(?P<head>\b(?:curl|wget|http|https)\b{_COMMAND_REACH}(?<!\S)(?:-u|--user|--http-user)[\s=]+"
            r"[\"']?[^\s:\"']+:)(?P<secret>[^\s\"'@]+)",
        ),
    )
)
_AZURE_HINTS = ("accountkey", "sharedaccesskey", "sharedsecret", "primarykey", "secondarykey", "sig=")
# --password hunter2, --token=abc..., -p'secret' is too ambiguous to take.
_FLAG_RE = re.compile(
    r"(?P<head>(?<!\S)--(?:password|passwd|pass|token|api-key|apikey|secret|secret-key|client-secret"
    r"|auth-token|access-token|access-key|private-key|registration-token|http-password)(?:=|\s+))"
    r"(?P<q>[\"']?)(?P<secret>[^\s\"']{3,512})(?P=q)",
    re.IGNORECASE,
)
# What a secret named in prose is for: "my password *for the staging admin* is ...",
# "our api key *for the geocoder* is ...". A few words, one line, no assignment in them.
_OWNER = r"\s+(?:for|of|on|to|at)\s+[^\n:=\"'`]{1,60}?"
_PROSE_OWNER = rf"(?:{_OWNER})?"
# "the admin password is Winter2024!", "my password for the staging admin is hunter2-Prod",
# "the password for the staging db: Xk9#mq2LpW": prose, so only a value that reads like a password.
_PROSE_PASSWORD_RE = re.compile(
    rf"(?P<head>\b(?:password|passwd|passphrase|pwd)(?:{_PROSE_OWNER}\s+(?:is|was|will\s+be)\s+|{_OWNER}:\s+)"
    r"[\"'`]?)(?P<secret>[^\s\"'`]{5,127}[^\s\"'`.,;:)])",
    re.IGNORECASE,
)
# "use my password hunter2 for the staging admin", "set the password to hunter2", "my pass is
# hunter2", "pw is hunter2": no "is", ":" or "=" after "password", or a short name ("pass", "pw",
# "pwd") with one. Prose too, so only a value that reads like a password (``_loose_password``):
# "reset your password to continue" and "use a password manager" stay.
_LOOSE_PASSWORD_RE = re.compile(
    r"(?P<head>\b(?:(?:password|passwd|passphrase)(?:\s+(?:to|is|was|will\s+be)\s+|\s+)"
    r"|(?:pass|pw|pwd)(?:\s+(?:is|was|will\s+be)\s+|\s*:\s+))[\"'`]?)"
    r"(?P<secret>[^\s\"'`]{5,127}[^\s\"'`.,;:)])",
    re.IGNORECASE,
)
# "the API key is 23a1cb8f...", "my token: 9fQ2...", "our api key for the geocoder is 3f9a...":
# prose, so only a value that looks generated.
_PROSE_KEY_RE = re.compile(
    r"(?P<head>\b(?P<name>api[ _-]?key|access[ _-]?key|secret[ _-]?key|private[ _-]?key|signing[ _-]?key"
    rf"|token|secret|client[ _-]?secret|auth(?:entication)?[ _-]?token|credentials?){_PROSE_OWNER}"
    r"(?:\s+(?:is|was|will\s+be|is\s+set\s+to|reads|=)\s+|\s*[:=]\s*)[\"'`]?)"
    r"(?P<secret>[^\s\"'`]*[^\s\"'`.,;:!?)])",
    re.IGNORECASE,
)
# A .pgpass line, host:port:database:user:password, alone on its line (or anywhere in a text
# that names .pgpass): the password goes. Five fields exactly, so an IPv6 address, a MAC or a
# time (10:30:45) is no entry; a password's own colons are escaped (\:).
_PGPASS_FIELD = r"(?:[^\s:\\\"'`]|\\.)+"
_PGPASS_RE = re.compile(
    rf"(?P<head>(?:^|(?<=[\s`\"']))(?:[A-Za-z0-9_.-]+|\*|\[[0-9A-Fa-f:]+\]):(?:\d{{1,5}}|\*):"
    rf"{_PGPASS_FIELD}:{_PGPASS_FIELD}:)(?P<secret>{_PGPASS_FIELD})(?=$|[\s`\"'])",
    re.MULTILINE,
)
_PGPASS_LINE_RE = re.compile(rf"^\s*{_PGPASS_RE.pattern}\s*$", re.MULTILINE)
# A .netrc entry: machine HOST login USER [account A] password SECRET, on one line or several.
# The login is required: "machine learning password manager" is prose.
_NETRC_FIELDS = r"(?:\s+(?:account|port|protocol)\s+\S+){0,3}"
_NETRC_RE = re.compile(
    rf"(?P<head>\b(?:machine\s+\S+|default){_NETRC_FIELDS}\s+login\s+\S+{_NETRC_FIELDS}\s+password\s+)"
    + _QUOTED_SECRET,
    re.IGNORECASE,
)
# A Twilio account SID (AC + 32 hex: an id, kept) and, up to 40 characters on, its auth token
# (32 hex, unlabeled: "AC... / 9f8e..."): the token goes.
_TWILIO_AUTH_RE = re.compile(
    r"(?P<head>(?<![A-Za-z0-9])AC[0-9a-fA-F]{32}(?![A-Za-z0-9])[\s\S]{1,40}?)"
    r"(?<![0-9a-fA-F])(?P<secret>[0-9a-fA-F]{32})(?![0-9a-zA-Z])"
)
# AWS secret access keys: 40 base64 characters after an aws-ish name.
_AWS_SECRET_RE = re.compile(
    r"(?P<head>(?<![A-Za-z0-9])aws[A-Za-z0-9_.-]*secret[A-Za-z0-9_.-]*[\"']?(?:\s*[:=]\s*|\s+)[\"']?)"
    r"(?P<secret>[A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])",
    re.IGNORECASE,
)
# name = value, name: value, "name": "value", NAME := value. The name is one run of
# identifier characters (possessive: no backtracking into it); whether it names a
# password or a secret is decided in Python, on the name.
_ASSIGNMENT_RE = re.compile(
    r"""(?P<head>(?<![A-Za-z0-9_.-])(?P<name>[A-Za-z0-9_.-]++)["']?\s*(?::=|=>|[:=])\s*)"""
    r"""(?P<q>["'`])?(?P<secret>(?(q)[^"'`\n]{1,512}|[^\s"'`,;&]{1,512}))(?(q)(?P=q))"""
)
_PASSWORD_WORDS = ("password", "passwd", "passphrase", "pwd")
_SECRET_WORDS = (
    "secret", "token", "apikey", "api_key", "api-key", "access_key", "access-key", "accesskey",
    "private_key", "private-key", "privatekey", "auth_key", "auth-key", "authkey", "credential",
    "signing_key", "signing-key", "signingkey", "encryption_key", "encryption-key", "master_key",
    "master-key", "session_key", "session-key", "passcode",
)  # fmt: skip
_ASSIGNMENT_HINTS = ("pass", "pw", "secret", "token", "key", "credential")


def _sub_whole(token: TokenFormat, text: str, found: list[str]) -> str:
    def replace(match: re.Match[str]) -> str:
        body = match.group(0)
        tail = body.split("_", 2)[-1] if "_" in body[:12] else body.split("-", 1)[-1]
        if _is_placeholder(tail) or "EXAMPLE" in body.upper():
            return body
        found.append(token.kind)
        return placeholder(token.kind)

    return token.pattern.sub(replace, text)


Judge = Callable[[str, str], "str | None"]  # (head, value) -> the kind, or None: not a secret


def _sub_value(
    pattern: re.Pattern[str],
    judge: Judge,
    text: str,
    found: list[str],
    is_placeholder: Callable[[str], bool] = _is_placeholder,
) -> str:
    """Replace group ``secret`` of each match that ``judge`` names a kind for and that is
    no placeholder. After a rejected match the search goes on from its value, so
    ``key: "private_key_id": "..."`` still finds the second name. What a match holds after
    its value (the quote that closes it) stays: ``"[REDACTED:password]"``, still valid JSON."""
    parts: list[str] = []
    done = pos = 0
    while (match := pattern.search(text, pos)) is not None:
        secret = match.group("secret")
        start, end = match.span("secret")
        kind = None
        if not is_placeholder(secret) and PLACEHOLDER_PREFIX not in secret:
            kind = judge(text[match.start() : start], secret)
        if kind is None:
            pos = max(start, match.start() + 1)
            continue
        found.append(kind)
        parts += [text[done:start], placeholder(kind)]
        done, pos = end, max(end, match.end())
    return "".join(parts) + text[done:] if parts else text


def _prose_placeholder(value: str) -> bool:
    """A placeholder after "password is", where a real password may carry the word "Example"
    beside letters and digits of its own ("hunter2-Example"; "example123" stays a placeholder)."""
    if not _is_placeholder(value):
        return False
    rest = re.sub(r"example|sample", "", value, flags=re.IGNORECASE).strip("-_.!'\"`")
    if rest == value.strip("-_.!'\"`") or not rest:
        return True
    return _is_placeholder(rest) or not re.search(r"[A-Za-z]\d|\d[A-Za-z]", rest)


def _private_key(_head: str, block: str) -> str | None:
    """A private key block with key material in it, not a template (``<paste the key here>``)."""
    parts = block.split("-----")
    body = parts[2] if len(parts) > 2 else ""
    return "private-key" if re.search(r"[A-Za-z0-9+/=]{12,}", body) else None


def _always(kind: str) -> Judge:
    return lambda _head, _value: kind


def _when(kind: str, accept: Callable[[str], bool]) -> Judge:
    return lambda _head, value: kind if accept(value) else None


# Words that follow "password:" in prose ("Password: see the vault", "password: reset it").
_PROSE_AFTER_NAME = frozenset(
    {
        "see", "the", "a", "an", "is", "was", "in", "from", "reset", "required", "missing", "wrong",
        "invalid", "expired", "changed", "same", "ask", "use", "check", "stored", "set", "not", "no",
        "it", "this", "that", "hidden", "unchanged", "rotated", "prompt", "prompted",
    }
)  # fmt: skip


def _password_value(value: str) -> bool:
    """A value after a password-like name, not prose that happens to follow one."""
    if value.casefold() in _PROSE_AFTER_NAME:
        return False
    # A quoted sentence is prose; a quoted password has no run of words in it.
    return " " not in value.strip() or (len(value) <= 64 and not re.search(r"\s\w+\s\w+", value))


def _prose_password(value: str) -> bool:
    """A word after "password is" that mixes letters with digits or symbols (not "required",
    not a file name, not words joined by dashes: "stored-in-vault")."""
    core = value.rstrip(".,;:)")
    has_letter = any(c.isalpha() for c in core)
    has_other = any(c.isdigit() or not c.isalnum() for c in core)
    return (
        len(core) >= 6
        and has_letter
        and has_other
        and not re.fullmatch(r"[\w-]+\.[a-z]{2,4}", core)
        and not re.fullmatch(r"[a-z]+(?:[-_][a-z]+)+", core)
        and not _a_path(core)
        and "://" not in core
    )


# A passphrase of words joined by dashes or underscores ("correct-horse-battery-staple"): four
# words or more after "password" (prose joins up to three: "self-service-reset"), three or more
# after "passphrase", which names words. A word prose joins with ("stored-in-vault",
# "easy-to-remember", "see-the-docs") makes it prose.
MIN_PASSPHRASE_WORDS = 4
MIN_NAMED_PASSPHRASE_WORDS = 3
_JOINED_WORDS_RE = re.compile(r"[a-z]{2,}(?:[-_][a-z]{2,})+")
_PROSE_JOINERS = frozenset(
    {
        "a", "an", "the", "in", "on", "at", "to", "of", "for", "by", "with", "from", "into", "and",
        "or", "not", "no", "is", "be", "as", "via", "per", "up", "out", "off", "it", "its", "my",
        "our", "your", "see", "same", "than", "then",
    }
)  # fmt: skip


def _passphrase(head: str, value: str) -> bool:
    """Lower-case words joined by dashes after a password cue: a passphrase, not prose."""
    if not _JOINED_WORDS_RE.fullmatch(value):
        return False
    words = re.split(r"[-_]", value)
    least = MIN_NAMED_PASSPHRASE_WORDS if head.casefold().startswith("passphrase") else MIN_PASSPHRASE_WORDS
    return len(words) >= least and _PROSE_JOINERS.isdisjoint(words)


def _prose_password_kind(head: str, value: str) -> str | None:
    return "password" if _prose_password(value) or _passphrase(head, value) else None


# What may follow "password" in prose and mixes letters with digits: a hash, a cipher, an
# encoding or a version ("store the password SHA-256 hashed", "the password argon2id hash").
_NAMED_SCHEME_RE = re.compile(
    r"(?:argon2(?:id|i|d)?|bcrypt|scrypt|pbkdf2|sha-?\d+|md5|aes-?\d+|utf-?\d+|base\d+|v?\d+(?:\.\d+)+)"
    r"(?:[-_][\w-]*)?",
    re.IGNORECASE,
)


def _loose_password_kind(head: str, value: str) -> str | None:
    """A word right after "password" (or "pass is", "pw is") that reads like a password: the
    prose rule's test, and no hash, cipher or version name; or a passphrase."""
    if _passphrase(head, value):
        return "password"
    return "password" if _prose_password(value) and not _NAMED_SCHEME_RE.fullmatch(value) else None


def _prose_key(value: str) -> bool:
    """A word after "the API key is" that looks generated: no file name, path or URL."""
    return _looks_random(value) and "/" not in value and not re.fullmatch(r"[\w-]+\.[a-z]{2,4}", value)


def _keyed_kind(name: str) -> str:
    if "private" in name:
        return "private-key"
    if "token" in name:
        return "token"
    if "key" in name:
        return "api-key"
    return "secret"


# Last parts of a name that make it a setting about a secret, not the secret
# (``password_min_length: 12``, ``token_url=...``, ``SECRET_FILE=/run/secrets/db``).
_SETTING_SUFFIXES = frozenset(
    {
        "length", "len", "min", "max", "count", "limit", "policy", "file", "path", "dir", "url",
        "uri", "endpoint", "hash", "field", "column", "rounds", "ttl", "expiry", "expires", "age",
        "reset", "regex", "pattern", "prompt", "env", "var", "name", "type", "mode", "kind",
        "enabled", "required", "timeout", "hint", "label", "help", "stdin", "command", "cmd", "size",
        "budget", "bits", "format", "header", "version", "scope", "scopes", "rotation", "strength",
    }
)  # fmt: skip
_NAME_PARTS_RE = re.compile(r"[_.-]+|(?<=[a-z])(?=[A-Z])")


def _name_parts(head: str) -> list[str]:
    name = re.split(r"[\"'\s:=]", head.strip(), maxsplit=1)[0] or head
    return [part.casefold() for part in _NAME_PARTS_RE.split(name) if part]


def _a_path(value: str) -> bool:
    """A file path or file name: where a secret is kept, not the secret."""
    return value.startswith(("/", "~/", "./", "../", "$")) or bool(
        re.fullmatch(r"[\w.-]+\.(?:json|pem|key|crt|p12|txt|ya?ml|env|toml|ini|cfg|conf)", value)
    )


# What a dependency table maps a package's name to (package.json, Poetry, Cargo): a version range
# (``1.2.1``, ``^1.7.1``, ``~2``, ``>= 18``, ``>=1.4,<2``, ``1.x || 2.x``), a dist-tag (``latest``),
# a workspace or alias protocol (``workspace:*``, ``npm:other@^1``), a local path (``file:../x``)
# or a git URL (no user but ``git@``: a token may sit there). A bare number is no version here
# (``password=12345678`` is a PIN); a dotted number, or one after a range operator, is.
_PRERELEASE = (
    r"(?:[-.]?(?:alpha|beta|rc|pre|preview|post|dev|next|canary|snapshot|nightly|insiders|experimental|a|b)"
    r"\d*(?:[.-][0-9a-z]+)*|-\d+(?:\.\d+)*)?"
)
_NUMBER, _PART = r"v?\d{1,9}", r"\.(?:\d{1,9}|[xX*])"
_COMPARATOR = (
    rf"(?:(?:[~^]|[<>!=~]=?|===?)\s*{_NUMBER}(?:{_PART}){{0,3}}{_PRERELEASE}"
    rf"|{_NUMBER}(?:{_PART}){{1,3}}{_PRERELEASE}|[xX*])"
)
_RANGE = rf"{_COMPARATOR}(?:(?:\s*\|\|\s*|\s+-\s+|\s*,\s*|\s+){_COMPARATOR})*"
_DEPENDENCY_SPEC_RE = re.compile(
    rf"""{_RANGE}
      | latest | next | canary | beta | alpha | rc | stable | nightly | experimental | insiders | lts
      | workspace:(?:[*^~]|{_RANGE})
      | npm:(?:@[\w.-]+/)?[\w.-]+(?:@(?:{_RANGE}|latest|next))?
      | (?:file|link|portal):(?:\.{{1,2}}/|/|~/)[^\s@]*
      | (?:github|gitlab|bitbucket|gist):[\w.-]+(?:/[\w.-]+)?(?:\#[^\s@]+)?
      | (?:git\+)?(?:https?|ssh|git)://(?:git@)?[A-Za-z0-9.-]+(?:[:/][^\s@]*)?  # git@ only
    """,
    re.VERBOSE,
)


def _dependency_spec(value: str) -> bool:
    """Whether ``value`` is what a dependency table gives a package (``_DEPENDENCY_SPEC_RE``).

    A package's name may hold a secret's word (``pbkdf2-password``, ``generate-password``,
    ``pass``, ``csrf-token``), so after such a name the value decides: a version range, a
    dist-tag, a workspace or alias protocol, a local path or a git URL is what the name depends
    on, not a secret. Whatever the name: no password reads like ``^1.7.1`` or ``>= 18``, and a
    URL's password is the URL rule's (it runs first, so a URL that held one holds a placeholder
    here and is never taken for a spec). Redacting such a value broke the manifest it was in."""
    return _DEPENDENCY_SPEC_RE.fullmatch(value.strip()) is not None


def _assignment(head: str, value: str) -> str | None:
    """``name = value``: a password after a password-like name, a generated-looking value
    after a secret-like one (``SECRET_KEY=``, ``api_key:``, ``_authToken=``); never a
    dependency's version or source after a package's name (``_dependency_spec``)."""
    parts = _name_parts(head)
    if not parts or parts[-1] in _SETTING_SUFFIXES or (len(parts) > 1 and parts[-2] in ("min", "max")):
        return None
    if _dependency_spec(value):
        return None
    name = "_".join(parts)
    if any(word in name for word in _PASSWORD_WORDS) or "pass" in parts or "pw" in parts:
        return "password" if _password_value(value) and not _a_path(value) else None
    if any(word in name for word in _SECRET_WORDS) or parts[-1] == "key":
        return _keyed_kind(name) if _looks_random(value) and not _a_path(value) else None
    return None


def _command_password(head: str, value: str) -> str | None:
    return "password" if _password_value(value) and not value.startswith("-") else None


_PGPASS_HINT_RE = re.compile(r":(?:\d{1,5}|\*):[^\s:]+:[^\s:]+:")


def _pgpass_password(_head: str, value: str) -> str | None:
    """The last field of a .pgpass entry, unless it is a number (a time or a counter)."""
    return None if value.isdigit() and len(value) < 6 else "password"


# The providers' hints, each looked for once (several tokens share some), and the folded
# text's hints as one pattern: most texts hold none, and one scan then skips every check
# below it (43 µs a memory before, most of it these checks).
_TOKEN_HINTS = tuple({hint: None for token in TOKEN_FORMATS for hint in token.hints})
_FOLDED_HINT_RE = re.compile(
    "|".join(
        re.escape(hint)
        for hint in (
            "bearer",
            "authorization",
            "aws",
            *_AZURE_HINTS,
            *(hint for hints, _ in _COMMAND_PASSWORDS for hint in hints),
            *_ASSIGNMENT_HINTS,
        )
    )
)


def redact(text: str) -> Redaction:
    """``text`` with every secret it holds replaced by ``[REDACTED:<kind>]``; never raises."""
    if not text:
        return Redaction(text)
    found: list[str] = []
    out = text
    if "PRIVATE KEY" in out:
        out = _sub_value(_PRIVATE_KEY_RE, _private_key, out, found)
    present = {hint for hint in _TOKEN_HINTS if hint in out}
    for token in TOKEN_FORMATS if present else ():
        if not present.isdisjoint(token.hints):
            out = _sub_whole(token, out, found)
    if "://" in out and "@" in out:
        out = _sub_value(_URL_CREDENTIALS_RE, _always("password"), out, found)
    lowered = out.casefold()
    hinted = _FOLDED_HINT_RE.search(lowered) is not None
    if hinted and ("bearer" in lowered or "authorization" in lowered):
        out = _sub_value(_AUTH_HEADER_RE, _always("bearer-token"), out, found)
        out = _sub_value(_BEARER_RE, _when("bearer-token", _looks_random), out, found)
    if hinted and "aws" in lowered:
        out = _sub_value(_AWS_SECRET_RE, _always("aws-secret-key"), out, found)
    if hinted and any(hint in lowered for hint in _AZURE_HINTS):
        out = _sub_value(_AZURE_RE, _always("azure-key"), out, found)
    for hints, pattern in _COMMAND_PASSWORDS if hinted else ():
        if any(hint in lowered for hint in hints):
            out = _sub_value(pattern, _command_password, out, found)
    if "--" in out:
        out = _sub_value(_FLAG_RE, _always("password"), out, found)
    if "machine" in lowered or "default" in lowered:
        out = _sub_value(_NETRC_RE, _command_password, out, found)
    if "AC" in out:
        out = _sub_value(_TWILIO_AUTH_RE, _always("twilio-auth-token"), out, found)
    if _PGPASS_HINT_RE.search(out):
        out = _sub_value(_PGPASS_LINE_RE, _pgpass_password, out, found)
        if ".pgpass" in lowered or "pgpassfile" in lowered:
            out = _sub_value(_PGPASS_RE, _pgpass_password, out, found)
    if hinted and any(word in lowered for word in _ASSIGNMENT_HINTS):
        out = _sub_value(_PROSE_PASSWORD_RE, _prose_password_kind, out, found, _prose_placeholder)
        out = _sub_value(_ASSIGNMENT_RE, _assignment, out, found)
        out = _sub_value(_LOOSE_PASSWORD_RE, _loose_password_kind, out, found, _prose_placeholder)
        out = _sub_value(
            _PROSE_KEY_RE, lambda head, value: _prose_kind(head) if _prose_key(value) else None, out, found
        )
    return Redaction(out, len(found), tuple(sorted(set(found))))


def _prose_kind(head: str) -> str:
    name = head.casefold()
    return "token" if "token" in name else "secret" if "key" not in name else "api-key"

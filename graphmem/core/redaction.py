"""Secret redaction: API keys, tokens, passwords, private keys and credentials in URLs.

Pure functions over strings; no I/O. ``redact`` runs on everything graphmem stores
from a session or a ``remember`` call, so a secret pasted into a chat never reaches
the database. Each secret becomes a placeholder that names its kind
(``[REDACTED:github-token]``) and keeps the text around it, so a memory still reads.

Look-alikes survive: git SHAs, UUIDs, lockfile hashes, ``sk-learn``, ``password``
as a word, URLs without credentials, placeholders (``<token>``, ``${GITLAB_TOKEN}``),
type annotations (``password: str``). The provider patterns follow the
``detect-secrets`` plugins and the providers' documented token formats; a generic
rule catches values after key-like names (``DB_PASSWORD=...``, ``"api_key": "..."``).
``redact`` is idempotent and never raises.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

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
    bare = value.strip("'\"`").rstrip(")]}>,")
    if not bare or _PLACEHOLDER_VALUE_RE.match(bare):
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

_END = r"(?![A-Za-z0-9_-])"  # a token ends where its alphabet does
_START = r"(?<![A-Za-z0-9_-])"

# (kind, pattern): the whole match is the secret. Most specific first.
_TOKEN_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (kind, re.compile(pattern))
    for kind, pattern in (
        ("anthropic-key", rf"{_START}sk-ant-[a-z]{{2,8}}\d{{2}}-[A-Za-z0-9_-]{{20,}}{_END}"),
        ("openai-key", rf"{_START}sk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_-]{{20,}}{_END}"),
        ("github-token", rf"{_START}gh[pousr]_[A-Za-z0-9]{{36,255}}{_END}"),
        ("github-token", rf"{_START}github_pat_[A-Za-z0-9_]{{22,255}}{_END}"),
        (
            "gitlab-token",
            rf"{_START}(?:glpat|gldt|glft|glsoat|glrt|glcbt|glimt|glptt|glagent|gloas|glffct|glsa)-"
            rf"[A-Za-z0-9_-]{{20,1024}}{_END}",
        ),
        ("gitlab-token", rf"{_START}GR1348941[A-Za-z0-9_-]{{20,50}}{_END}"),
        ("aws-access-key", rf"{_START}(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|ANPA)[A-Z0-9]{{16}}{_END}"),
        ("slack-token", rf"{_START}xox[abprseo]-[A-Za-z0-9-]{{10,}}{_END}"),
        ("slack-webhook", r"https://hooks\.slack\.com/services/T[A-Za-z0-9_]+/B[A-Za-z0-9_]+/[A-Za-z0-9_]+"),
        ("stripe-key", rf"{_START}(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{{16,}}{_END}"),
        ("google-api-key", rf"{_START}AIza[0-9A-Za-z_-]{{35}}{_END}"),
        ("npm-token", rf"{_START}npm_[A-Za-z0-9]{{36}}{_END}"),
        ("pypi-token", rf"{_START}pypi-AgE[A-Za-z0-9_-]{{50,}}{_END}"),
        ("huggingface-token", rf"{_START}hf_[A-Za-z0-9]{{34,}}{_END}"),
        ("sendgrid-key", rf"{_START}SG\.[A-Za-z0-9_-]{{22}}\.[A-Za-z0-9_-]{{43}}{_END}"),
        ("jwt", rf"{_START}eyJ[A-Za-z0-9_-]{{8,}}\.eyJ[A-Za-z0-9_-]{{8,}}\.[A-Za-z0-9_-]{{16,}}{_END}"),
    )
)

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
    r"(?P<head>\b(?:Proxy-)?Authorization\b[\"']?\s*[:=]\s*[\"']?(?:Bearer|Basic|Token|token|bearer|Digest)\s+)"
    r"(?P<secret>[A-Za-z0-9._~+/=-]{8,})",
    re.IGNORECASE,
)
_BEARER_RE = re.compile(r"(?P<head>\bBearer\s+)(?P<secret>[A-Za-z0-9._~+/-]{20,}=*)")
# Names whose value is a password: any non-placeholder value is a secret.
_PASSWORD_NAME = r"[A-Za-z0-9_.-]*(?:password|passwd|passphrase|pwd)[A-Za-z0-9_.-]*"
# Names whose value is a secret when it looks generated.
_SECRET_NAME = (
    r"[A-Za-z0-9_.-]*(?:secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key"
    r"|auth[_-]?key|credentials?|client[_-]?secret|signing[_-]?key|_authToken)[A-Za-z0-9_.-]*"
)
_VALUE = r"""(?P<q>["'`])?(?P<secret>(?(q)[^"'`\n]{1,512}|[^\s"'`,;&]{1,512}))(?(q)(?P=q))"""
_ASSIGN = r"""["']?\s*(?::=|=>|[:=])\s*"""
_PASSWORD_RE = re.compile(rf"(?P<head>(?<![A-Za-z0-9])(?:{_PASSWORD_NAME}){_ASSIGN}){_VALUE}", re.IGNORECASE)
_KEYED_RE = re.compile(rf"(?P<head>(?<![A-Za-z0-9])(?:{_SECRET_NAME}){_ASSIGN}){_VALUE}", re.IGNORECASE)
# --password hunter2, --token=abc..., -p'secret' is too ambiguous to take.
_FLAG_RE = re.compile(
    r"(?P<head>(?<!\S)--(?:password|passwd|token|api-key|secret|auth-token|access-token)(?:=|\s+))"
    r"(?P<q>[\"']?)(?P<secret>[^\s\"']{3,512})(?P=q)",
    re.IGNORECASE,
)
# "the admin password is Winter2024!": prose, so only a value that reads like a password.
_PROSE_PASSWORD_RE = re.compile(
    r"(?P<head>\b(?:password|passwd|passphrase|pwd)\s+(?:is|was|will\s+be)\s+[\"'`]?)(?P<secret>[^\s\"'`]{6,128})",
    re.IGNORECASE,
)
# AWS secret access keys: 40 base64 characters after an aws-ish name.
_AWS_SECRET_RE = re.compile(
    r"(?P<head>(?<![A-Za-z0-9])aws[A-Za-z0-9_.-]*secret[A-Za-z0-9_.-]*[\"']?\s*[:=]\s*[\"']?)"
    r"(?P<secret>[A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])",
    re.IGNORECASE,
)


def _name_of(head: str) -> str:
    return head.casefold()


def _sub_whole(pattern: re.Pattern[str], kind: str, text: str, found: list[str]) -> str:
    def replace(match: re.Match[str]) -> str:
        body = match.group(0)
        tail = body.split("_", 2)[-1] if "_" in body[:12] else body.split("-", 1)[-1]
        if _is_placeholder(tail) or "EXAMPLE" in body.upper():
            return body
        found.append(kind)
        return placeholder(kind)

    return pattern.sub(replace, text)


def _sub_value(
    pattern: re.Pattern[str],
    kind: Callable[[str], str],
    accept: Callable[[str], bool],
    text: str,
    found: list[str],
) -> str:
    def replace(match: re.Match[str]) -> str:
        secret = match.group("secret")
        if _is_placeholder(secret) or PLACEHOLDER_PREFIX in secret or not accept(secret):
            return match.group(0)
        found.append(kind(match.group("head")))
        start, end = match.span("secret")
        offset = match.start()
        whole = match.group(0)
        return whole[: start - offset] + placeholder(kind(match.group("head"))) + whole[end - offset :]

    return pattern.sub(replace, text)


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
    """A word after "password is" that mixes letters with digits or symbols (not "required")."""
    core = value.rstrip(".,;:)")
    has_letter = any(c.isalpha() for c in core)
    has_other = any(c.isdigit() or not c.isalnum() for c in core)
    return len(core) >= 6 and has_letter and has_other and not re.fullmatch(r"[\w-]+\.[a-z]{2,4}", core)


def _keyed_kind(head: str) -> str:
    name = _name_of(head)
    if "private" in name:
        return "private-key"
    if "token" in name:
        return "token"
    if "key" in name:
        return "api-key"
    return "secret"


def redact(text: str) -> Redaction:
    """``text`` with every secret it holds replaced by ``[REDACTED:<kind>]``; never raises."""
    if not text:
        return Redaction(text)
    found: list[str] = []
    out = _sub_value(_PRIVATE_KEY_RE, lambda _: "private-key", lambda _: True, text, found)
    for kind, pattern in _TOKEN_PATTERNS:
        out = _sub_whole(pattern, kind, out, found)
    out = _sub_value(_URL_CREDENTIALS_RE, lambda _: "password", lambda _: True, out, found)
    out = _sub_value(_AUTH_HEADER_RE, lambda _: "bearer-token", lambda _: True, out, found)
    out = _sub_value(_BEARER_RE, lambda _: "bearer-token", _looks_random, out, found)
    out = _sub_value(_AWS_SECRET_RE, lambda _: "aws-secret-key", lambda _: True, out, found)
    out = _sub_value(_PASSWORD_RE, lambda _: "password", _password_value, out, found)
    out = _sub_value(_FLAG_RE, lambda _: "password", lambda _: True, out, found)
    out = _sub_value(_PROSE_PASSWORD_RE, lambda _: "password", _prose_password, out, found)
    out = _sub_value(_KEYED_RE, _keyed_kind, _looks_random, out, found)
    return Redaction(out, len(found), tuple(sorted(set(found))))

"""Prompt-injection detection: text that tries to instruct the model rather than inform it.

Pure functions over strings; no I/O. Such text is still stored when it is a valid
memory, as data, with ``Trust.LOW``; it never becomes a directive or a preference
that graphmem would later inject into a prompt as an instruction. Used by
extraction, ``remember`` and the OpenCode plugin's injection.

Detection is defence in depth: who may set a rule is decided by provenance, not here.
So the signals also name what attackers plant as "rules" (remote execution, disabled TLS
checks, a foreign package registry, force without confirmation, secrets into output).
Text is checked as written, then as ``normalize_text`` reads it (NFKC, zero-width and
bidi controls removed, Cyrillic/Greek look-alikes folded to Latin), then inside its
base64 runs; a signal found only in the latter two also reports ``obfuscated`` or
``encoded``.
"""

from __future__ import annotations

import base64
import binascii
import re
import unicodedata

from graphmem.core.models import Trust

# Longest text scanned: injections sit anywhere, but scanning megabytes of tool output costs time.
MAX_SCAN_CHARS = 50_000
# Base64 runs decoded and scanned: shorter ones are ids and hashes, longer ones files and
# images; past the first few runs tried a text is data, not a message.
MIN_BASE64_CHARS = 16
MAX_BASE64_CHARS = 4_096
MAX_BASE64_RUNS = 16
# Share of a decoded run that must be printable text for it to be read as a message.
MIN_PRINTABLE_SHARE = 0.9

# Zero-width characters (U+200B-U+200F, U+2060-U+2064, U+FEFF) and bidi controls
# (U+202A-U+202E, U+2066-U+2069): invisible, they split a phrase a pattern looks for.
_INVISIBLE = dict.fromkeys(
    [*range(0x200B, 0x2010), *range(0x2060, 0x2065), 0xFEFF, *range(0x202A, 0x202F), *range(0x2066, 0x206A)]
)
# Cyrillic and Greek letters drawn like Latin ones ("іgnоrе" with Cyrillic і, о, е).
_HOMOGLYPHS = str.maketrans(
    {
        # Cyrillic
        "а": "a", "в": "b", "е": "e", "ё": "e", "к": "k", "м": "m", "н": "h", "о": "o", "р": "p",
        "с": "c", "т": "t", "у": "y", "х": "x", "і": "i", "ї": "i", "ј": "j", "ѕ": "s", "ԁ": "d",
        "ԛ": "q", "ԝ": "w", "һ": "h", "ӏ": "l", "ɡ": "g",
        "А": "A", "В": "B", "Е": "E", "К": "K", "М": "M", "Н": "H", "О": "O", "Р": "P", "С": "C",
        "Т": "T", "У": "Y", "Х": "X", "І": "I", "Ј": "J", "Ѕ": "S", "Ԛ": "Q", "Ԝ": "W",
        # Greek
        "α": "a", "β": "b", "ε": "e", "ι": "i", "κ": "k", "ν": "v", "ο": "o", "ρ": "p", "τ": "t",
        "υ": "u", "χ": "x", "γ": "y",
        "Α": "A", "Β": "B", "Ε": "E", "Ζ": "Z", "Η": "H", "Ι": "I", "Κ": "K", "Μ": "M", "Ν": "N",
        "Ο": "O", "Ρ": "P", "Τ": "T", "Υ": "Y", "Χ": "X",
    }
)  # fmt: skip
_BASE64_RUN_RE = re.compile(
    rf"(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{{{MIN_BASE64_CHARS},{MAX_BASE64_CHARS}}}={{0,2}}(?![A-Za-z0-9+/=_-])"
)

_PREVIOUS = (
    r"(?:all\s+|any\s+|the\s+|your\s+|my\s+)*"
    r"(?:previous|prior|above|earlier|preceding|former|original|system)"
)
_ORDERS = r"(?:instructions?|prompts?|rules|directions|guidelines|messages?|context|commands?|constraints)"
_SECRETS = r"(?:\b(?:secrets?|tokens?|credentials|api[\s_-]?keys?|passwords?|ssh\s+keys?|id_rsa)\b|\.env\b)"
# What must never be written out: no bare "tokens", which LLM talk counts all day.
_LEAKABLE = (
    r"(?:\.env\b|\b(?:secrets?|credentials|api[\s_-]?keys?|passwords?|private\s+keys?|id_rsa|ssh\s+keys?"
    r"|(?:access|auth|api|deploy|gitlab|github|npm|pypi)\s+tokens?|env(?:ironment)?\s+variables)\b)"
)
# A URL that is not a package index's official one: the official hosts are not flagged.
_FOREIGN_URL = (
    r"[\"']?(?!https?://(?:registry\.npmjs\.org|registry\.yarnpkg\.com|pypi\.org|files\.pythonhosted\.org"
    r"|proxy\.golang\.org|rubygems\.org|index\.crates\.io|crates\.io)(?:[/:\"'\s]|$))(?:https?|git\+https?)://\S"
)
_DESTRUCTIVE = (
    r"(?:\brm\s+-[a-zA-Z]*[rRf]|\bgit\s+push\b[^\n]{0,40}?(?:--force(?!-with-lease)|-f\b)|\bforce[\s-]push"
    r"|\bpush\s+--force(?!-with-lease)"
    r"|\breset\s+--hard|\bdrop\s+(?:table|database|schema)|\bterraform\s+destroy|\bkubectl\s+delete)"
)
_NOT = r"(?:never|don'?t|do\s+not|no\s+need\s+to|without)"

# (signal, hints, pattern). A signal names why a text looks like an injection. The pattern
# runs only when the lower-cased text holds one of its hints (literal substrings every match
# contains): most texts hold none, and a 50,000-character tool output then costs substring
# searches, not 50 case-insensitive scans.
_SIGNALS: tuple[tuple[str, tuple[str, ...], re.Pattern[str]], ...] = tuple(
    (name, hints, re.compile(pattern, re.IGNORECASE | re.MULTILINE))
    for name, hints, pattern in (
        (
            "ignore-previous",
            ("ignor", "disregard", "forget", "overrid", "bypass", "skip"),
            rf"\b(?:ignore|disregard|forget|override|bypass|skip)\s+{_PREVIOUS}",
        ),
        (
            "ignore-previous",
            ("ignor", "disregard", "forget"),
            rf"\b(?:ignore|disregard|forget)\s+(?:all\s+|any\s+)?(?:of\s+)?"
            rf"(?:the\s+|your\s+)?{_ORDERS}\b",
        ),
        (
            "ignore-previous",
            ("ignor", "disregard"),
            r"\b(?:disregard|ignore)\s+(?:everything|anything)\s+(?:above|before|else)\b",
        ),
        # German, Spanish, French, Italian, Portuguese, Dutch, Russian, Chinese, Japanese.
        (
            "ignore-previous",
            ("ignorier", "vergiss", "vergessen"),
            r"\b(?:ignorier(?:e|en|t)?|vergiss|vergessen\s+sie)\s+(?:sie\s+)?(?:alle\s+)?"
            r"(?:vorherigen|bisherigen|vorigen|obigen|früheren)\s+"
            r"(?:Anweisungen|Instruktionen|Regeln|Befehle|Vorgaben)\b",
        ),
        (
            "ignore-previous",
            ("ignor", "olvid"),
            r"\b(?:ignora|ignore|olvida|olvide)\s+(?:todas\s+)?las\s+(?:instrucciones|reglas|órdenes)"
            r"\s+(?:anteriores|previas)\b",
        ),
        (
            "ignore-previous",
            ("ignor", "oubli"),
            r"\b(?:ignore[sz]?|oublie[sz]?)\s+(?:toutes\s+)?les\s+(?:instructions|consignes|règles)"
            r"\s+(?:précédentes|precedentes|antérieures|anterieures)\b",
        ),
        (
            "ignore-previous",
            ("ignor", "dimentic"),
            r"\b(?:ignora|dimentica)\s+(?:tutte\s+)?le\s+(?:istruzioni|regole)\s+(?:precedenti)\b",
        ),
        (
            "ignore-previous",
            ("ignor", "esque"),
            r"\b(?:ignore|ignora|esqueça)\s+(?:todas\s+)?as\s+(?:instruções|instrucoes|regras)"
            r"\s+(?:anteriores)\b",
        ),
        (
            "ignore-previous",
            ("negeer", "vergeet"),
            r"\b(?:negeer|vergeet)\s+(?:alle\s+)?(?:vorige|eerdere|voorgaande)\s+"
            r"(?:instructies|regels)\b",
        ),
        (
            "ignore-previous",
            ("игнор", "забуд"),
            r"(?:игнорируй|игнорируйте|забудь|забудьте)\s+(?:все\s+)?"
            r"(?:предыдущие|прежние)\s+(?:инструкции|указания|правила)",
        ),
        (
            "ignore-previous",
            ("忽略", "无视", "忘记"),
            r"(?:忽略|无视|忘记)(?:之前|以上|先前|前面)(?:的)?(?:所有)?(?:指令|指示|说明)",
        ),
        (
            "ignore-previous",
            ("指示",),
            r"(?:以前|前|上記)の(?:すべての|全ての)?指示を(?:無視|忘れ)",
        ),
        (
            "new-identity",
            ("now",),
            r"\byou\s+are\s+now\s+"
            r"(?:a|an|the|in|my|no\s+longer|free|DAN|jailbroken|unrestricted)\b",
        ),
        (
            "new-identity",
            ("act", "behave"),
            r"\b(?:act|behave)\s+as\s+(?:if\s+you\s+(?:are|were)\s+)?(?:an?\s+)?"
            r"(?:unrestricted|jailbroken|evil|DAN)\b",
        ),
        (
            "new-identity",
            ("pretend",),
            r"\bpretend\s+(?:to\s+be|you\s+are)\b",
        ),
        (
            "new-identity",
            ("mode",),
            r"\b(?:developer|god|jailbreak|DAN)\s+mode\b",
        ),
        (
            "role-marker",
            ("system", "assistant"),
            r"^\s*(?:#{1,6}\s*)?(?:system|assistant)\s*(?:prompt)?\s*:",
        ),
        (
            "role-marker",
            ("im_", "system", "endoftext"),
            r"<\|?(?:im_start|im_end|system|endoftext)\|?>",
        ),
        (
            "role-marker",
            ("inst]", "sys]", "sys>>", "system>"),
            r"\[/?(?:INST|SYS)\]|<</?SYS>>|</?system>",
        ),
        (
            "new-instructions",
            ("instruction",),
            r"\b(?:new|updated|real|actual|hidden|secret)\s+"
            r"(?:system\s+)?instructions?\s*:",
        ),
        (
            "new-instructions",
            ("now",),
            r"\bfrom\s+now\s+on,?\s+you\s+(?:will|must|are|should|shall)\b",
        ),
        (
            "conceal",
            ("user",),
            r"\b(?:do\s+not|don'?t|never)\s+(?:tell|inform|mention\s+(?:this\s+)?to|alert|show)"
            r"\s+(?:the\s+)?user\b",
        ),
        (
            "conceal",
            ("user",),
            r"\bwithout\s+(?:telling|informing|asking|notifying)\s+(?:the\s+)?user\b",
        ),
        (
            "exfiltrate",
            ("prompt", "instructions"),
            r"\b(?:reveal|print|show|output|leak|repeat)\s+(?:me\s+)?(?:your|the)\s+"
            r"(?:system\s+prompt|instructions|hidden\s+prompt)\b",
        ),
        (
            "exfiltrate",
            ("send", "post", "upload", "exfiltrate", "forward", "email"),
            rf"\b(?:send|post|upload|exfiltrate|forward|email)\b[^\n]{{0,60}}?{_SECRETS}"
            r"[^\n]{0,40}?\b(?:to|at)\s+\S",
        ),
        # "include the contents of .env in the commit message": secrets written where others read.
        (
            "leak-secrets",
            (".env", "secret", "credential", "key", "password", "id_rsa", "token", "variables"),
            rf"(?<!\bnot\s)(?<!n't\s)(?<!never\s)(?<!avoid\s)"
            r"\b(?:include|paste|print|echo|cat|output|embed|dump|copy|leak|expose)\b"
            rf"[^\n]{{0,60}}?{_LEAKABLE}[^\n]{{0,60}}?\b(?:in|into|to|inside)\s+(?:the\s+|your\s+|every\s+|each\s+)?"
            r"(?:commit(?:\s+messages?)?|output|response|reply|answer|logs?|pr|pull\s+request"
            r"|merge\s+request|mr|issue|comment|readme|summary|chat|description)\b",
        ),
        # curl ... | sh, wget -qO- ... | sudo bash, bash <(curl ...), sh -c "$(curl ...)",
        # eval "$(wget ...)", iex (iwr ...), irm ... | iex, IEX (New-Object Net.WebClient).DownloadString
        (
            "remote-exec",
            ("curl", "wget", "fetch"),
            r"\b(?:curl|wget|fetch)\b[^|\n]{1,200}\|\s*(?:sudo\s+(?:-\S+\s+)*)?"
            r"(?:env\s+)?(?:ba|z|da|k|fi)?sh\b",
        ),
        (
            "remote-exec",
            ("curl", "wget"),
            r"\b(?:curl|wget)\b[^|\n]{1,200}\|\s*(?:sudo\s+)?(?:python[23]?|perl|ruby|node)\b"
            r"(?!\s+-m\s+json)",
        ),
        (
            "remote-exec",
            ("<(",),
            r"\b(?:(?:ba|z|k)?sh|source|\.)\s+<\(\s*(?:curl|wget)\b",
        ),
        (
            "remote-exec",
            ("$(",),
            r"\b(?:(?:ba|z)?sh\s+-c|eval|python[23]?\s+-c)\s+[\"']?\$\(\s*(?:curl|wget)\b",
        ),
        (
            "remote-exec",
            ("iex", "invoke-expression"),
            r"\b(?:iex|invoke-expression)\b\s*\(?\s*(?:\(\s*)?(?:iwr|irm|invoke-webrequest"
            r"|invoke-restmethod|new-object\s+(?:system\.)?net\.webclient|curl|wget)\b",
        ),
        (
            "remote-exec",
            ("iex", "invoke-expression"),
            r"\b(?:iwr|irm|invoke-webrequest|invoke-restmethod|curl|wget)\b[^|\n]{1,200}\|\s*"
            r"(?:iex|invoke-expression)\b",
        ),
        (
            "remote-exec",
            ("downloadstring",),
            r"\.downloadstring\s*\([^)\n]{1,200}\)\s*\|\s*(?:iex|invoke-expression)\b",
        ),
        # NODE_TLS_REJECT_UNAUTHORIZED=0, verify=False, curl -k / --insecure, wget
        # --no-check-certificate, git http.sslVerify false, npm strict-ssl false,
        # "disable TLS verification", InsecureSkipVerify: true, rejectUnauthorized: false.
        (
            "disable-tls",
            ("node_tls",),
            r"\bNODE_TLS_REJECT_UNAUTHORIZED\s*=\s*[\"']?0\b",
        ),
        (
            "disable-tls",
            ("pythonhttpsverify",),
            r"\bPYTHONHTTPSVERIFY\s*=\s*[\"']?0\b",
        ),
        (
            "disable-tls",
            ("git_ssl",),
            r"\bGIT_SSL_NO_VERIFY\s*=\s*[\"']?(?:1|true|yes)\b",
        ),
        (
            "disable-tls",
            ("ca_bundle",),
            r"\b(?:CURL_CA_BUNDLE|REQUESTS_CA_BUNDLE)\s*=\s*(?:[\"']{2}|$)",
        ),
        (
            "disable-tls",
            ("verify",),
            r"\bverify\s*=\s*False\b",
        ),
        (
            "disable-tls",
            ("ssl",),
            r"\b(?:ssl_?verify|sslverify|strict[-_]ssl|verify_?ssl|ssl_verification)\b[\"']?"
            r"\s*[=:]?\s*[\"']?(?:false|0|no|off)\b",
        ),
        (
            "disable-tls",
            ("insecure",),
            r"\b(?:InsecureSkipVerify|insecure_skip_verify|insecure-skip-tls-verify)\b[\"']?"
            r"\s*[=:]?\s*[\"']?true\b",
        ),
        (
            "disable-tls",
            ("rejectunauthorized",),
            r"\brejectUnauthorized[\"']?\s*[=:]\s*false\b",
        ),
        (
            "disable-tls",
            ("curl",),
            r"\bcurl\b[^\n|;&]{0,200}?(?<!\S)(?-i:-[a-zA-Z]*k[a-zA-Z]*)(?![\w-])",
        ),
        (
            "disable-tls",
            ("--insecure", "--no-check", "--trusted-host", "sslverify"),
            r"\b(?:curl|wget|http|helm|kubectl|pip3?|uv|poetry|git|npm|yarn|pnpm)\b[^\n|;&]{0,200}?"
            r"(?<!\S)(?:--insecure|--no-check-certificate|--insecure-skip-tls-verify|"
            r"--trusted-host|-c\s+http\.sslVerify=false)(?![\w-])",
        ),
        (
            "disable-tls",
            ("disabl", "turn", "skip", "bypass", "ignor"),
            r"\b(?:disable|disabling|turn\s+off|turning\s+off|skip|skipping|bypass|ignore|ignoring)\s+"
            r"(?:the\s+|all\s+)?(?:TLS|SSL|HTTPS|cert(?:ificate)?)(?:/(?:TLS|SSL))?\s+"
            r"(?:cert(?:ificate)?\s+)?(?:verification|validation|checks?|checking|verify|errors?)\b",
        ),
        # A package index that is not the official one, for every package: npm/yarn/pnpm
        # --registry, npm config set registry, .npmrc registry=, pip --index-url /
        # --extra-index-url / -i, PIP_INDEX_URL, uv and poetry sources, GOPROXY, gem sources.
        # A scoped registry (@corp:registry=...) and prose naming one are not flagged.
        (
            "foreign-registry",
            ("--registry", "-index"),
            rf"(?<!\S)--(?:registry|index-url|extra-index-url|index|default-index)[=\s]+{_FOREIGN_URL}",
        ),
        (
            "foreign-registry",
            ("config",),
            rf"\b(?:npm|yarn|pnpm)\s+config\s+set\s+(?:--\S+\s+)?registry[=\s]+{_FOREIGN_URL}",
        ),
        (
            "foreign-registry",
            ("config",),
            rf"\bpip3?\s+config\s+set\s+\S*index-url\s+{_FOREIGN_URL}",
        ),
        (
            "foreign-registry",
            ("-i",),
            rf"\bpip3?\s+install\b[^\n]{{0,120}}?(?<!\S)-i\s+{_FOREIGN_URL}",
        ),
        (
            "foreign-registry",
            ("registry", "index-url"),
            rf"^\s*(?:registry|index-url|extra-index-url)\s*=\s*{_FOREIGN_URL}",
        ),
        (
            "foreign-registry",
            ("index_url", "registry", "goproxy"),
            rf"\b(?:PIP_INDEX_URL|PIP_EXTRA_INDEX_URL|UV_INDEX_URL|UV_EXTRA_INDEX_URL"
            rf"|NPM_CONFIG_REGISTRY|YARN_REGISTRY|GOPROXY)\s*=\s*{_FOREIGN_URL}",
        ),
        (
            "foreign-registry",
            ("gem",),
            rf"\bgem\s+sources\s+(?:--add|-a)\s+{_FOREIGN_URL}",
        ),
        # "never ask for confirmation before rm -rf", "force-push without asking".
        (
            "no-confirmation",
            ("never", "don", "not", "need", "without"),
            rf"\b{_NOT}\s+(?:ask(?:ing)?|prompt(?:ing)?|wait(?:ing)?|"
            r"confirm(?:ing|ation)?|request(?:ing)?)\b[^\n]{0,80}?" + _DESTRUCTIVE,
        ),
        (
            "no-confirmation",
            ("rm", "push", "reset", "drop", "destroy", "delete"),
            _DESTRUCTIVE + r"[^\n]{0,80}?\b(?:without|no)\s+(?:asking|confirm(?:ing|ation)"
            r"|prompting|checking|permission|approval|review)\b",
        ),
        (
            "remember-order",
            ("remember",),
            r"\bremember\s+(?:that\s+)?(?:you|the\s+assistant|the\s+ai|the\s+model)\s+"
            r"(?:must|should|will|always|never|are)\b",
        ),
    )
)


def normalize_text(text: str) -> str:
    """``text`` as detection reads it: NFKC (full-width and styled letters to plain ones),
    zero-width and bidi controls removed, Cyrillic and Greek look-alikes folded to Latin."""
    if text.isascii():
        return text
    return unicodedata.normalize("NFKC", text.translate(_INVISIBLE)).translate(_HOMOGLYPHS)


def _signals(text: str, found: list[str]) -> None:
    lowered = text.lower()
    for name, hints, pattern in _SIGNALS:
        if name not in found and any(hint in lowered for hint in hints) and pattern.search(text):
            found.append(name)


def _decoded_runs(text: str) -> list[str]:
    """The base64 runs of ``text`` that decode to printable UTF-8 text (a hidden message)."""
    decoded: list[str] = []
    tried = 0
    for match in _BASE64_RUN_RE.finditer(text):
        run = match.group(0)
        if run.isalpha() or run.isdigit():  # a word or a number, not an encoding
            continue
        tried += 1
        if tried > MAX_BASE64_RUNS:
            break
        body = run.rstrip("=")
        try:
            raw = base64.b64decode(
                body + "=" * (-len(body) % 4), altchars=b"-_" if "-" in run or "_" in run else None
            )
            message = raw.decode("utf-8")
        except (binascii.Error, ValueError):
            continue
        printable = sum(ch.isprintable() or ch in "\n\t\r" for ch in message)
        if message and printable >= MIN_PRINTABLE_SHARE * len(message):
            decoded.append(message)
    return decoded


def injection_signals(text: str) -> tuple[str, ...]:
    """Why ``text`` looks like a prompt injection (distinct signal names, in order); ``()`` if it does not.

    Checked as written, then normalised (``normalize_text``: adds ``obfuscated`` when that
    found more), then in its base64 runs (adds ``encoded`` when they hold a signal).
    """
    if not text:
        return ()
    sample = text[:MAX_SCAN_CHARS]
    found: list[str] = []
    _signals(sample, found)
    normalized = normalize_text(sample)
    if normalized != sample:
        seen = len(found)
        cleaned = unicodedata.normalize("NFKC", sample.translate(_INVISIBLE))
        _signals(cleaned, found)  # scripts of their own (Russian) before their letters are folded
        if normalized != cleaned:
            _signals(normalized, found)
        if len(found) > seen:
            found.append("obfuscated")
    for message in _decoded_runs(normalized):
        hidden: list[str] = []
        _signals(normalize_text(message), hidden)
        if hidden:
            found.extend(name for name in hidden if name not in found)
            if "encoded" not in found:
                found.append("encoded")
    return tuple(found)


def looks_like_injection(text: str) -> bool:
    """True when ``text`` tries to instruct the model ("ignore previous instructions", "system:")."""
    return bool(injection_signals(text))


def trust_of(text: str) -> Trust:
    """``Trust.LOW`` for text that looks like a prompt injection, ``Trust.NORMAL`` otherwise."""
    return Trust.LOW if looks_like_injection(text) else Trust.NORMAL

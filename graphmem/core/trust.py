"""Prompt-injection detection: text that tries to instruct the model rather than inform it.

Pure functions over strings; no I/O. Such text is still stored when it is a valid
memory, as data, with ``Trust.LOW``; it never becomes a directive or a preference
that graphmem would later inject into a prompt as an instruction. Used by
extraction, ``remember`` and the OpenCode plugin's injection.
"""

from __future__ import annotations

import re

from graphmem.core.models import Trust

# Longest text scanned: injections sit anywhere, but scanning megabytes of tool output costs time.
MAX_SCAN_CHARS = 50_000

_PREVIOUS = (
    r"(?:all\s+|any\s+|the\s+|your\s+|my\s+)*"
    r"(?:previous|prior|above|earlier|preceding|former|original|system)"
)
_ORDERS = r"(?:instructions?|prompts?|rules|directions|guidelines|messages?|context|commands?|constraints)"
_SECRETS = r"(?:\b(?:secrets?|tokens?|credentials|api[\s_-]?keys?|passwords?|ssh\s+keys?|id_rsa)\b|\.env\b)"

# (signal, pattern). A signal names why a text looks like an injection.
_SIGNALS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(pattern, re.IGNORECASE | re.MULTILINE))
    for name, pattern in (
        ("ignore-previous", rf"\b(?:ignore|disregard|forget|override|bypass|skip)\s+{_PREVIOUS}"),
        ("ignore-previous", rf"\b(?:ignore|disregard|forget)\s+(?:all\s+|any\s+)?(?:of\s+)?"
                            rf"(?:the\s+|your\s+)?{_ORDERS}\b"),
        ("ignore-previous", r"\b(?:disregard|ignore)\s+(?:everything|anything)\s+(?:above|before|else)\b"),
        ("new-identity", r"\byou\s+are\s+now\s+"
                         r"(?:a|an|the|in|my|no\s+longer|free|DAN|jailbroken|unrestricted)\b"),
        ("new-identity", r"\b(?:act|behave)\s+as\s+(?:if\s+you\s+(?:are|were)\s+)?(?:an?\s+)?"
                         r"(?:unrestricted|jailbroken|evil|DAN)\b"),
        ("new-identity", r"\bpretend\s+(?:to\s+be|you\s+are)\b"),
        ("new-identity", r"\b(?:developer|god|jailbreak|DAN)\s+mode\b"),
        ("role-marker", r"^\s*(?:#{1,6}\s*)?(?:system|assistant)\s*(?:prompt)?\s*:"),
        ("role-marker", r"<\|?(?:im_start|im_end|system|endoftext)\|?>"),
        ("role-marker", r"\[/?(?:INST|SYS)\]|<</?SYS>>|</?system>"),
        ("new-instructions", r"\b(?:new|updated|real|actual|hidden|secret)\s+"
                             r"(?:system\s+)?instructions?\s*:"),
        ("new-instructions", r"\bfrom\s+now\s+on,?\s+you\s+(?:will|must|are|should|shall)\b"),
        ("conceal", r"\b(?:do\s+not|don'?t|never)\s+(?:tell|inform|mention\s+(?:this\s+)?to|alert|show)"
                    r"\s+(?:the\s+)?user\b"),
        ("conceal", r"\bwithout\s+(?:telling|informing|asking|notifying)\s+(?:the\s+)?user\b"),
        ("exfiltrate", r"\b(?:reveal|print|show|output|leak|repeat)\s+(?:me\s+)?(?:your|the)\s+"
                       r"(?:system\s+prompt|instructions|hidden\s+prompt)\b"),
        ("exfiltrate", rf"\b(?:send|post|upload|exfiltrate|forward|email)\b[^\n]{{0,60}}?{_SECRETS}"
                       r"[^\n]{0,40}?\b(?:to|at)\s+\S"),
        ("remote-exec", r"\b(?:curl|wget)\b[^|\n]{1,200}\|\s*(?:sudo\s+)?(?:ba|z)?sh\b"),
        ("remember-order", r"\bremember\s+(?:that\s+)?(?:you|the\s+assistant|the\s+ai|the\s+model)\s+"
                           r"(?:must|should|will|always|never|are)\b"),
    )
)  # fmt: skip


def injection_signals(text: str) -> tuple[str, ...]:
    """Why ``text`` looks like a prompt injection (distinct signal names, in order); ``()`` if it does not."""
    if not text:
        return ()
    sample = text[:MAX_SCAN_CHARS]
    found: list[str] = []
    for name, pattern in _SIGNALS:
        if name not in found and pattern.search(sample):
            found.append(name)
    return tuple(found)


def looks_like_injection(text: str) -> bool:
    """True when ``text`` tries to instruct the model ("ignore previous instructions", "system:")."""
    return bool(injection_signals(text))


def trust_of(text: str) -> Trust:
    """``Trust.LOW`` for text that looks like a prompt injection, ``Trust.NORMAL`` otherwise."""
    return Trust.LOW if looks_like_injection(text) else Trust.NORMAL

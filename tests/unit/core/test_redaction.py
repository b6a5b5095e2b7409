"""Secret redaction on the corpus in samples/secrets/: every secret goes, every look-alike stays."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphmem.core.redaction import placeholder, redact

SAMPLES = Path(__file__).resolve().parents[3] / "samples" / "secrets"
_MARKED = re.compile("⟦(.*?)⟧", re.DOTALL)


def _cases(name: str) -> list[str]:
    lines = (SAMPLES / name).read_text("utf-8").splitlines()
    return [line.replace("\\n", "\n") for line in lines if line.strip() and not line.startswith("#")]


SECRET_CASES = _cases("secrets.txt")
LOOKALIKES = _cases("lookalikes.txt")


def test_the_corpus_is_big_enough_to_mean_something() -> None:
    assert len(SECRET_CASES) >= 50
    assert len(LOOKALIKES) >= 50
    assert all(_MARKED.search(case) for case in SECRET_CASES)


@pytest.mark.parametrize("case", SECRET_CASES, ids=lambda c: c[:40])
def test_every_secret_in_the_corpus_is_redacted(case: str) -> None:
    secrets = _MARKED.findall(case)
    result = redact(case.replace("⟦", "").replace("⟧", ""))
    assert result.count >= 1
    assert "[REDACTED:" in result.text
    for secret in secrets:
        assert secret not in result.text


@pytest.mark.parametrize("line", LOOKALIKES, ids=lambda c: c[:40])
def test_every_lookalike_survives_verbatim(line: str) -> None:
    result = redact(line)
    assert result.text == line
    assert result.count == 0


def test_the_placeholder_names_the_kind_and_keeps_the_text_around_it() -> None:
    token = "glpat-" + "Ab3dE6gH9jK2mN5pQ8sT"
    result = redact(f"export GITLAB_TOKEN={token} # for the mirror")
    assert result.text == f"export GITLAB_TOKEN={placeholder('gitlab-token')} # for the mirror"
    assert result.kinds == ("gitlab-token",)


def test_a_url_keeps_its_user_and_host_and_loses_only_the_password() -> None:
    result = redact("postgres://shop:wX9vQ2pL7k@db.internal:5432/shop")
    assert result.text == "postgres://shop:[REDACTED:password]@db.internal:5432/shop"


def test_count_and_kinds_cover_several_secrets_in_one_text() -> None:
    text = "password=hunter2 and AKIA" + "Q3ZT7XW2MBN4KP6R" + " in one line"
    result = redact(text)
    assert result.count == 2
    assert result.kinds == ("aws-access-key", "password")


def test_an_unterminated_private_key_is_redacted_to_the_end() -> None:
    result = redact("here:\n-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBk3Zq9\nMore")
    assert result.text == "here:\n[REDACTED:private-key]"


def test_redacting_twice_changes_nothing_more_on_the_corpus() -> None:
    for case in SECRET_CASES:
        once = redact(case.replace("⟦", "").replace("⟧", ""))
        twice = redact(once.text)
        assert twice.text == once.text
        assert twice.count == 0


def test_empty_text_is_returned_as_is() -> None:
    assert redact("").text == ""
    assert redact("").count == 0


_SECRETISH = st.sampled_from(
    [
        "password=",
        "token: ",
        "sk-",
        "ghp_",
        "glpat-",
        "AKIA",
        "Bearer ",
        "://u:",
        "@",
        "-----BEGIN ",
        "\n",
        "=",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.text(max_size=30), _SECRETISH), max_size=12).map("".join))
def test_redact_never_raises_and_is_idempotent(text: str) -> None:
    once = redact(text)
    assert redact(once.text).text == once.text
    assert once.count >= 0

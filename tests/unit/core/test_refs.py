"""GitLab refs and file paths found in free text."""

from __future__ import annotations

from collections.abc import Collection

import pytest
from hypothesis import given
from hypothesis import strategies as st

from graphmem.core.models import EntityKind
from graphmem.core.refs import (
    MAX_IID,
    Ref,
    find_dotted_names,
    find_identifiers,
    find_path_candidates,
    find_refs,
    parse_ref,
)
from graphmem.errors import InvalidInputError

MR, ISSUE, EPIC = EntityKind.MERGE_REQUEST, EntityKind.ISSUE, EntityKind.EPIC


def identities(
    text: str, gitlab_hosts: Collection[str] | None = None
) -> list[tuple[EntityKind, str | None, int]]:
    return [ref.identity for ref in find_refs(text, gitlab_hosts=gitlab_hosts)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("!123", [(MR, None, 123)]),
        ("#456", [(ISSUE, None, 456)]),
        ("&789", [(EPIC, None, 789)]),
        ("fixed in !12.", [(MR, None, 12)]),
        ("see #4, then &7; done", [(ISSUE, None, 4), (EPIC, None, 7)]),
        ("(!1) [#2] {&3}", [(MR, None, 1), (ISSUE, None, 2), (EPIC, None, 3)]),
        ("\"#5\" '!6'", [(ISSUE, None, 5), (MR, None, 6)]),
        ("ref:#8 and,!9", [(ISSUE, None, 8), (MR, None, 9)]),
        ("really #3? yes #4!", [(ISSUE, None, 3), (ISSUE, None, 4)]),
        ("#12 is fixed", [(ISSUE, None, 12)]),
        ("group/sub/project!12", [(MR, "group/sub/project", 12)]),
        ("group/project#12", [(ISSUE, "group/project", 12)]),
        ("my-group/my.proj_1#3", [(ISSUE, "my-group/my.proj_1", 3)]),
        ("group&12", [(EPIC, "group", 12)]),
        ("group/sub&12", [(EPIC, "group/sub", 12)]),
        ("#007", [(ISSUE, None, 7)]),
        (f"#{MAX_IID}", [(ISSUE, None, MAX_IID)]),
    ],
)
def test_find_refs_finds_short_and_qualified_refs(
    text: str, expected: list[tuple[EntityKind, str | None, int]]
) -> None:
    assert identities(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "#123abc",
        "#fff",
        "#a1b2c3",
        "a#1",
        "x!2",
        "foo!=1",
        "x != 1",
        "!!12",
        "#12/diffs",
        "#12-#15",
        "project!12",  # a project path has two segments or more
        "project#12",
        "#0",
        f"#{MAX_IID + 1}",
        "#" + "9" * 5000,
        "# Title",
        "## 12 things",
        "   # 12",
        "#",
        "!",
        "&amp; &#123;",
        "١٢ #١٢",
        "https://example.com/page#123",
        "https://example.com/a/b!12",
        "https://github.com/owner/repo/issues/12",
    ],
)
def test_find_refs_ignores_non_refs(text: str) -> None:
    assert find_refs(text) == []


def test_find_refs_skips_heading_marker_but_keeps_refs_in_heading() -> None:
    assert identities("## Fix for !12\n# 3 notes") == [(MR, None, 12)]


def test_find_refs_skips_fenced_code_blocks() -> None:
    text = "before #1\n```python\nx = items[#2]  # !3\n```\nafter #4"
    assert identities(text) == [(ISSUE, None, 1), (ISSUE, None, 4)]


def test_find_refs_skips_unclosed_fenced_code_to_the_end() -> None:
    assert identities("#1\n```\n#2\n#3") == [(ISSUE, None, 1)]


def test_find_refs_skips_inline_code() -> None:
    assert identities("run `git show !12` for #5, ``a`#6`b``") == [(ISSUE, None, 5)]


@pytest.mark.parametrize(
    "text", ["color: #123456;", "background:#000", 'fill="#333333"', "border-color: #12345678"]
)
def test_find_refs_ignores_all_digit_html_colours(text: str) -> None:
    assert find_refs(text) == []


def test_find_refs_keeps_six_digit_issue_outside_colour_context() -> None:
    assert identities("closes #123456") == [(ISSUE, None, 123456)]


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://gitlab.com/group/sub/project/-/merge_requests/12", (MR, "group/sub/project", 12)),
        ("https://gitlab.com/group/project/-/issues/12", (ISSUE, "group/project", 12)),
        ("https://gitlab.com/group/project/-/work_items/12", (ISSUE, "group/project", 12)),
        ("https://gitlab.com/groups/group/sub/-/epics/12", (EPIC, "group/sub", 12)),
        ("https://gitlab.com/groups/group/-/work_items/5", (EPIC, "group", 5)),
        ("https://gitlab.com/g/p/-/merge_requests/12#note_1", (MR, "g/p", 12)),
        ("https://gitlab.com/g/p/-/merge_requests/12/diffs", (MR, "g/p", 12)),
        ("https://gitlab.com/g/p/-/issues/12?x=y", (ISSUE, "g/p", 12)),
        ("http://git.example.org:8080/g/p/-/issues/3", (ISSUE, "g/p", 3)),
    ],
)
def test_find_refs_reads_gitlab_urls(url: str, expected: tuple[EntityKind, str, int]) -> None:
    assert identities(f"see {url}.") == [expected]


def test_find_refs_records_url_host_span_and_raw() -> None:
    text = "see (https://GitLab.com/g/p/-/issues/3)."
    [ref] = find_refs(text)
    assert (ref.host, ref.raw) == ("gitlab.com", "https://GitLab.com/g/p/-/issues/3")
    assert text[ref.start : ref.end] == ref.raw


def test_find_refs_url_name_omits_host() -> None:
    [ref] = find_refs("https://gitlab.com/g/p/-/merge_requests/12")
    assert ref.name == "g/p!12"


def test_find_refs_ignores_urls_of_other_hosts_when_hosts_given() -> None:
    text = "https://other.example/g/p/-/issues/1 https://gitlab.com/g/p/-/issues/2"
    assert identities(text, gitlab_hosts=["GitLab.com"]) == [(ISSUE, "g/p", 2)]


def test_find_refs_finds_no_refs_inside_other_hosts_urls() -> None:
    assert find_refs("https://other.example/g/p/-/issues/1#2", gitlab_hosts={"gitlab.com"}) == []


def test_find_refs_returns_refs_in_order_of_appearance() -> None:
    text = "&3 then https://gitlab.com/g/p/-/issues/2 then !1"
    assert [ref.name for ref in find_refs(text)] == ["&3", "g/p#2", "!1"]


def test_find_refs_drops_duplicates_keeping_the_first() -> None:
    refs = find_refs("!1 and !1 and g/p!1 and https://gitlab.com/g/p/-/merge_requests/1")
    assert [(ref.name, ref.start) for ref in refs] == [("!1", 0), ("g/p!1", 14)]


def test_find_refs_records_span_and_raw_text() -> None:
    text = "fixed by group/proj!12."
    [ref] = find_refs(text)
    assert (ref.raw, ref.start, ref.end) == ("group/proj!12", 9, 22)


@pytest.mark.parametrize(
    ("ref", "name"),
    [
        (Ref(MR, 123, None), "!123"),
        (Ref(ISSUE, 4, None), "#4"),
        (Ref(EPIC, 7, None), "&7"),
        (Ref(MR, 12, "group/sub/proj"), "group/sub/proj!12"),
        (Ref(EPIC, 3, "group"), "group&3"),
        (Ref(ISSUE, 9, "g/p", host="gitlab.com"), "g/p#9"),
    ],
)
def test_ref_name_is_the_canonical_short_form(ref: Ref, name: str) -> None:
    assert ref.name == name


@pytest.mark.parametrize(
    ("ref", "default", "key"),
    [
        (Ref(MR, 12, "group/proj"), None, "MergeRequest:group/proj!12"),
        (Ref(MR, 12, "group/proj"), "other/proj", "MergeRequest:group/proj!12"),
        (Ref(MR, 12, None), "group/proj", "MergeRequest:group/proj!12"),
        (Ref(ISSUE, 4, None), None, "Issue:#4"),
        (Ref(EPIC, 7, None), "group", "Epic:group&7"),
    ],
)
def test_ref_key_resolves_relative_refs_against_the_default(ref: Ref, default: str | None, key: str) -> None:
    assert ref.key(default) == key


@pytest.mark.parametrize(("kind", "iid"), [(MR, 0), (ISSUE, -1), (EPIC, MAX_IID + 1), (EntityKind.FILE, 1)])
def test_ref_rejects_invalid_kind_or_iid(kind: EntityKind, iid: int) -> None:
    with pytest.raises(InvalidInputError):
        Ref(kind, iid, None)


@pytest.mark.parametrize(
    ("token", "expected"),
    [
        ("!12", (MR, None, 12)),
        ("  #4 \n", (ISSUE, None, 4)),
        ("&7", (EPIC, None, 7)),
        ("group/proj!12", (MR, "group/proj", 12)),
        ("group&3", (EPIC, "group", 3)),
        ("https://gitlab.com/g/p/-/issues/5#note_2", (ISSUE, "g/p", 5)),
        ("https://any.host/groups/g/-/epics/6", (EPIC, "g", 6)),
    ],
)
def test_parse_ref_reads_a_single_ref(token: str, expected: tuple[EntityKind, str | None, int]) -> None:
    ref = parse_ref(token)
    assert ref is not None
    assert ref.identity == expected


@pytest.mark.parametrize(
    "token",
    [
        "",
        "   ",
        "12",
        "!12 !13",
        "see !12",
        "!12.",
        "proj!12",
        "#abc",
        "#0",
        "https://example.com/page#123",
        "`!12`",
    ],
)
def test_parse_ref_returns_none_for_anything_but_one_ref(token: str) -> None:
    assert parse_ref(token) is None


@given(st.text())
def test_find_refs_never_raises_on_arbitrary_text(text: str) -> None:
    find_refs(text)


_ref_like_text = st.lists(
    st.one_of(
        st.sampled_from(["!", "#", "&", "/", " ", "\n", "`", "```", "# ", "(", ".", "-", ":", "color:"]),
        st.from_regex(r"[A-Za-z0-9_.-]{1,6}", fullmatch=True),
        st.integers(min_value=0, max_value=2**32).map(str),
        st.sampled_from(["https://gitlab.com/", "/-/merge_requests/", "/-/issues/", "groups/", "/-/epics/"]),
    ),
    max_size=30,
).map("".join)


@given(st.one_of(st.text(), _ref_like_text))
def test_found_ref_names_reparse_to_the_same_ref(text: str) -> None:
    for ref in find_refs(text):
        reparsed = parse_ref(ref.name)
        assert reparsed is not None
        assert reparsed.identity == ref.identity


@given(_ref_like_text)
def test_found_ref_spans_point_at_their_raw_text(text: str) -> None:
    for ref in find_refs(text):
        assert text[ref.start : ref.end] == ref.raw


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("edit src/app/models.py", ["src/app/models.py"]),
        ("see ./README.md", ["./README.md"]),
        ("docs/cli.md:12", ["docs/cli.md"]),
        ("src/a.py:12:5", ["src/a.py"]),
        ("src/a.py#L10-L20", ["src/a.py"]),
        ("pyproject.toml", ["pyproject.toml"]),
        ("graphmem/core/", ["graphmem/core/"]),
        ("../shared/STYLE.md", ["../shared/STYLE.md"]),
        ("/etc/hosts", ["/etc/hosts"]),
        ("/setup.cfg", ["/setup.cfg"]),
        ("/tmp/", ["/tmp/"]),
        ("~/notes", ["~/notes"]),
        ("a/b/c", ["a/b/c"]),
        (".gitignore and .gitlab-ci.yml", [".gitignore", ".gitlab-ci.yml"]),
        ("`src/x.py`", ["src/x.py"]),
        ("'src/x.py'", ["src/x.py"]),
        ('"src/x.py",', ["src/x.py"]),
        ("(see docs/x.md).", ["docs/x.md"]),
        ("[cli](docs/cli.md)", ["docs/cli.md"]),
        ("src/a.py, src/b.py; src/a.py", ["src/a.py", "src/b.py"]),
        ("```\npytest tests/unit/test_x.py\n```", ["tests/unit/test_x.py"]),
    ],
)
def test_find_path_candidates_finds_paths(text: str, expected: list[str]) -> None:
    assert find_path_candidates(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "plain words only",
        "https://gitlab.com/g/p/-/blob/main/src/a.py",
        "ftp://host/file.txt",
        "gitlab.com/g/p/-/issues/1",
        "!12 #4 group/proj#4 group/sub&3",
        "version 0.11.3 or v1.2.0 or 3.14",
        "e.g. i.e. a.k.a. etc.",
        "and/or 1/2 24/7 2024/05/01",
        "Memory.recall() was slow",
        "mail me@example.com",
        ". .. / ./",
        "www.example.com",
        "type /help or /compact",
    ],
)
def test_find_path_candidates_ignores_non_paths(text: str) -> None:
    assert find_path_candidates(text) == []


@given(st.text())
def test_find_path_candidates_never_raises(text: str) -> None:
    find_path_candidates(text)


# --- bare identifiers ------------------------------------------------------------------


def test_identifier_shaped_words_come_before_plain_ones() -> None:
    text = "cancel calls refund_all, then RefundService and refundAll"
    assert find_identifiers(text) == ["refund_all", "RefundService", "refundAll", "cancel"]


@pytest.mark.parametrize(
    ("text", "word"),
    [
        ("see src/shop/checkout.py", "checkout"),  # a path
        ("Order.cancel is read as code already", "cancel"),
        ("so is cancel()", "cancel"),
        ("so is `cancel`", "cancel"),
        ("https://example.com/cancel_order", "cancel_order"),
        ("re-run the job", "run"),
        ("__init__ is everywhere", "__init__"),
        ("Cancel the order", "Cancel"),  # capitalised: starts a sentence
        ("update the docs", "update"),  # common words
        ("the job ran", "ran"),  # too short
    ],
)
def test_what_is_no_bare_identifier(text: str, word: str) -> None:
    assert word not in find_identifiers(text)


def test_a_word_before_sentence_punctuation_is_still_a_candidate() -> None:
    assert find_identifiers("Then cancel.") == ["cancel"]


@given(st.text(max_size=300))
def test_find_identifiers_never_raises_and_returns_words_of_the_text(text: str) -> None:
    for word in find_identifiers(text):
        assert word in text


def test_dotted_names_written_as_plain_text_are_candidates_in_order() -> None:
    text = "res.sendFile rejects relative paths; os.path.join and self.flush too, then res.sendFile."
    assert find_dotted_names(text) == ["res.sendFile", "os.path.join", "self.flush"]


@pytest.mark.parametrize(
    "text",
    [
        "e.g. this, i.e. that, a.k.a. the other",  # abbreviations
        "since v1.2 and 3.14, not v1.2.x",  # versions
        "see lib/router/index.js and ./lib/view.js",  # paths: the file reader's
        "`res.sendFile` and ```\nres.sendFile(p)\n```",  # code: the code reader's
        "https://expressjs.com/res.sendFile and me@res.sendFile",  # a URL, an e-mail
        "pre-res.sendFile, res.sendFile-like, res.sendFile/x, res.send2.1x",  # parts of longer words
    ],
)
def test_what_is_no_dotted_name(text: str) -> None:
    assert find_dotted_names(text) == []


@given(st.text(max_size=300))
def test_find_dotted_names_never_raises_and_returns_names_of_the_text(text: str) -> None:
    for name in find_dotted_names(text):
        assert name in text and "." in name

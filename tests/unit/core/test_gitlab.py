"""hunk_ranges and cut_description: the pure helpers of core/gitlab."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from graphmem.core.gitlab import MAX_DESCRIPTION_CHARS, cut_description, hunk_ranges

REFUND_DIFF = (
    "@@ -1,5 +1,5 @@\n"
    ' """Refunds."""\n'
    " \n"
    " from shop.base import Service\n"
    "-from decimal import Decimal\n"
    "+from shop.money import round_half_even\n"
    " \n"
    "@@ -9,9 +9,9 @@ class RefundService(Service):\n"
    " \n"
    "-        return total * 0.98\n"
    "+        return total * 0.99\n"
)


def test_each_hunk_gives_its_new_file_lines() -> None:
    assert hunk_ranges(REFUND_DIFF) == ((1, 5), (9, 17))


def test_a_count_left_out_means_one_line() -> None:
    assert hunk_ranges("@@ -3 +3 @@\n-a\n+b\n") == ((3, 3),)


def test_a_new_file_covers_all_its_lines() -> None:
    assert hunk_ranges("@@ -0,0 +1,6 @@\n+a\n+b\n+c\n+d\n+e\n+f\n") == ((1, 6),)


def test_a_deleted_file_has_no_new_lines() -> None:
    assert hunk_ranges("@@ -1,4 +0,0 @@\n-a\n-b\n-c\n-d\n") == ()


def test_a_pure_deletion_marks_the_line_it_follows() -> None:
    assert hunk_ranges("@@ -10,2 +9,0 @@\n-a\n-b\n") == ((9, 9),)


def test_headers_only_count_at_the_start_of_a_line() -> None:
    diff = '@@ -1,2 +1,2 @@\n-x = "@@ -5,1 +50,9 @@"\n+x = 1\n context\n'
    assert hunk_ranges(diff) == ((1, 2),)


def test_no_diff_no_ranges() -> None:
    assert hunk_ranges("") == ()
    assert hunk_ranges("Binary files a/logo.png and b/logo.png differ\n") == ()


def test_touching_ranges_merge() -> None:
    assert hunk_ranges("@@ -1,3 +1,3 @@\n@@ -4,2 +4,2 @@\n@@ -20,1 +20,1 @@\n") == ((1, 5), (20, 20))


@given(st.lists(st.tuples(st.integers(1, 10_000), st.integers(0, 300)), max_size=20))
def test_every_added_line_is_in_a_range_and_ranges_are_sorted_and_disjoint(
    hunks: list[tuple[int, int]],
) -> None:
    diff = "".join(f"@@ -{start},{count} +{start},{count} @@ heading\n+line\n" for start, count in hunks)
    ranges = hunk_ranges(diff)
    for start, count in hunks:
        lines = range(start, start + count) if count else range(start, start + 1)
        assert all(any(a <= line <= b for a, b in ranges) for line in lines)
    assert all(a <= b for a, b in ranges)
    assert all(prev[1] + 1 < nxt[0] for prev, nxt in itertools.pairwise(ranges))


def test_a_short_description_is_kept_whole() -> None:
    assert cut_description("Closes #34") == "Closes #34"
    assert cut_description(None) == ""


def test_a_long_description_is_cut_to_the_limit_with_a_note() -> None:
    text = "word " * 2_000
    cut = cut_description(text)
    assert len(cut) <= MAX_DESCRIPTION_CHARS
    assert cut.startswith("word word")
    assert cut.endswith(f"cut by graphmem at {MAX_DESCRIPTION_CHARS} of {len(text)} characters]")


@given(st.text(max_size=300), st.integers(80, 200))
def test_a_cut_description_never_exceeds_its_limit(text: str, limit: int) -> None:
    cut = cut_description(text, limit)
    assert len(cut) <= limit
    assert cut == text or "cut by graphmem" in cut

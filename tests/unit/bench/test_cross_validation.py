"""Leave-one-out choice of a plan: the held-out figure never sees the fold it scores."""

from __future__ import annotations

import pytest

from graphmem.bench.cross_validation import format_cross_validation, leave_one_out, plan_grid
from graphmem.core.fusion import get_plan
from graphmem.errors import InvalidInputError


def test_the_figure_on_a_fold_comes_from_the_plan_chosen_on_the_others() -> None:
    # Left out, each fold gets the plan the other two prefer: x gets b (0.2 there), y gets a
    # (0.0 there), z gets b (0.9): a fold never chooses for itself.
    scores = {
        "base": {"x": [0.5, 0.5], "y": [0.5, 0.5], "z": [0.5, 0.5]},
        "a": {"x": [1.0, 1.0], "y": [0.0, 0.0], "z": [0.4, 0.4]},
        "b": {"x": [0.2, 0.2], "y": [0.9, 0.9], "z": [0.9, 0.9]},
    }

    result = leave_one_out(scores)

    assert [(f.name, f.chosen) for f in result.folds] == [("x", "b"), ("y", "a"), ("z", "b")]
    assert [f.held_out for f in result.folds] == pytest.approx([0.2, 0.0, 0.9])
    assert result.folds[1].on_the_others == pytest.approx(0.7)
    assert result.tuned == "b"
    assert result.tuned_score == pytest.approx(2.0 / 3)
    assert result.cross_validated == pytest.approx(2.2 / 6)
    assert result.gap == pytest.approx(0.3)


def test_ties_keep_the_shipped_plan() -> None:
    scores = {"base": {"x": [1.0], "y": [0.0]}, "same": {"x": [1.0], "y": [0.0]}}

    result = leave_one_out(scores)

    assert result.tuned == "base"
    assert {f.chosen for f in result.folds} == {"base"}


def test_folds_weigh_by_their_questions() -> None:
    scores = {"base": {"x": [1.0, 1.0, 1.0], "y": [0.0]}}

    assert leave_one_out(scores).cross_validated == pytest.approx(0.75)


@pytest.mark.parametrize(
    "scores",
    [{}, {"base": {"x": [1.0]}}, {"base": {"x": [1.0], "y": [1.0]}, "short": {"x": [1.0], "y": []}}],
)
def test_scores_that_cannot_be_cross_validated_are_refused(scores: dict[str, dict[str, list[float]]]) -> None:
    with pytest.raises(InvalidInputError):
        leave_one_out(scores)


def test_the_grid_starts_with_the_plan_and_names_each_change() -> None:
    base = get_plan("hybrid")

    plans = plan_grid(base, {"weights.graph": (1.0, 0.5), "semantic_offset": (0.2, 0.3)})

    assert plans[0] is base
    assert [p.name for p in plans[1:]] == [
        "hybrid[weights.graph=0.5]",
        "hybrid[semantic_offset=0.3]",
        "hybrid[semantic_offset=0.3,weights.graph=0.5]",
    ]
    assert plans[-1].weights["graph"] == 0.5 and plans[-1].weights["lexical"] == base.weights["lexical"]
    assert plans[-1].semantic_offset == 0.3


@pytest.mark.parametrize(
    ("grid", "says"),
    [
        ({"name": ("x",)}, "no plan setting"),
        ({"wieghts.graph": (1.0,)}, "no plan setting"),
        ({"semantic_offset": ()}, "no value"),
        ({"neighbour_weight": (2.0,)}, "invalid plan"),
    ],
)
def test_a_grid_that_names_no_setting_or_makes_a_bad_plan_is_refused(
    grid: dict[str, tuple[object, ...]], says: str
) -> None:
    with pytest.raises(InvalidInputError, match=says):
        plan_grid(get_plan("hybrid"), grid)


def test_the_report_says_the_three_figures_and_each_choice() -> None:
    report = leave_one_out({"base": {"x": [1.0], "y": [0.5]}, "b": {"x": [0.0], "y": [1.0]}}).as_dict()

    text = "\n".join(format_cross_validation("title", report))

    assert "shipped plan       0.750  base" in text
    assert "cross-validated    0.250  (gap +0.500)" in text
    assert "x                      1   0.000   1.000  b" in text

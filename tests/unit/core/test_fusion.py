"""Recall plans and weighted reciprocal-rank fusion."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from graphmem.core.fusion import (
    ENTITY,
    GRAPH,
    LEXICAL,
    PLANS,
    SEMANTIC,
    Plan,
    age_weighted,
    carries_topic,
    convex_scores,
    entity_scores,
    get_plan,
    hub_weight,
    source_prior,
    spread,
    weighted_rrf,
)

Rankings = dict[str, list[tuple[str, float]]]

_ids = st.sampled_from([f"m{i}" for i in range(12)])
_ranking = st.lists(st.tuples(_ids, st.floats(-10, 10, allow_nan=False)), max_size=10)
_rankings = st.dictionaries(st.sampled_from([LEXICAL, SEMANTIC, ENTITY, GRAPH]), _ranking, max_size=4)
_weights = st.dictionaries(
    st.sampled_from([LEXICAL, SEMANTIC, ENTITY, GRAPH]), st.floats(0, 5, allow_nan=False), max_size=4
)


def order(rankings: Mapping[str, Sequence[tuple[str, float]]], weights: Mapping[str, float]) -> list[str]:
    return [fused.id for fused in weighted_rrf(rankings, weights)]


def test_no_rankings_fuse_to_nothing() -> None:
    assert weighted_rrf({}, {LEXICAL: 1.0}) == []


def test_a_single_channel_keeps_its_order() -> None:
    ranking = [("c", 9.0), ("a", 5.0), ("b", 1.0)]
    assert order({LEXICAL: ranking}, {LEXICAL: 1.0}) == ["c", "a", "b"]


def test_an_item_found_by_two_channels_beats_one_found_by_one() -> None:
    rankings = {LEXICAL: [("solo", 1.0), ("both", 0.9)], SEMANTIC: [("both", 0.8)]}
    assert order(rankings, {LEXICAL: 1.0, SEMANTIC: 1.0})[0] == "both"


def test_a_channel_without_weight_is_ignored() -> None:
    rankings = {LEXICAL: [("a", 1.0)], GRAPH: [("g", 1.0)]}
    assert order(rankings, {LEXICAL: 1.0}) == ["a"]
    assert order(rankings, {LEXICAL: 1.0, GRAPH: 0.0}) == ["a"]


def test_score_is_the_weighted_reciprocal_rank_sum() -> None:
    rankings = {LEXICAL: [("x", 3.0), ("a", 2.0)], SEMANTIC: [("a", 0.5)]}
    fused = {f.id: f for f in weighted_rrf(rankings, {LEXICAL: 2.0, SEMANTIC: 1.0}, k=10)}
    assert fused["a"].score == pytest.approx(2.0 / 12 + 1.0 / 11)


def test_channels_record_one_based_rank_and_raw_score() -> None:
    fused = weighted_rrf({LEXICAL: [("x", 3.0), ("a", 2.5)]}, {LEXICAL: 1.0})
    channel = fused[1].channels[0]
    assert (channel.channel, channel.rank, channel.score) == (LEXICAL, 2, 2.5)


def test_a_repeated_item_counts_once_at_its_best_rank() -> None:
    fused = weighted_rrf({LEXICAL: [("a", 1.0), ("b", 0.9), ("a", 0.5)]}, {LEXICAL: 1.0})
    assert [(f.id, [c.rank for c in f.channels]) for f in fused] == [("a", [1]), ("b", [2])]


def test_equal_scores_break_by_channel_count() -> None:
    # 2/(k+1) == 1/(k+1) + 1/(k+1): "pair" is found by two channels, "solo" by one.
    rankings = {LEXICAL: [("solo", 1.0)], SEMANTIC: [("pair", 1.0)], ENTITY: [("pair", 1.0)]}
    assert order(rankings, {LEXICAL: 2.0, SEMANTIC: 1.0, ENTITY: 1.0}) == ["pair", "solo"]


def test_equal_scores_and_channel_counts_break_by_id() -> None:
    rankings = {LEXICAL: [("c", 1.0)], SEMANTIC: [("a", 1.0)]}
    assert order(rankings, {LEXICAL: 1.0, SEMANTIC: 1.0}) == ["a", "c"]


@given(_rankings, _weights)
def test_fusion_is_deterministic(rankings: Rankings, weights: dict[str, float]) -> None:
    assert weighted_rrf(rankings, weights) == weighted_rrf(rankings, weights)


@given(_rankings, _weights)
def test_fused_scores_are_non_increasing(rankings: Rankings, weights: dict[str, float]) -> None:
    scores = [f.score for f in weighted_rrf(rankings, weights)]
    assert scores == sorted(scores, reverse=True)


@given(_rankings, _weights)
def test_fusion_keeps_exactly_the_items_of_weighted_channels(
    rankings: Rankings, weights: dict[str, float]
) -> None:
    expected = {item for ch, ranking in rankings.items() if weights.get(ch, 0) > 0 for item, _ in ranking}
    assert set(order(rankings, weights)) == expected


@given(_rankings, _weights, st.sampled_from([LEXICAL, SEMANTIC, ENTITY, GRAPH]), st.floats(0.01, 5))
def test_more_weight_never_moves_a_channels_item_below_an_item_it_lacks(
    rankings: Rankings, weights: dict[str, float], channel: str, extra: float
) -> None:
    before = order(rankings, weights)
    heavier = {**weights, channel: weights.get(channel, 0.0) + extra}
    after = order(rankings, heavier)
    boosted = {item for item, _ in rankings.get(channel, [])}
    for x in boosted & set(before):
        for y in set(before) - boosted:
            if before.index(x) < before.index(y):
                assert after.index(x) < after.index(y)


@given(_rankings, _weights, st.sampled_from([LEXICAL, SEMANTIC, ENTITY, GRAPH]), st.floats(0.01, 5))
def test_more_weight_never_lowers_a_score(
    rankings: Rankings, weights: dict[str, float], channel: str, extra: float
) -> None:
    before = {f.id: f.score for f in weighted_rrf(rankings, weights)}
    heavier = {**weights, channel: weights.get(channel, 0.0) + extra}
    after = {f.id: f.score for f in weighted_rrf(rankings, heavier)}
    assert all(after[item] >= score for item, score in before.items())


def test_get_plan_returns_the_named_preset() -> None:
    assert get_plan("hybrid") is PLANS["hybrid"]
    assert get_plan("lexical").uses(LEXICAL)
    assert not get_plan("lexical").uses(SEMANTIC)


def test_get_plan_names_the_known_plans_when_unknown() -> None:
    with pytest.raises(KeyError) as raised:
        get_plan("fastest")
    assert "hybrid" in str(raised.value) and "fastest" in str(raised.value)


def test_the_default_plan_uses_every_channel() -> None:
    assert all(get_plan("hybrid").uses(c) for c in (LEXICAL, SEMANTIC, ENTITY, GRAPH))


# -- convex fusion and graph spreading ----------------------------------------------------

EQUAL = {LEXICAL: 1.0, SEMANTIC: 1.0, ENTITY: 1.0}


def test_convex_gives_the_best_lexical_item_the_full_lexical_weight() -> None:
    scores = convex_scores({"a": 8.0, "b": 2.0}, {}, {}, {LEXICAL: 2.0}, semantic_offset=0.2)
    assert scores == {"a": pytest.approx(2.0), "b": pytest.approx(0.5)}


def test_convex_counts_a_cosine_at_the_offset_as_zero() -> None:
    scores = convex_scores({}, {"best": 0.8, "weak": 0.2, "worse": 0.1}, {}, EQUAL, semantic_offset=0.2)
    assert scores == {"best": pytest.approx(1.0), "weak": 0.0, "worse": 0.0}


def test_convex_adds_up_the_channels() -> None:
    scores = convex_scores({"a": 1.0}, {"a": 0.6}, {"a": 1.0}, EQUAL, semantic_offset=0.2)
    assert scores["a"] == pytest.approx(3.0)


@given(
    st.dictionaries(_ids, st.floats(0, 50), max_size=8),
    st.dictionaries(_ids, st.floats(-1, 1), max_size=8),
    st.dictionaries(_ids, st.just(1.0), max_size=3),
    _weights,
)
# The weight times the smallest float, divided by it, was 2.0: above the ceiling of 1.5.
@example(lexical={"m0": 5e-324}, cosines={}, entity={}, weights={"lexical": 1.5})
def test_convex_scores_stay_between_zero_and_the_weight_sum(
    lexical: dict[str, float], cosines: dict[str, float], entity: dict[str, float], weights: dict[str, float]
) -> None:
    scores = convex_scores(lexical, cosines, entity, weights, semantic_offset=0.2)
    assert set(scores) == {*lexical, *cosines, *entity}
    ceiling = sum(weights.get(c, 0.0) for c in (LEXICAL, SEMANTIC, ENTITY))
    assert all(-1e-9 <= score <= ceiling + 1e-9 for score in scores.values())


def test_spread_gives_an_item_a_share_of_its_best_neighbour() -> None:
    gains = spread({"seed": 1.0, "weak": 0.1}, {"x": ["seed", "weak"], "seed": ["x"], "weak": ["x"]}, [0.5])
    assert gains["x"].gain == pytest.approx(0.5)
    assert (gains["x"].source, gains["x"].hops) == ("seed", 1)


def test_spread_reaches_two_hops_with_the_second_weight() -> None:
    adjacency = {"seed": ["mid"], "mid": ["seed", "far"], "far": ["mid"]}
    gains = spread({"seed": 1.0}, adjacency, [0.5, 0.3])
    assert gains["far"].gain == pytest.approx(0.3)
    assert (gains["far"].source, gains["far"].hops) == ("seed", 2)


def test_spread_with_a_zero_hop_weight_gains_nothing() -> None:
    # The docstring: "Only items that gain something are returned."
    assert spread({"seed": 1.0}, {"x": ["seed"]}, [0.0]) == {}


def test_spread_leaves_isolated_items_alone() -> None:
    assert spread({"a": 1.0, "b": 1.0}, {}, [0.5, 0.3]) == {}


@given(
    st.dictionaries(_ids, st.floats(0, 3, allow_subnormal=False), max_size=10),
    st.dictionaries(_ids, st.lists(_ids, max_size=4), max_size=10),
    st.lists(st.floats(0.01, 1), min_size=1, max_size=3),
)
def test_spread_gains_are_positive_and_bounded(
    base: dict[str, float], adjacency: dict[str, list[str]], hop_weights: list[float]
) -> None:
    best = max(base.values(), default=0.0)
    for gain in spread(base, adjacency, hop_weights).values():
        assert 0 < gain.gain <= sum(hop_weights) * best + 1e-9
        assert 1 <= gain.hops <= len(hop_weights)


# -- hub damping and source priors ---------------------------------------------------------


def test_an_entity_two_memories_share_passes_its_whole_score() -> None:
    assert hub_weight(0) == hub_weight(2) == 1.0  # RELATES / NEXT edges, and a pair


def test_a_hub_passes_the_inverse_log_of_its_fanout() -> None:
    assert hub_weight(4) == pytest.approx(0.5)
    assert hub_weight(40) == pytest.approx(0.188, abs=1e-3)


@given(st.integers(0, 10_000), st.integers(0, 10_000))
def test_a_bigger_hub_never_passes_more(small: int, big: int) -> None:
    small, big = sorted((small, big))
    assert 0 < hub_weight(big) <= hub_weight(small) <= 1.0


def test_spread_scales_a_neighbours_score_by_the_edge_weight() -> None:
    adjacency = {"x": ["hubbed"], "hubbed": ["x"]}
    weights = {("x", "hubbed"): 0.2, ("hubbed", "x"): 0.2}
    gains = spread({"hubbed": 1.0}, adjacency, [0.5], weights)
    assert gains["x"].gain == pytest.approx(0.1)


def test_spread_prefers_a_weaker_source_through_a_stronger_edge() -> None:
    # A hub neighbour with score 1.0 through a 0.2 edge is worth less than 0.5 through a pair edge.
    adjacency = {"x": ["hubbed", "paired"], "hubbed": ["x"], "paired": ["x"]}
    weights = {("x", "hubbed"): 0.2, ("hubbed", "x"): 0.2}
    gains = spread({"hubbed": 1.0, "paired": 0.5}, adjacency, [0.5], weights)
    assert gains["x"].source == "paired"
    assert gains["x"].gain == pytest.approx(0.25)


def test_spread_multiplies_the_edge_weights_along_two_hops() -> None:
    adjacency = {"seed": ["mid"], "mid": ["seed", "far"], "far": ["mid"]}
    weights = {("far", "mid"): 0.5, ("mid", "seed"): 0.4}
    gains = spread({"seed": 1.0}, adjacency, [0.5, 0.3], weights)
    assert gains["far"].gain == pytest.approx(0.3 * 0.5 * 0.4)


@given(
    st.dictionaries(_ids, st.floats(0, 3, allow_subnormal=False), max_size=10),
    st.dictionaries(_ids, st.lists(_ids, max_size=4), max_size=10),
    st.floats(0.01, 1),
)
def test_damped_edges_never_pass_more_than_undamped_ones(
    base: dict[str, float], adjacency: dict[str, list[str]], damping: float
) -> None:
    edges = {(a, b): damping for a, ns in adjacency.items() for b in ns}
    plain = spread(base, adjacency, [0.5, 0.3])
    damped = spread(base, adjacency, [0.5, 0.3], edges)
    for item, gain in damped.items():
        assert gain.gain <= plain[item].gain + 1e-9


def test_source_prior_takes_the_longest_matching_prefix() -> None:
    priors = {"git:": 0.8, "git:vendor/": 0.5}
    assert source_prior(priors, "git:abc123") == 0.8
    assert source_prior(priors, "git:vendor/x") == 0.5
    assert source_prior(priors, "user") == 1.0


def test_every_plan_ranks_scraped_memories_below_what_people_said() -> None:
    for plan in PLANS.values():
        assert source_prior(plan.source_priors, "git:0123abcd") < 1.0  # a bootstrapped commit
        assert source_prior(plan.source_priors, "bootstrap:README.md#setup") < 1.0  # a docs fact
        for said in ("user", "mcp", "opencode"):
            assert source_prior(plan.source_priors, said) == 1.0
        assert plan.hub_damping


@pytest.mark.parametrize("prior", [0.0, -0.5, 1.5])
def test_a_plan_rejects_a_prior_outside_zero_to_one(prior: float) -> None:
    with pytest.raises(ValueError, match="must be in"):
        Plan("custom", {LEXICAL: 1.0}, source_priors={"git:": prior})


# -- entity channel: specificity, summed evidence, age ----------------------------------


def _busy_file_and_a_method() -> dict[str, list[str]]:
    """40 commits about a file; two of them also about the method named with it."""
    about = {"File:app.py": [f"c{i}" for i in range(40)], "Symbol:App.run": ["c3", "c7"]}
    return about


def test_a_memory_about_the_named_method_beats_the_many_about_its_file() -> None:
    scores = entity_scores(_busy_file_and_a_method(), [(["File:app.py", "Symbol:App.run"], 1.0)])

    assert scores["c3"] == scores["c7"] == 1.0
    assert max(s for item, s in scores.items() if item not in {"c3", "c7"}) < 0.2


def test_without_specificity_every_memory_about_a_named_entity_scores_one() -> None:
    scores = entity_scores(
        _busy_file_and_a_method(), [(["File:app.py", "Symbol:App.run"], 1.0)], specificity=False
    )

    assert set(scores.values()) == {1.0}


def test_a_memory_about_two_named_symbols_beats_one_about_one() -> None:
    about = {"Symbol:a": ["m1", "m2", "m3"], "Symbol:b": ["m1", "m4", "m5"]}
    scores = entity_scores(about, [(["Symbol:a", "Symbol:b"], 1.0)])

    assert scores["m1"] == 1.0
    assert {scores[m] for m in ("m2", "m3", "m4", "m5")} == {0.5}


def test_a_neighbour_counts_its_weight_times_its_specificity() -> None:
    about = {"Symbol:named": ["m1"], "Symbol:caller": ["m2"]}
    scores = entity_scores(about, [(["Symbol:named"], 1.0), (["Symbol:caller"], 0.6)])

    assert scores == {"m1": 1.0, "m2": 0.6}


def test_a_memory_one_edge_away_ranks_below_every_memory_about_a_named_entity() -> None:
    about = {"File:busy.py": [f"c{i}" for i in range(300)], "Symbol:rare_caller": ["n1"]}
    scores = entity_scores(about, [(["File:busy.py"], 1.0), (["Symbol:rare_caller"], 0.6)])

    assert scores["n1"] == pytest.approx(0.6)
    assert scores["n1"] < min(s for item, s in scores.items() if item != "n1")


def test_a_memory_about_a_named_entity_takes_no_extra_from_its_neighbours() -> None:
    about = {"Symbol:named": ["m1", "m2"], "Symbol:callee": ["m1"]}
    scores = entity_scores(about, [(["Symbol:named"], 1.0), (["Symbol:callee"], 0.6)])

    assert scores["m1"] == scores["m2"] == 1.0


def test_a_repeated_key_or_memory_counts_once() -> None:
    about = {"File:a": ["m1", "m1", "m2"]}

    assert entity_scores(about, [(["File:a", "File:a"], 1.0)]) == {"m1": 1.0, "m2": 1.0}


@given(st.dictionaries(st.sampled_from(["k1", "k2", "k3"]), st.lists(_ids, max_size=8), max_size=3))
def test_entity_scores_are_in_zero_one_and_the_best_is_one(about: dict[str, list[str]]) -> None:
    scores = entity_scores(about, [(list(about), 1.0)])

    assert all(0.0 < s <= 1.0 for s in scores.values())
    assert not scores or max(scores.values()) == pytest.approx(1.0)


def test_age_weighting_keeps_the_newest_whole_and_takes_the_share_from_the_oldest() -> None:
    weighted = age_weighted({"old": 1.0, "mid": 1.0, "new": 1.0}, {"old": 1, "mid": 2, "new": 3}, 0.2)

    assert weighted == pytest.approx({"old": 0.8, "mid": 0.9, "new": 1.0})


def test_age_weighting_is_only_a_tiebreak_between_specific_and_broad_evidence() -> None:
    scores = entity_scores(_busy_file_and_a_method(), [(["File:app.py", "Symbol:App.run"], 1.0)])
    times = {f"c{i}": float(i) for i in range(40)}  # c39 is the newest commit to the file
    weighted = age_weighted(scores, times, 0.2)

    assert sorted(weighted, key=lambda i: -weighted[i])[:3] == ["c7", "c3", "c39"]


def test_a_plan_refuses_an_entity_recency_outside_zero_one() -> None:
    with pytest.raises(ValueError, match="entity_recency"):
        Plan("bad", {ENTITY: 1.0}, entity_recency=1.0)


def test_a_plan_refuses_a_negative_exact_phrase_length() -> None:
    with pytest.raises(ValueError, match="exact_phrase_words"):
        Plan("bad", {LEXICAL: 1.0}, exact_phrase_words=-1)
    assert Plan("off", {LEXICAL: 1.0}, exact_phrase_words=0).exact_phrase_words == 0


def test_spread_keeps_the_route_of_the_best_gain_from_source_to_item() -> None:
    gains = spread({"a": 1.0}, {"a": ["b"], "b": ["a", "c"], "c": ["b"]}, [0.5, 0.3])
    assert gains["b"].route == ("a", "b")
    assert gains["c"].route == ("a", "b", "c")


def test_a_plan_follows_at_most_two_entity_hops() -> None:
    assert PLANS["hybrid"].entity_hops == 2
    with pytest.raises(ValueError, match="entity_hops"):
        Plan("far", {LEXICAL: 1.0}, entity_hops=3)


def test_an_edge_through_an_author_or_a_project_carries_no_topic() -> None:
    topicless = PLANS["hybrid"].topicless_kinds

    assert not carries_topic("Person:mayank@example.com", topicless)
    assert not carries_topic("Project:/src/shop", topicless)
    assert carries_topic("File:/src/shop::cart.py", topicless)
    assert carries_topic("supersedes", topicless)  # a link between two memories


def test_a_plan_refuses_a_guessed_weight_outside_zero_to_one() -> None:
    with pytest.raises(ValueError, match="guessed_weight"):
        Plan("custom", {LEXICAL: 1.0}, guessed_weight=1.5)

"""Leave-one-out choice of a recall plan: tune on every fold but one, score the one left out.

A benchmark scores each candidate plan question by question, fold by fold (LoCoMo's
conversations, blame recall's repositories). The *tuned* figure is what tuning on the data
reports: the best candidate's score on all of it. The *cross-validated* figure answers the
honest question: for each fold, the candidate chosen on the other folds alone, scored on that
fold; the folds' questions together give the figure. Data graphmem never saw should expect
the cross-validated figure; the gap between the two is how much the tuning learned the data.

Candidates are variations of one plan over a declared grid (``plan_grid``): a key names a
field of :class:`~graphmem.core.fusion.Plan` (``semantic_offset``, ``hop_weights``) or one
channel's weight (``weights.graph``). The base plan is the first candidate, and ties go to
the earlier candidate, so a grid never moves away from the shipped plan for nothing.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from graphmem.core.fusion import Plan
from graphmem.errors import InvalidInputError

GridValue = float | int | tuple[float, ...]
Grid = Mapping[str, Sequence[GridValue]]
WEIGHT = "weights."


def plan_grid(base: Plan, grid: Grid) -> list[Plan]:
    """``base`` first, then every other combination of ``grid``'s values applied to it.

    Each candidate is named after what it changes (``hybrid[weights.graph=0.5]``); a
    combination equal to ``base`` is ``base``.
    """
    fields = set(Plan.__dataclass_fields__)
    for key in grid:
        if not key.startswith(WEIGHT) and (key not in fields or key in ("name", "weights")):
            raise InvalidInputError(
                f"The grid names {key!r}, which is no plan setting: use a field of Plan "
                f"({', '.join(sorted(fields - {'name', 'weights', 'description'}))}) or weights.CHANNEL."
            )
        if not grid[key]:
            raise InvalidInputError(f"The grid gives no value for {key!r}.")
    plans = [base]
    seen = {_signature(base)}
    keys = sorted(grid)
    for values in itertools.product(*(grid[key] for key in keys)):
        plan = _applied(base, dict(zip(keys, values, strict=True)))
        if _signature(plan) not in seen:
            seen.add(_signature(plan))
            plans.append(plan)
    return plans


def _applied(base: Plan, changes: Mapping[str, GridValue]) -> Plan:
    weights = dict(base.weights)
    fields: dict[str, Any] = {}
    for key, value in changes.items():
        if key.startswith(WEIGHT):
            weights[key.removeprefix(WEIGHT)] = float(value)  # type: ignore[arg-type]
        else:
            fields[key] = value
    changed = [
        f"{key}={_shown(value)}" for key, value in sorted(changes.items()) if value != _current(base, key)
    ]
    if not changed:
        return base
    try:
        return replace(base, name=f"{base.name}[{','.join(changed)}]", weights=weights, **fields)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"The grid makes an invalid plan ({', '.join(changed)}): {exc}") from exc


def _current(plan: Plan, key: str) -> Any:
    if key.startswith(WEIGHT):
        return plan.weights.get(key.removeprefix(WEIGHT), 0.0)
    return getattr(plan, key)


def _shown(value: GridValue) -> str:
    return "/".join(f"{v:g}" for v in value) if isinstance(value, tuple) else f"{value:g}"


def _signature(plan: Plan) -> tuple[Any, ...]:
    settings = [
        getattr(plan, name)
        for name in Plan.__dataclass_fields__
        if name not in ("name", "description", "weights", "source_priors")
    ]
    return (*settings, tuple(sorted(plan.weights.items())), tuple(sorted(plan.source_priors.items())))


@dataclass(frozen=True, slots=True)
class Fold:
    """One fold left out: the candidate chosen on the others, and how it did there and here."""

    name: str
    chosen: str
    on_the_others: float
    held_out: float
    questions: int


@dataclass(frozen=True, slots=True)
class CrossValidation:
    """The shipped plan's figure, the tuned figure and the cross-validated one (question means)."""

    base: str
    base_score: float
    tuned: str
    tuned_score: float
    cross_validated: float
    folds: tuple[Fold, ...]

    @property
    def gap(self) -> float:
        """How much better tuning on the data looks than data it did not see."""
        return self.tuned_score - self.cross_validated

    def as_dict(self) -> dict[str, Any]:
        return {
            "base": {"plan": self.base, "score": round(self.base_score, 4)},
            "tuned": {"plan": self.tuned, "score": round(self.tuned_score, 4)},
            "cross_validated": round(self.cross_validated, 4),
            "gap": round(self.gap, 4),
            "folds": [
                {
                    "held_out": f.name,
                    "chosen": f.chosen,
                    "on_the_others": round(f.on_the_others, 4),
                    "held_out_score": round(f.held_out, 4),
                    "questions": f.questions,
                }
                for f in self.folds
            ],
        }


def leave_one_out(scores: Mapping[str, Mapping[str, Sequence[float]]]) -> CrossValidation:
    """``scores[plan][fold]``: each question's score; the first plan is the base plan.

    Every plan must score the same folds with the same number of questions. A fold with no
    question is left out of the choice and of the figures.
    """
    plans = list(scores)
    if not plans:
        raise InvalidInputError("Cross-validation needs at least one plan.")
    folds = [fold for fold in scores[plans[0]] if scores[plans[0]][fold]]
    if len(folds) < 2:
        raise InvalidInputError("Cross-validation needs at least two folds with questions.")
    for plan in plans:
        for fold in folds:
            if len(scores[plan].get(fold, ())) != len(scores[plans[0]][fold]):
                raise InvalidInputError(f"Plan {plan!r} does not score every question of fold {fold!r}.")

    def mean(plan: str, among: Sequence[str]) -> float:
        return statistics.fmean(value for fold in among for value in scores[plan][fold])

    tuned = max(plans, key=lambda plan: mean(plan, folds))  # max keeps the first of equals
    results = []
    held_out_values: list[float] = []
    for fold in folds:
        others = [f for f in folds if f != fold]
        chosen = max(plans, key=lambda plan: mean(plan, others))
        held_out_values.extend(scores[chosen][fold])
        results.append(
            Fold(fold, chosen, mean(chosen, others), mean(chosen, [fold]), len(scores[chosen][fold]))
        )
    return CrossValidation(
        base=plans[0],
        base_score=mean(plans[0], folds),
        tuned=tuned,
        tuned_score=mean(tuned, folds),
        cross_validated=statistics.fmean(held_out_values),
        folds=tuple(results),
    )


def format_cross_validation(title: str, report: Mapping[str, Any]) -> list[str]:
    """The three figures of a ``CrossValidation.as_dict()`` report and each fold's choice."""
    lines = [
        title,
        f"shipped plan       {report['base']['score']:.3f}  {report['base']['plan']}",
        f"tuned (all folds)  {report['tuned']['score']:.3f}  {report['tuned']['plan']}",
        f"cross-validated    {report['cross_validated']:.3f}  (gap {report['gap']:+.3f})",
        f"{'held out':<18} {'n':>5} {'there':>7} {'others':>7}  chosen on the others",
    ]
    lines += [
        f"{f['held_out']:<18} {f['questions']:>5} {f['held_out_score']:>7.3f} {f['on_the_others']:>7.3f}"
        f"  {f['chosen']}"
        for f in report["folds"]
    ]
    return lines

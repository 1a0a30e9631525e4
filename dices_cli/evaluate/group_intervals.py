"""The intervals of a group row of `dices evaluate` and of a difference from the rest:
dices_cli.metrics.intervals' centred intervals fed with a row's jackknives (the raters'
variance of its left-out values, V_answers where the metric has one)."""

from __future__ import annotations

import math
from typing import Any

from dices_cli.evaluate.groups import answer_variances
from dices_cli.evaluate.measure import BOUNDS, RECIPROCAL_SCALE, Measured, Prediction
from dices_cli.metrics.agreement import Array
from dices_cli.metrics.intervals import (
    Jackknife,
    centred_interval,
    curved_interval,
    difference_bounds,
    difference_interval,
)


def number(value: float) -> float | None:
    """A figure as a table cell: None where undefined."""
    return None if math.isnan(value) else float(value)


def rater_variance(
    left_out: Array | None, raters: tuple[Jackknife, int] | None
) -> tuple[float, float]:
    """The rater_variance of a figure (dices_cli.metrics.intervals): with `raters` (the
    jackknife, and the group's raters), a group row's: the jackknife's variance of
    `left_out` where given (a RATER_SMOOTH figure), else none and a t quantile with the
    group's raters - 1 degrees of freedom; else none."""
    if raters is None:
        return 0.0, math.inf
    jackknife, size = raters
    return jackknife.variance(left_out) if left_out is not None else (0.0, size - 1.0)


def interval(
    values: Array,
    bounds: tuple[float, float],
    left_out: Array | None = None,
    raters: tuple[Jackknife, int] | None = None,
    reciprocal: bool = False,
    overlap: float = 0.0,
    scale: float = math.nan,
) -> tuple[float | None, float | None]:
    """The centred interval of values (row 0 the estimate, then the conversation blocks
    left out), with `rater_variance`'s variance less `overlap` (V_answers); `reciprocal`:
    on the reciprocal scale, or, with a group's `scale` (s^2, Measured.scale) and the
    raters' jackknife, curved (dices_cli.metrics.intervals.curved_interval)."""
    variance = rater_variance(left_out, raters)
    if reciprocal and scale > 0 and raters is not None and left_out is not None:
        low, high = curved_interval(values, variance, bounds, 0.95, overlap, scale)
    else:
        low, high = centred_interval(values, variance, bounds, reciprocal, overlap=overlap)
    return number(low), number(high)


def overlap_of(measured: Measured, metric: str, raters: tuple[Jackknife, int] | None) -> float:
    """A group row's V_answers of `metric` (0 without the raters' jackknife or for a metric
    that has none)."""
    if raters is None or measured.overlap is None:
        return 0.0
    return measured.overlap.get(metric, 0.0)


def difference_interval_of(
    own: Measured, rest: Measured, metric: str, raters: tuple[Jackknife, int] | None
) -> tuple[float | None, float | None]:
    """The interval of own - rest on `metric` (a group row's difference, a persona's):
    centred, with the raters' variance of the left-out differences where both sides have
    them, against a plurality the own side's `plurality` term (V_raters - V_answers of the
    difference, dices_cli.evaluate.plurality); for RECIPROCAL_SCALE metrics, from the two
    sides' reciprocal-scale intervals (MOVER, dices_cli.metrics.intervals.
    difference_interval), their V_answers taken off."""
    difference = own.values[metric] - rest.values[metric]
    own_out, rest_out = ((side.left_out or {}).get(metric) for side in (own, rest))
    left_out = None if own_out is None or rest_out is None else own_out - rest_out
    if metric not in RECIPROCAL_SCALE:
        variance = (
            own.plurality
            if own.plurality is not None and raters is not None
            else rater_variance(left_out, raters)
        )
        low, high = centred_interval(difference, variance, difference_bounds(BOUNDS[metric]))
        return number(low), number(high)
    low, high = difference_interval(
        (own.values[metric], rater_variance(own_out, raters)),
        (rest.values[metric], rater_variance(rest_out, raters)),
        (difference, rater_variance(left_out, raters)),
        BOUNDS[metric],
        overlaps=(overlap_of(own, metric, raters), overlap_of(rest, metric, raters)),
        scale=own.scale if raters is not None and metric == "jsd" else math.nan,
    )
    return number(low), number(high)


def jackknifed(
    prediction: Prediction,
    key: tuple[Any, ...],
    measured: Measured,
    left_out: dict[str, Array] | None,
    counts: Array,
    scale: float = math.nan,
) -> Measured:
    """A group row's figures (reference key[0]) with their values with each member left out
    and, against shares, jsd's and tvd's V_answers of the side's answer `counts` [category,
    conversation] and jsd's `scale` (Measured.scale)."""
    shares = key[0] == "crowd-share"
    overlap = answer_variances(prediction, counts) if shares else None
    return Measured(
        measured.n,
        measured.ties,
        measured.values,
        left_out,
        overlap,
        measured.plurality,
        scale if shares else math.nan,
    )

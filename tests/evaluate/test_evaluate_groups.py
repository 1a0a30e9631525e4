"""`dices evaluate --by`: the group rows' permutation test.

(Their intervals: tests/evaluate/test_evaluate_intervals.py.) The test of a group against the rest
must hold its level when demographics carry no information: the calibration here shuffles
the raters' groups (group sizes kept) and counts how often p < 0.05. The bootstrap p-value
it replaces rejected in 18-92% of such rows.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from drivers.shuffled import shuffled_groups
from scipy.stats import binom

from dices_cli.evaluate.evaluation import Settings, aligned_predictions, evaluate
from dices_cli.evaluate.groups import members_of, permuted_differences
from dices_cli.evaluate.predictions import Predictions
from dices_cli.evaluate.references import Votes
from dices_cli.queries.engine import RaterSelection
from dices_cli.runs.evaluation import dices_votes
from dices_cli.store.datasets import Store


def models(data: Path, dataset: str, seed: int = 1) -> dict[str, pl.DataFrame]:
    """Noisy judges of every kind of prediction: a label with a score, a score alone, a
    distribution of No and Yes, and one of all three answers."""
    ratings = pl.read_parquet(data / dataset / "ratings.parquet")
    shares = (
        ratings.group_by("item_id")
        .agg(
            (pl.col("Q_overall") == "No").mean().alias("no"),
            (pl.col("Q_overall") == "Yes").mean().alias("yes"),
        )
        .sort("item_id")
    )
    rng = np.random.default_rng(seed)
    noisy = np.clip(shares["yes"].to_numpy() + rng.normal(0, 0.2, shares.height), 0.01, 0.99)
    unsure = np.clip(1 - shares["no"].to_numpy() - shares["yes"].to_numpy(), 0.01, 1)
    three = np.column_stack([1 - noisy, noisy, unsure])
    three /= three.sum(axis=1, keepdims=True)
    ids = shares["item_id"]
    return {
        "label+score": pl.DataFrame(
            {"item_id": ids, "label": np.where(noisy >= 0.4, "Yes", "No"), "score": noisy}
        ),
        "score": pl.DataFrame({"item_id": ids, "score": noisy}),
        "two": pl.DataFrame({"item_id": ids, "p_no": 1 - noisy, "p_yes": noisy}),
        "three": pl.DataFrame(
            {"item_id": ids, "p_no": three[:, 0], "p_yes": three[:, 1], "p_unsure": three[:, 2]}
        ),
    }


def loaded(
    data: Path, dataset: str, frame: pl.DataFrame, tmp_path: Path, by: tuple[str, ...]
) -> tuple[Votes, Predictions]:
    path = tmp_path / "predictions.csv"
    frame.write_csv(path)
    votes, read = dices_votes(Store(data), [dataset], RaterSelection(), by, str(path), None)
    return votes[0], read


@pytest.mark.parametrize("kind", ["label+score", "score", "two", "three", "score on 2/3"])
def test_the_tests_observed_difference_is_the_rows_difference(
    sample: Path, tmp_path: Path, kind: str
) -> None:
    """Also for a model that predicts some conversations only: its test once counted the
    others as divergences of -H(q) / 2 (a missing p read as no entropy)."""
    by = ("rater_race",)
    if kind == "score on 2/3":
        frame = models(sample, "350")["score"].filter(pl.int_range(pl.len()) % 3 != 0)
    else:
        frame = models(sample, "350")[kind]
    votes, read = loaded(sample, "350", frame, tmp_path, by)
    table = evaluate(votes, read, Settings(by=by, bootstrap=0, permutations=0)).table
    members = members_of(votes)
    (prediction,) = aligned_predictions(read.of("350"), votes)
    for reference in ("crowd", "crowd-share"):
        rows = [r for r in table.records() if r["reference"] == reference and r["rater_race"]]
        if kind != "label+score" and reference == "crowd":
            assert all(r["difference"] is not None for r in rows)
        observed = permuted_differences(
            members, members.group[None, :], [prediction], [reference], "exclude", 0.5
        )[reference][0, 0]
        assert len(rows) == len(observed) == 5
        for row, value in zip(rows, observed, strict=True):
            assert math.isclose(row["difference"], value, rel_tol=1e-12, abs_tol=1e-12)


def test_the_crowd_share_test_does_not_depend_on_its_batches(
    sample: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The relabellings' counts, and the crowd-share test's gathers from its table of held
    cells, in batches of any size give the same differences to the bit."""
    from dices_cli.evaluate import groups
    from dices_cli.metrics.permutation import shuffled_labellings

    by = ("rater_race",)
    frame = models(sample, "350")["score"].filter(pl.int_range(pl.len()) % 3 != 0)
    votes, read = loaded(sample, "350", frame, tmp_path, by)
    members = members_of(votes)
    labellings = shuffled_labellings(members.group, 23, seed=5)
    (prediction,) = aligned_predictions(read.of("350"), votes)

    def differences() -> np.ndarray:
        both = ["crowd", "crowd-share"]
        permuted = permuted_differences(members, labellings, [prediction], both, "exclude", 0.5)
        return np.stack([permuted[reference] for reference in both])

    whole = differences()
    cells = members.groups * members.answers[0].size
    monkeypatch.setattr(groups, "BATCH_CELLS", 4 * cells)
    monkeypatch.setattr(groups, "GATHER_CELLS", 3 * members.groups * votes.conversations)
    assert np.array_equal(differences(), whole, equal_nan=True)
    assert not np.isnan(whole).any()


def test_p_values_count_the_observed_labelling_and_are_never_zero(
    sample: Path, tmp_path: Path
) -> None:
    by = ("rater_race",)
    votes, read = loaded(sample, "350", models(sample, "350")["label+score"], tmp_path, by)
    table = evaluate(votes, read, Settings(by=by, bootstrap=0, permutations=19)).table
    p_values = [r["p_value"] for r in table.records() if r["rater_race"]]
    assert len(p_values) == 10
    # Two-sided: 2 * min(k + 1, l + 1) / (N + 1), so a multiple of 0.1 from 0.1 up.
    assert all(0.1 <= p <= 1 and math.isclose(p * 10, round(p * 10)) for p in p_values)
    nulls = [r["difference_null"] for r in table.records() if r["rater_race"]]
    assert all(value is not None for value in nulls)


@pytest.mark.slow  # 40 shuffles, each a full evaluation: a calibration
@pytest.mark.parametrize("dataset", ["350", "990"])
def test_group_tests_hold_their_level_under_shuffled_demographics(
    sample: Path, tmp_path: Path, dataset: str
) -> None:
    """Under the null, p < 0.05 in at most about 5% of group rows: the share over 40
    shuffles of the raters' groups stays within the 99.9% binomial bound of 5%. (The tests
    do not depend on the rows' intervals: those of the conversations alone, the cheaper.)"""
    by = ("rater_race",)
    votes, read = loaded(sample, dataset, models(sample, dataset)["label+score"], tmp_path, by)
    rng = np.random.default_rng(7)
    p_values = []
    for shuffle in range(40):
        null_votes = shuffled_groups(votes, rng)
        settings = Settings(
            by=by, bootstrap=0, permutations=199, seed=shuffle, interval="conversations"
        )
        table = evaluate(null_votes, read, settings).table
        p_values += [r["p_value"] for r in table.records() if r["rater_race"] and r["p_value"]]
        if shuffle == 0:  # the default intervals give the same tests
            clustered = evaluate(null_votes, read, replace(settings, interval="clustered"))
            assert [r["p_value"] for r in clustered.table.records()] == [
                r["p_value"] for r in table.records()
            ]
    tests = len(p_values)
    rejected = sum(p < 0.05 for p in p_values)
    assert tests >= 300
    assert rejected <= binom.ppf(0.999, tests, 0.05), (rejected, tests)
    assert min(p_values) > 0

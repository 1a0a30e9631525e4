"""`dices evaluate -d NAME` of a declared dataset: LeWiDi's measures of soft, hard and
per-rater predictions, each equal to an independent implementation (scipy, plain Python
over the raw file) to 1e-9, for the pool and per group; every refusal with its exit code
and message."""

from __future__ import annotations

import csv
import io
import math
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import wasserstein_distance
from typer.testing import CliRunner

from dices_cli.cli.main import app
from dices_cli.metrics import soft_labels
from tests.drivers.ordinal import OrdinalRatings, ingest_dataset, ordinal_ratings

NAME = "ordinal_toy"
VALUES = ["1", "2", "3", "4", "5"]
HELP = "Try 'dices evaluate -h' for help.\n"


pytestmark = pytest.mark.usefixtures("registry_as_it_was")


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("scale-evaluation")
    toy: OrdinalRatings = ordinal_ratings((3, 5), items=12, per_rater=8, seed=3)
    ingest_dataset(toy, folder, NAME)
    return folder


@pytest.fixture(scope="module")
def ratings(folder: Path) -> list[dict[str, str]]:
    with open(folder / f"{NAME}.csv", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def evaluate(folder: Path, text: str, *args: str) -> tuple[int, str, str]:
    path = folder / "predictions.csv"
    path.write_text(text, encoding="utf-8")
    result = CliRunner().invoke(
        app, ["evaluate", str(path), "-d", NAME, "--data", str(folder / "data"), "-f", "csv", *args]
    )
    return result.exit_code, result.stdout, result.stderr


def rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def crowd(ratings: list[dict[str, str]], group: str | None = None) -> dict[str, list[float]]:
    """Each item's distribution of score among the raters of `group` (all: None)."""
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for r in ratings:
        if group is None or r["grp"] == group:
            counts[r["item_id"]][r["score"]] += 1
    return {item: [c[v] / sum(c.values()) for v in VALUES] for item, c in sorted(counts.items())}


def distributions(seed: int, items: list[str]) -> dict[str, list[float]]:
    rng = np.random.default_rng(seed)
    shares = rng.dirichlet(np.ones(len(VALUES)), size=len(items))
    shares[0] = [0.0, 0.0, 0.5, 0.5, 0.0]  # zero shares: the cross-entropy floor
    return {item: [float(x) for x in row] for item, row in zip(items, shares, strict=True)}


def soft_file(predicted: dict[str, list[float]]) -> str:
    lines = ["item_id," + ",".join(f"p_{v}" for v in VALUES)]
    lines += [f"{item}," + ",".join(repr(x) for x in p) for item, p in predicted.items()]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("group", [None, "g0", "g1"])
def test_soft_measures_equal_an_independent_implementation(
    folder: Path, ratings: list[dict[str, str]], group: str | None
) -> None:
    items = sorted({r["item_id"] for r in ratings})
    predicted = distributions(7, items)
    code, out, err = evaluate(folder, soft_file(predicted), "--by", "grp")
    assert code == 0, err
    [row] = [r for r in rows(out) if r["group"] == (group or "all raters")]
    truth = crowd(ratings, group)
    pairs = [(truth[i], predicted[i]) for i in truth]
    entropy = sum(
        -sum(t * math.log(max(p, 1e-12)) for t, p in zip(tt, pp, strict=True)) for tt, pp in pairs
    ) / len(pairs)
    l1 = sum(sum(abs(t - p) for t, p in zip(tt, pp, strict=True)) for tt, pp in pairs) / len(pairs)
    places = [1, 2, 3, 4, 5]
    emd = sum(wasserstein_distance(places, places, tt, pp) for tt, pp in pairs) / len(pairs)
    assert (row["prediction"], int(row["items"])) == ("soft", len(pairs))
    assert float(row["cross_entropy"]) == pytest.approx(entropy, abs=1e-9)
    assert float(row["manhattan"]) == pytest.approx(l1, abs=1e-9)
    assert float(row["wasserstein"]) == pytest.approx(emd, abs=1e-9)
    assert (row["error_rate"], row["absolute_distance"]) == ("", "")


def test_per_rater_and_hard_predictions(folder: Path, ratings: list[dict[str, str]]) -> None:
    rng = np.random.default_rng(11)
    guesses = {(r["item_id"], r["rater_id"]): str(rng.integers(1, 6)) for r in ratings}
    lines = ["model,item_id,rater_id,label"]
    lines += [f"each,{item},{rater},{value}" for (item, rater), value in guesses.items()]
    lines += [f"hard,{item},,{float(1 + k % 5)}" for k, item in enumerate(sorted(crowd(ratings)))]
    code, out, err = evaluate(folder, "\n".join(lines) + "\n")
    assert code == 0, err
    each, hard = rows(out)
    by_item: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for r in ratings:
        by_item[r["item_id"]].append((int(guesses[r["item_id"], r["rater_id"]]), int(r["score"])))
    error = sum(sum(g != s for g, s in v) / len(v) for v in by_item.values()) / len(by_item)
    distance = sum(sum(abs(g - s) / 4 for g, s in v) / len(v) for v in by_item.values())
    assert (each["prediction"], int(each["ratings"])) == ("per-rater", len(ratings))
    assert float(each["error_rate"]) == pytest.approx(error, abs=1e-9)
    assert float(each["absolute_distance"]) == pytest.approx(distance / len(by_item), abs=1e-9)
    truth = crowd(ratings)
    onehots = {i: [float(v == 1 + k % 5) for v in range(1, 6)] for k, i in enumerate(truth)}
    l1 = sum(sum(abs(t - p) for t, p in zip(truth[i], onehots[i], strict=True)) for i in truth)
    assert hard["prediction"] == "hard" and hard["cross_entropy"] == ""
    assert float(hard["manhattan"]) == pytest.approx(l1 / len(truth), abs=1e-9)


@given(
    st.lists(
        st.tuples(
            st.lists(st.floats(0, 1), min_size=4, max_size=4).filter(lambda x: sum(x) > 0.01),
            st.lists(st.floats(0, 1), min_size=4, max_size=4).filter(lambda x: sum(x) > 0.01),
        ),
        min_size=1,
        max_size=6,
    ),
    st.lists(st.floats(-5, 5), min_size=4, max_size=4, unique=True),
)
@settings(max_examples=60, deadline=None)
def test_wasserstein_is_scipys(
    pairs: list[tuple[list[float], list[float]]], places: list[float]
) -> None:
    order = np.sort(np.array(places))
    truth = np.array([np.array(t) / sum(t) for t, _ in pairs])
    predicted = np.array([np.array(p) / sum(p) for _, p in pairs])
    expected = np.mean(
        [wasserstein_distance(order, order, t, p) for t, p in zip(truth, predicted, strict=True)]
    )
    assert soft_labels.wasserstein(truth, predicted, order) == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize(
    ("text", "args", "code", "message"),
    [
        (
            "item_id,label\ni999,7\n",
            (),
            1,
            "line 2, column item_id: not an item of the dataset [unknown-item]\n"
            "  line 2, column label: not a value of the label's scale (1, 2, 3, 4, 5) "
            "[not-in-enum]\n",
        ),
        ("item_id,p_1,p_2\ni000,0.5,0.5\n", (), 1, "a distribution needs every p_ column"),
        ("item_id,p_1,p_2,p_3,p_4,p_5\ni000,0.5,0.5,0.5,0,0\n", (), 1, "sum to 1.5, not 1"),
        ("item_id,rater_id,label\ni000,r000,3\ni000,r000,4\n", (), 1, "a second prediction"),
        (
            "item_id,label\ni000,3\n",
            ("--against", "gold"),
            2,
            "Error: --against is for DICES; Ordinal toy's predictions are scored by LeWiDi's "
            f"measures against its raters\n{HELP}",
        ),
        (
            "item_id,label\ni000,3\n",
            ("--label", "size"),
            2,
            f"Error: Ordinal toy has no label 'size'; its labels are: score, colour\n{HELP}",
        ),
        (
            "item_id,label\ni000,3\n",
            ("--by", "age"),
            2,
            "Error: Ordinal toy has no rater attribute 'age' for --by; its raters' attributes "
            f"are: grp, half\n{HELP}",
        ),
    ],
)
def test_refusals(folder: Path, text: str, args: tuple[str, ...], code: int, message: str) -> None:
    got, out, err = evaluate(folder, text, *args)
    assert (got, out) == (code, "")
    assert message in err
    if code == 2:
        assert err == message


def test_label_is_for_declared_datasets(folder: Path) -> None:
    path = folder / "dices.csv"
    path.write_text("item_id,label\n1,Yes\n", encoding="utf-8")
    result = CliRunner().invoke(
        app, ["evaluate", str(path), "--label", "score", "--data", str(folder / "data")]
    )
    assert result.exit_code == 2
    assert "--label scores a declared dataset's label; DICES's is Q_overall" in result.stderr

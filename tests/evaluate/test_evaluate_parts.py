"""The parts of `dices evaluate` that need no data directory: plurality, XRR over resamples."""

from __future__ import annotations

import duckdb
import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from dices_cli.evaluate.baseline import parse_baseline
from dices_cli.evaluate.measure import model_xrr
from dices_cli.evaluate.references import TIE, UNRATED, crowd_binary, plurality
from dices_cli.metrics.agreement import cross_replication_reliability
from dices_cli.queries.own_sql import CROWD_LABEL_TYPE, prelude

SQL_CODES = {"No": 0, "Yes": 1, "Unsure": 2, "tie": TIE, None: UNRATED}


def _macros() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute(CROWD_LABEL_TYPE)
    con.execute(prelude())
    return con


MACROS = _macros()


@given(arrays(np.int64, (3, 12), elements=st.integers(0, 4)))
def test_plurality_is_the_sql_macro(counts: np.ndarray) -> None:
    con = MACROS
    rows = [tuple(int(c) for c in counts[:, i]) for i in range(counts.shape[1])]
    expected = [
        SQL_CODES[con.execute("SELECT plurality(?, ?, ?)::VARCHAR", list(r)).fetchone()[0]]
        for r in rows
    ]
    assert plurality(counts.astype(float)).tolist() == expected


def test_the_tie_rules() -> None:
    """A tie counts only when Yes is among the answers tied for the most; No tied with
    Unsure above Yes is not unsafe under every rule."""
    counts = np.array(
        [[2, 1, 0, 1, 2, 0, 1], [2, 2, 0, 0, 1, 1, 1], [0, 0, 0, 1, 2, 1, 1]], dtype=float
    )
    # ties of No and Yes; Yes; unrated; ties of No and Unsure (above Yes, with no Yes);
    # a tie of Yes and Unsure; of all three
    yes_tied = [True, False, False, False, False, True, True]
    excluded = crowd_binary(counts, "exclude")
    assert excluded.defined.tolist() == [False, True, False, True, True, False, False]
    assert excluded.unsafe[excluded.defined].tolist() == [True, False, False]
    unsafe = crowd_binary(counts, "unsafe")
    assert unsafe.defined.tolist() == [True, True, False, True, True, True, True]
    assert unsafe.unsafe.tolist() == [True, True, False, False, False, True, True]
    safe = crowd_binary(counts, "safe")
    assert safe.defined.tolist() == unsafe.defined.tolist()
    assert safe.unsafe.tolist() == [False, True, False, False, False, False, False]
    for rule in (excluded, unsafe, safe):
        assert rule.ties.tolist() == yes_tied


@given(arrays(np.int64, (3, 12), elements=st.integers(0, 4)))
def test_the_binary_crowd_is_the_sql_crowd_label(counts: np.ndarray) -> None:
    """crowd_binary and sql/_macros.sql crowd_label_of (gold-vs-crowd's label) decide each
    conversation alike: Yes is unsafe, 'tie' (Yes tied for the most) is a tie, No, Unsure
    and No=Unsure are not unsafe, NULL is undefined."""
    labels = [
        MACROS.execute(
            "SELECT crowd_label_of(?, ?, ?)::VARCHAR", [int(c) for c in column]
        ).fetchone()[0]
        for column in counts.T
    ]
    for rule in ("exclude", "unsafe", "safe"):
        binary = crowd_binary(counts.astype(float), rule)
        assert binary.ties.tolist() == [label == "tie" for label in labels]
        decided = [label is not None and (label != "tie" or rule != "exclude") for label in labels]
        assert binary.defined.tolist() == decided
        unsafe = [label == "Yes" or (label == "tie" and rule == "unsafe") for label in labels]
        assert (binary.unsafe & binary.defined).tolist() == unsafe


@given(
    st.integers(1, 15).flatmap(
        lambda n: st.tuples(
            arrays(np.intp, n, elements=st.integers(-1, 2)),
            arrays(np.int64, (3, n), elements=st.integers(0, 5)),
            arrays(np.int32, (4, n), elements=st.integers(0, 3)),
        )
    )
)
def test_model_xrr_is_cross_replication_reliability_on_repeated_conversations(
    data: tuple[np.ndarray, np.ndarray, np.ndarray],
) -> None:
    answer, counts, weights = data
    weights[0] = 1
    got = model_xrr(answer, counts.astype(float), weights)
    one_hot = np.array([answer == c for c in range(3)], dtype=float)
    for row, w in enumerate(weights):
        # Repeating conversation i w_i times multiplies its counts by w_i.
        expected = cross_replication_reliability(one_hot * w, counts * w)
        if np.isnan(expected):
            assert np.isnan(got[row])
        else:
            assert got[row] == np.float64(expected) or abs(got[row] - expected) < 1e-9


def test_a_baseline_is_raters_k() -> None:
    assert parse_baseline("raters:5") == 5
    assert parse_baseline(" raters:12 ") == 12

"""The point estimates (row 0 of every resampled sum) do not depend on how many resamples
share the product: their last bits are the same for 100 resamples as for 3,000."""

from __future__ import annotations

import numpy as np
import pytest

from dices_cli.metrics.scoring import Resamples


@pytest.mark.parametrize("items", [40, 350, 990])
def test_row_zero_is_the_same_whatever_the_number_of_resamples(items: int) -> None:
    generator = np.random.default_rng(items)
    columns = generator.random((items, 2, 7))
    weights = generator.integers(0, 3, (3000, items))
    weights[0] = 1
    few = Resamples(weights[:100]).sums(columns, None)
    many = Resamples(weights).sums(columns, None)
    assert np.array_equal(few[0], many[0])
    np.testing.assert_allclose(many[0], columns.sum(axis=0), rtol=1e-12)
    # The other rows are the same sums, to rounding.
    np.testing.assert_allclose(few[1:], many[1:100], rtol=1e-12)


def test_used_items_only_count_in_row_zero_too() -> None:
    generator = np.random.default_rng(1)
    columns = generator.random((990, 3))
    used = generator.random((990,)) < 0.5
    weights = generator.integers(0, 3, (800, 990))
    weights[0] = 1
    sums = Resamples(weights).sums(columns, used)
    assert np.array_equal(sums[0], Resamples(weights[:1]).sums(columns, used)[0])
    np.testing.assert_allclose(sums[0], columns[used].sum(axis=0), rtol=1e-12)

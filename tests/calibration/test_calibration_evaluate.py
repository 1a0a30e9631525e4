"""Calibration of `dices evaluate`'s group intervals when a group differs: the 20-rater group
of the crossed random-effects model (tests/drivers/crossed.py) with its logit shifted by
0.6. Each interval should hold the figure's expectation for a group of its size in as many
datasets as a 95% interval does, per group size, the shifted group's jsd difference
included. (No group shifted:
tests/calibration/test_calibration_groups.py. Full run, both scenarios, and the table in
docs/metrics.md: `python bench/calibration_evaluate.py`.)
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from drivers.evaluate_truth import FIGURES, coverage, true_figures
from scipy.stats import binom

pytestmark = pytest.mark.slow  # calibration: many simulated data sets per check

SHIFTED = (2, 0.6)  # the 20-rater group, as the power figure


def test_evaluate_group_intervals_hold_a_known_truth_when_a_group_differs(
    tmp_path: Path,
) -> None:
    simulations = 30
    truth = true_figures(800, seed=1000, shift=SHIFTED)
    covered = coverage(simulations, 1000, seed=0, folder=tmp_path, truth=truth, shift=SHIFTED)
    low = binom.ppf(0.0005, simulations, 0.95) / simulations
    assert not np.isnan(covered).any()
    assert (covered >= low).all(), covered
    # The truth of the shifted group's figures is not the others': the shift shows.
    assert truth[SHIFTED[0], FIGURES.index("jsd")] > truth[SHIFTED[0] + 1, FIGURES.index("jsd")]

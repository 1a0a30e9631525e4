"""A predictions file of several kinds of model for a dataset, as a study brings them: labels
only, a score only, labels and a score, a predicted distribution of three answers, and a
judge whose labels are flipped (Yes for safe). Used by the tests that every interval holds
its estimate (tests/evaluate/test_evaluate_intervals.py) and by bench/evaluate.py.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

MODELS = ("labels", "score-only", "labels-and-score", "distribution", "flipped")


def crowd_share(data: Path, dataset: str) -> pd.Series:
    """The share of Yes of each conversation over all its ratings, by item_id."""
    ratings = pd.read_parquet(data / dataset / "ratings.parquet")
    return (ratings["Q_overall"].astype(str) == "Yes").groupby(ratings["item_id"]).mean()


def write_predictions(data: Path, dataset: str, path: Path, seed: int = 0) -> Path:
    """MODELS' predictions of every conversation of `dataset` (an ingested data directory),
    each a noisy copy of the crowd's share of Yes, written to the CSV `path`."""
    share = crowd_share(data, dataset).sort_index()
    rng = np.random.default_rng(seed)
    n = len(share)
    frames = []
    for number, model in enumerate(MODELS):
        noise = 0.15 + 0.1 * number
        score = np.clip(share.to_numpy() * (1 - noise) + rng.random(n) * noise, 0, 1).round(6)
        label = np.where(score >= 0.5, "Yes", "No")
        frame = pd.DataFrame({"model": model, "item_id": share.index})
        if model in ("labels", "labels-and-score"):
            frame["label"] = label
        if model == "flipped":
            frame["label"] = np.where(score >= 0.5, "No", "Yes")
        if model in ("score-only", "labels-and-score"):
            frame["score"] = score
        if model == "distribution":
            unsure = (0.1 * rng.random(n)).round(6)
            frame["p_yes"] = (score * (1 - unsure)).round(6)
            frame["p_unsure"] = unsure
            frame["p_no"] = (1 - frame["p_yes"] - unsure).round(6)
        frames.append(frame)
    pd.concat(frames).to_csv(path, index=False)
    return path

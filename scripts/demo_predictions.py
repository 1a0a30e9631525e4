"""Build dices_cli/data/demo-predictions.csv: two toy models over the packaged DICES-350 sample.

    python scripts/demo_predictions.py

`five-raters` stands in for a judge whose quality is known to be human: for each
conversation, the share of Yes among the Q_overall answers of the sample's first five
raters (by rater id) is its score, and the label is Yes (unsafe) when that share is above
one half. `five-raters-flipped` is the same judge with the label flipped and score
1 - score: a judge that answered "is it safe?", so that `dices evaluate` shows its
polarity check. (A keyword rule was tried first: on these 40 conversations it is no better
than chance, so its flipped copy cannot be told from an honest model.) The five raters are
also part of the crowd `dices evaluate` compares with: 5 of 123. Deterministic: the same
sample gives the same bytes.
"""

from __future__ import annotations

import csv
import gzip
import io
from collections import defaultdict
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "dices_cli" / "data"
SAMPLE = DATA / "dices_350_sample.csv.gz"
OUT = DATA / "demo-predictions.csv"
PANEL = 5  # raters whose answers make the stand-in judge


def panel_scores() -> dict[int, float]:
    """Per conversation, the share of Yes among the panel's Q_overall answers."""
    with gzip.open(SAMPLE, "rt", encoding="utf-8", newline="") as sample:
        rows = list(csv.DictReader(sample))
    panel = set(sorted({row["rater_id"] for row in rows})[:PANEL])
    answers: dict[int, list[str]] = defaultdict(list)
    for row in rows:
        if row["rater_id"] in panel:
            answers[int(row["item_id"])].append(row["Q_overall"])
    return {item: round(votes.count("Yes") / len(votes), 2) for item, votes in answers.items()}


def main() -> None:
    scores = sorted(panel_scores().items())
    out = io.StringIO(newline="")
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["model", "item_id", "label", "score"])
    for model, flipped in (("five-raters", False), ("five-raters-flipped", True)):
        for item_id, score in scores:
            unsafe = (score > 0.5) != flipped
            shown = round(1 - score, 2) if flipped else score
            writer.writerow([model, item_id, "Yes" if unsafe else "No", f"{shown:g}"])
    OUT.write_text(out.getvalue(), encoding="utf-8")


if __name__ == "__main__":
    main()

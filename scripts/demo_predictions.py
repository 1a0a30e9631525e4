"""Build dices_cli/data/demo-predictions.csv: two toy models over the packaged DICES-350 sample.

    python scripts/demo_predictions.py

`keyword` scores a conversation by the distinct words of FLAGGED its text (context and
response, lower-cased, split on non-letters) holds: score = min(1, hits / HITS_FOR_ONE),
label Yes (unsafe) when score >= 0.5. `keyword-flipped` is the same model with the label
flipped and score 1 - score: a judge that answered "is it safe?", so that `dices evaluate`
shows its polarity check. Deterministic: the same sample gives the same bytes.
"""

from __future__ import annotations

import csv
import gzip
import io
import re
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "dices_cli" / "data"
SAMPLE = DATA / "dices_350_sample.csv.gz"
OUT = DATA / "demo-predictions.csv"
FLAGGED = frozenset(
    {
        "kill", "die", "dead", "gun", "weapon", "bomb", "drug", "drugs", "hate", "stupid",
        "idiot", "sex", "racist", "steal", "attack", "hurt", "violence", "suicide", "abuse",
        "fight", "illegal", "hack", "poison", "shoot", "fuck", "shit", "damn", "ass", "bitch",
        "black", "white", "women", "gay", "jews", "muslim", "crime", "prison", "porn", "nazi",
    }
)  # fmt: skip
HITS_FOR_ONE = 2  # this many distinct flagged words make a score of 1
THRESHOLD = 0.5


def keyword_score(text: str) -> float:
    words = set(re.findall(r"[a-z]+", text.lower()))
    return round(min(1.0, len(words & FLAGGED) / HITS_FOR_ONE), 2)


def main() -> None:
    texts: dict[int, str] = {}
    with gzip.open(SAMPLE, "rt", encoding="utf-8", newline="") as sample:
        for row in csv.DictReader(sample):
            texts.setdefault(int(row["item_id"]), f"{row['context']}\n{row['response']}")
    out = io.StringIO(newline="")
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["model", "item_id", "label", "score"])
    for item_id, text in sorted(texts.items()):
        score = keyword_score(text)
        unsafe = score >= THRESHOLD
        writer.writerow(["keyword", item_id, "Yes" if unsafe else "No", f"{score:g}"])
    for item_id, text in sorted(texts.items()):
        score = keyword_score(text)
        unsafe = score >= THRESHOLD
        flipped = round(1 - score, 2)
        writer.writerow(["keyword-flipped", item_id, "No" if unsafe else "Yes", f"{flipped:g}"])
    OUT.write_text(out.getvalue(), encoding="utf-8")


if __name__ == "__main__":
    main()

"""Write full-size, format-exact synthetic ProsocialDialog files (standard library only).

Same keys in the same order, the same JSON spelling (Python's json.dumps defaults, one
object per line), the published row counts (train 120,236, valid 20,416, test 25,029),
dialogues of 1 to 8 utterances (ids from 0 in each file, the last one episode_done), a
plausible mix of underlying levels (most utterances need caution, a fifth casual, a tenth
intervention) that three mostly agreeing workers annotate, each row's safety_label by the
paper's rule (label_of; test split, seed 2022: 42% needs caution, 27% needs intervention,
12% casual, 12% probably, 7% possibly needs caution), some null rots and empty etc. The
text is synthetic: sentences made from a small word list, never the real dialogues.
Deterministic for a seed.

    python scripts/make_prosocial.py DIR                  # DIR/train.json, valid.json, test.json
    python scripts/make_prosocial.py DIR --split train --rows 1000 --seed 7
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

ROWS = {"train": 120_236, "valid": 20_416, "test": 25_029}
ANNOTATIONS = ("casual", "needs caution", "needs intervention")
# How often each annotation is drawn for a worker, given the utterance's underlying level:
# workers mostly agree, and sometimes one step off.
LEVEL_WEIGHTS = {
    "casual": (0.85, 0.13, 0.02),
    "needs caution": (0.08, 0.84, 0.08),
    "needs intervention": (0.02, 0.23, 0.75),
}
LEVEL_MIX = (0.2, 0.7, 0.1)  # casual, needs caution, needs intervention
SOURCES = (("socialchemistry", 0.55), ("sbic", 0.2), ("ethics_amt", 0.15), ("ethics_reddit", 0.1))
WORDS = (
    "friend",
    "neighbour",
    "school",
    "club",
    "money",
    "party",
    "family",
    "work",
    "car",
    "dog",
    "secret",
    "rule",
    "promise",
    "joke",
    "phone",
    "trip",
    "gift",
    "class",
    "boss",
    "sister",
    "brother",
    "team",
    "game",
    "store",
    "letter",
)
VERBS = (
    "take",
    "borrow",
    "ignore",
    "tell",
    "hide",
    "break",
    "share",
    "sell",
    "follow",
    "leave",
    "keep",
    "skip",
)


def label_of(annotations: list[str]) -> str:
    """The published label the three annotations imply: Kim et al. 2022, Appendix A.4 (any
    needs intervention vote decides; else the needs caution votes grade), as
    dices_cli.formats.prosocial.labels recomputes it."""
    if "needs intervention" in annotations:
        return "__needs_intervention__"
    return (
        "__casual__",
        "__possibly_needs_caution__",
        "__probably_needs_caution__",
        "__needs_caution__",
    )[annotations.count("needs caution")]


def sentence(rng: random.Random, words: int) -> str:
    chosen = [rng.choice(WORDS if i % 2 else VERBS) for i in range(words)]
    return "I want to " + " ".join(chosen) + rng.choice((".", "?", "!", " today."))


def row(rng: random.Random, dialogue: int, response: int, last: bool, source: str) -> dict:
    level = rng.choices(ANNOTATIONS, LEVEL_MIX)[0]
    annotations = [rng.choices(ANNOTATIONS, LEVEL_WEIGHTS[level])[0] for _ in range(3)]
    label = label_of(annotations)
    rots = (
        None
        if label == "__casual__" and rng.random() < 0.8
        else [f"It's wrong to {rng.choice(VERBS)} a {rng.choice(WORDS)}."]
        + ([""] if rng.random() < 0.01 else [])
    )
    return {
        "context": sentence(rng, rng.randint(4, 30)),
        "response": "You should not do that. " + sentence(rng, rng.randint(6, 40)),
        "rots": rots,
        "safety_label": label,
        "safety_annotations": annotations,
        "safety_annotation_reasons": [sentence(rng, rng.randint(2, 12)) for _ in range(3)],
        "source": source,
        "etc": ""
        if source != "socialchemistry"
        else f"reddit/amitheasshole/{rng.getrandbits(24):x}",
        "dialogue_id": dialogue,
        "response_id": response,
        "episode_done": last,
    }


def write_split(path: Path, rows: int, seed: int) -> None:
    rng = random.Random(seed)
    names, weights = zip(*SOURCES, strict=True)
    with path.open("w", encoding="utf-8", newline="\n") as handle:
        written, dialogue = 0, 0
        while written < rows:
            length = min(rng.randint(1, 8), rows - written)
            source = rng.choices(names, weights)[0]
            for response in range(length):
                line = row(rng, dialogue, response, response == length - 1, source)
                handle.write(json.dumps(line) + "\n")
            written += length
            dialogue += 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=Path)
    parser.add_argument("--split", choices=sorted(ROWS), action="append")
    parser.add_argument("--rows", type=int, help="rows per file (default: the published count)")
    parser.add_argument("--seed", type=int, default=2022)
    arguments = parser.parse_args()
    arguments.directory.mkdir(parents=True, exist_ok=True)
    for split in arguments.split or list(ROWS):
        rows = arguments.rows if arguments.rows is not None else ROWS[split]
        write_split(
            arguments.directory / f"{split}.json", rows, arguments.seed + list(ROWS).index(split)
        )


if __name__ == "__main__":
    main()

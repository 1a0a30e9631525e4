"""The ProsocialDialog family (Kim et al., EMNLP 2022; CC BY 4.0): three JSON Lines files.

Each line is one utterance of a dialogue: the potentially unsafe `context`, the prosocial
`response`, its rules-of-thumb, the published `safety_label` and the three crowd workers'
`safety_annotations` with their reasons. There are no rater ids and no demographics: the
three annotations are three slots, not three identified people.
"""

from __future__ import annotations

import json

from dices_cli.families.family import Family, SourceFile

# The stored dataset's name, in DIR and for --dataset.
MEMBER = "prosocial"

# No full commit id of the HuggingFace dataset repository could be confirmed, so its main
# branch; its files have no published checksums either (each gets a warning with its own),
# so they have this one source: another could not be checked against it.
BASE = "https://huggingface.co/datasets/allenai/prosocial-dialog/resolve/main/"

SPLITS = ("train", "valid", "test")  # a file's split is its name's stem

# The published label, from the least to the most severe (the dataset card's order).
SAFETY_LABELS = (
    "__casual__",
    "__possibly_needs_caution__",
    "__probably_needs_caution__",
    "__needs_caution__",
    "__needs_intervention__",
)
# One worker's annotation, from the least to the most severe.
ANNOTATIONS = ("casual", "needs caution", "needs intervention")
SOURCES = ("socialchemistry", "sbic", "ethics_amt", "ethics_reddit")
ANNOTATORS_PER_ITEM = 3

# Every key of a line, in the files' order, with the JSON type its value must have: a tuple
# lists the allowed types (None: JSON null).
FIELDS: dict[str, tuple[type | None, ...]] = {
    "context": (str,),
    "response": (str,),
    "rots": (list, None),  # of str; may be null or hold empty strings
    "safety_label": (str,),
    "safety_annotations": (list,),  # three of ANNOTATIONS
    "safety_annotation_reasons": (list,),  # three str, in the annotations' order
    "source": (str,),
    "etc": (str, None),
    "dialogue_id": (int,),
    "response_id": (int,),
    "episode_done": (bool,),
}
# The limits of the stored integer types (dialogue_id BIGINT, response_id INTEGER).
ID_LIMITS = {"dialogue_id": 2**63, "response_id": 2**31}
ENUM_FIELDS: dict[str, tuple[str, ...]] = {
    "safety_label": SAFETY_LABELS,
    "source": SOURCES,
}


def recognises(first: bytes) -> bool:
    """True when `first`, a file's first bytes (those a CSV header is read from), begin
    with a line that is a JSON object with ProsocialDialog's keys."""
    try:
        line = json.loads(first.split(b"\n", 1)[0])
    except (ValueError, RecursionError):  # CSV, not UTF-8, cut short by `first`, too deep
        return False
    return isinstance(line, dict) and {"safety_annotations", "dialogue_id", "context"} <= set(line)


def _split_file(name: str, rows: int, description: str) -> SourceFile:
    return SourceFile(name, MEMBER, rows, description, (BASE,), name, folder=MEMBER)


PROSOCIAL = Family(
    name=MEMBER,
    title="ProsocialDialog",
    members=(MEMBER,),
    files=(
        _split_file("train.json", 120_236, "the training split"),
        _split_file("valid.json", 20_416, "the validation split"),
        _split_file("test.json", 25_029, "the test split"),
    ),
    recognised_by=(
        "JSON Lines whose first object has the keys context, dialogue_id and "
        "safety_annotations; the split is the file name's stem (train, valid, test), or "
        "the split the ingest is given"
    ),
    recognises=recognises,
    validates="dices_cli.formats.prosocial.read:validate_split",
    ingests="dices_cli.formats.prosocial.ingest:ingest_prosocial",
    tables=("items", "ratings"),
    entities={
        "items": "one utterance (context and response) of a dialogue, in its split",
        "ratings": "one of the three crowd annotations of an utterance, with its reason",
    },
    enums={
        "split": SPLITS,
        "safety_label": SAFETY_LABELS,
        "safety_label_recomputed": SAFETY_LABELS,
        "source": SOURCES,
        "annotation": ANNOTATIONS,
    },
    published={MEMBER: {"items": 120_236 + 20_416 + 25_029}},
    manifest={
        "sources": list,  # one {"split", "name", "path", "size", "sha256", ...} per file
        "counts": {"items": int, "dialogues": int, "label_mismatches": int},
    },
    queries=("overview", "item-distribution", "agreement", "source-breakdown", "label-check"),
    has_raters=False,
    has_demographics=False,
    has_gold=False,
    splits=SPLITS,
)

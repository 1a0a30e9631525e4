"""The DICES family: DICES-350 and DICES-990, two wide CSV files of one shape.

The columns, enums and published counts live in `dices_cli.families.schema`, which the DICES path
reads; this declaration points at them rather than repeating them.
"""

from __future__ import annotations

from dices_cli.families.family import Family, SourceFile
from dices_cli.families.schema import DATASETS, Kind

REPOSITORY = "https://raw.githubusercontent.com/google-research-datasets/dices-dataset/"
# The commit that two independent citations of DICES-350 name with the published SHA-256.
# The newest snapshot of the repository seen here (to 2024-01-25) does not hold it, so it
# may be wrong; the checksum, not the address, decides which bytes are kept.
PINNED_COMMIT = "b5596d9edd585361967991a591abc7b11fb1f7a3"
# The last commit of that snapshot to change the data files ("Fixed formatting issue with
# rater_id", 2023-10-04).
DATA_COMMIT = "9c0eca5cda4d89ebbf380b831f70abfbb88d9306"
# Tried in this order; the branch last, as it may move on to other bytes.
BASES = tuple(f"{REPOSITORY}{ref}/" for ref in (PINNED_COMMIT, DATA_COMMIT, "main"))

DICES = Family(
    name="dices",
    title="DICES",
    members=tuple(DATASETS),
    files=(
        SourceFile(
            "diverse_safety_adversarial_dialog_350.csv",
            "350",
            DATASETS["350"].published.ratings,
            "DICES-350: one row per rating, with the rater's demographics and the experts' gold",
            BASES,
            "350/diverse_safety_adversarial_dialog_350.csv",
            size=31_143_485,
            sha256="63cb8620eb04e64957f9e45b1f7cb3d079c4eed8e8b28909f46e0b7038ce4301",
        ),
        SourceFile(
            "diverse_safety_adversarial_dialog_990.csv",
            "990",
            DATASETS["990"].published.ratings,
            "DICES-990: one row per rating, with the rater's demographics and locale",
            BASES,
            "990/diverse_safety_adversarial_dialog_990.csv",
            size=50_399_432,
            sha256="14332b6391cdee80383b765c734de3bebf6d8553141ee7d2f47ef0910a12fcf7",
        ),
    ),
    recognised_by="a CSV header with one release's columns (dices_cli.families.schema.detect)",
    recognises=None,  # every file no other family recognises: its checks say what is amiss
    validates="dices_cli.formats.validate:validate_dices",
    ingests="dices_cli.formats.dices.ingest:ingest_dices",
    tables=("items", "raters", "ratings"),
    entities={
        "items": "one conversation",
        "raters": "one rater and their demographics",
        "ratings": "one rater's answers for one conversation",
    },
    enums={
        column.name: column.values
        for dataset in DATASETS.values()
        for column in dataset.columns
        if column.kind is Kind.ENUM
    },
    published={
        name: {
            "conversations": dataset.published.conversations,
            "raters": dataset.published.raters,
            "ratings": dataset.published.ratings,
        }
        for name, dataset in DATASETS.items()
    },
    manifest={
        "source": {"name": str, "sha256": str},
        "counts": {"conversations": int, "raters": int},
        "header": list,
    },
    queries=(
        "agreement",
        "degree-of-harm",
        "gold-vs-crowd",
        "gold-vs-crowd-summary",
        "group-disagreement",
        "harm-types",
        "item-distribution",
        "overview",
        "qoverall-by-demographic",
        "rater-quality",
    ),
    has_raters=True,
    has_demographics=True,
    has_gold=True,  # DICES-350 only; DICES-990 has none (schema.Dataset.has_gold)
)

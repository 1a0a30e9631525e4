"""ProsocialDialog's stored tables, built from validated rows, and the way back to JSON Lines.

items    one row per utterance: item_id "{split}-{dialogue_id}-{response_id}", split,
         the ids, context, response, rots, the published and the recomputed safety
         label, source, etc, episode_done; in the order of the files as given
ratings  one row per annotation: item_id, annotator_slot (0-2, the position in the
         file's list), annotation, reason
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, BinaryIO

from dices_cli.families.prosocial import (
    ANNOTATIONS,
    ANNOTATORS_PER_ITEM,
    FIELDS,
    SAFETY_LABELS,
    SOURCES,
    SPLITS,
)
from dices_cli.formats.prosocial.labels import recomputed_label

if TYPE_CHECKING:
    import polars as pl

    from dices_cli.formats.prosocial.read import CheckedSplit
    from dices_cli.store.datasets import StoredDataset


def build_tables(checked: Sequence[CheckedSplit]) -> dict[str, pl.DataFrame]:
    """The items and ratings tables of the valid rows of `checked`, in that order."""
    import polars as pl

    rows = pl.concat(
        [one.frame.with_columns(split=pl.lit(one.split, pl.Enum(SPLITS))) for one in checked]
    )
    item_id = pl.format("{}-{}-{}", "split", "dialogue_id", "response_id").alias("item_id")
    label = pl.Enum(SAFETY_LABELS)
    items = rows.select(
        item_id,
        "split",
        "dialogue_id",
        pl.col("response_id").cast(pl.Int32),
        "context",
        "response",
        "rots",
        pl.col("safety_label").cast(label),
        recomputed_label(pl.col("safety_annotations")).alias("safety_label_recomputed"),
        pl.col("source").cast(pl.Enum(SOURCES)),
        "etc",
        "episode_done",
    )
    ratings = (
        rows.select(
            item_id,
            pl.lit(list(range(ANNOTATORS_PER_ITEM)), pl.List(pl.UInt8)).alias("annotator_slot"),
            pl.col("safety_annotations").alias("annotation"),
            pl.col("safety_annotation_reasons").alias("reason"),
        )
        .explode("annotator_slot", "annotation", "reason")
        .with_columns(pl.col("annotation").cast(pl.Enum(ANNOTATIONS)))
    )
    return {"items": items, "ratings": ratings}


def write_jsonl(stored: StoredDataset, handle: BinaryIO, split: str | None = None) -> int:
    """Write the stored rows back as the files' JSON Lines (of one split, or of all in the
    order they were ingested), key for key and byte for byte as the published files write
    them (Python's json.dumps defaults). Returns the number of lines."""
    import polars as pl
    import polars.selectors as cs

    items = stored.read("items")
    ratings = stored.read("ratings")
    if split is not None:
        items = items.filter(pl.col("split") == split)
    grouped = (
        ratings.sort("item_id", "annotator_slot", maintain_order=True)
        .group_by("item_id", maintain_order=True)
        .agg(
            pl.col("annotation").cast(pl.String).alias("safety_annotations"),
            pl.col("reason").alias("safety_annotation_reasons"),
        )
    )
    rows = items.with_columns(cs.enum().cast(pl.String)).join(
        grouped, on="item_id", how="left", maintain_order="left"
    )
    written = 0
    for row in rows.select(list(FIELDS)).iter_rows(named=True):
        handle.write(json.dumps(row).encode() + b"\n")
        written += 1
    return written


def manifest(checked: Sequence[CheckedSplit], tables: dict[str, pl.DataFrame]) -> dict[str, Any]:
    """The manifest of a ProsocialDialog version (its shape: `PROSOCIAL.manifest`)."""
    from datetime import UTC, datetime

    from dices_cli import __version__
    from dices_cli.families.schema import SCHEMA_VERSION
    from dices_cli.problems import WARNING_TYPES

    sources = []
    warnings: dict[str, int] = {}
    for one in checked:
        digest = one.source.digest()
        one.source.check_unchanged()  # the digest describes the bytes that were read
        path = one.source.path
        sources.append(
            {
                "split": one.split,
                "name": one.source.display_name,
                "path": None if path is None else str(path.resolve()),
                "size": digest.size,
                "sha256": digest.sha256,
                "rows_read": one.report.rows_read,
                "rows_rejected": one.report.rows_rejected,
            }
        )
        for kind, count in one.report.counts().items():
            if kind in WARNING_TYPES:
                warnings[kind] = warnings.get(kind, 0) + count
    items = tables["items"]
    return {
        "dataset": "prosocial",
        "title": "ProsocialDialog",
        "family": "prosocial",
        "sources": sources,
        "rows": {
            "read": sum(one.report.rows_read for one in checked),
            "written": items.height,
            "rejected": sum(one.report.rows_rejected for one in checked),
        },
        "counts": {
            "items": items.height,
            "dialogues": items.select("split", "dialogue_id").n_unique(),
            "ratings": tables["ratings"].height,
            "label_mismatches": sum(one.label_mismatches for one in checked),
        },
        "warnings": dict(sorted(warnings.items())),
        "schema_version": SCHEMA_VERSION,
        "tool_version": __version__,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
    }

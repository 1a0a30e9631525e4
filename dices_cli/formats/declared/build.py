"""A declared dataset's stored tables (items, raters, ratings) from its files as read.

Each label's cells are read by its scale: a missing code or an empty cell is null (and
counted); a value outside the scale is an error that rejects its rating; a numeric scale
is stored as integers (or floats when a value has a fraction), a scale of named values as
an Enum in the declared order. A label whose scale declares a positive class gets
LABEL_positive, the binary view (null where the label is). A rater's (an item's)
attributes are constant across its rows, else a warning and the first value is kept; a
second rating of an item by one rater is a warning (both are kept, as published).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from dices_cli.families.declaration import DatasetDeclaration, Scale
from dices_cli.formats.declared.read import ITEM, RATER, ROW, ReadFile
from dices_cli.problems import Problem, ProblemType, Severity, shortened

ITEM_SEPARATOR = "-"  # joins the columns of an item key of several ("train-12")


@dataclass
class Built:
    """The tables (a frame, or a Parquet file written already), and what a manifest and a
    rejects file need."""

    tables: dict[str, pl.DataFrame | Path]
    missing: dict[str, int]  # label -> ratings whose value is a missing code or empty
    rejected: dict[int, set[int]] = field(default_factory=dict)  # file index -> ROWs
    written: dict[str, int] = field(default_factory=dict)  # a table's file -> its rows
    repeated: int = 0  # ratings of an (item, rater) pair rated before: kept, and warned of

    def height(self, table: str) -> int:
        """The rows of `table`."""
        frame = self.tables[table]
        return frame.height if isinstance(frame, pl.DataFrame) else self.written[table]


def build(declared: DatasetDeclaration, files: Sequence[ReadFile]) -> Built:
    """Check every file's rows against `declared` (problems go to each file's report) and
    build the three tables of the rows that hold."""
    rejected: dict[int, set[int]] = {}
    ratings_parts, rater_parts, item_parts = [], [], []
    missing: dict[str, int] = dict.fromkeys(declared.labels, 0)
    for index, one in enumerate(files):
        if one.frame.is_empty():
            continue
        frame, bad = _keyed(one)
        spec = one.spec
        if spec.role == "ratings":
            labels, bad_labels = _labels(one, frame, declared.scales, missing)
            bad |= bad_labels
            answers = [pl.col(c).alias(n) for n, c in spec.answers.items()]
            ratings_parts.append(frame.select(ROW, ITEM, RATER, *labels, *answers))
        if spec.rater:
            attributes = {**spec.rater_attributes, **spec.rater_attribute_maps}
            rater_parts.append((one, frame.select(ROW, RATER, *_named(attributes))))
        if spec.item:
            named = {**spec.text, **spec.item_attributes}
            item_parts.append((one, frame.select(ROW, ITEM, *_named(named))))
        rejected[index] = bad
    ratings, repeated = _ratings(files, ratings_parts, rejected)
    raters = _entities(rater_parts, RATER, ProblemType.INCONSISTENT_RATER, "rater", rejected, files)
    items = _entities(
        item_parts, ITEM, ProblemType.INCONSISTENT_CONVERSATION, "item", rejected, files
    )
    ratings = with_positive(ratings, declared)
    tables: dict[str, pl.DataFrame | Path] = {"items": items, "raters": raters, "ratings": ratings}
    return Built(tables, missing, rejected, repeated=repeated)


def _named(columns: dict[str, str]) -> list[pl.Expr]:
    return [pl.col(source).alias(stored) for stored, source in columns.items()]


def _keyed(one: ReadFile) -> tuple[pl.DataFrame, set[int]]:
    """The frame with ITEM and RATER made from the declared key columns; rows without them
    are rejected."""
    spec, frame = one.spec, one.frame
    keys = []
    if spec.item:
        parts = [pl.col(c).str.strip_chars() for c in spec.item]
        keys.append(pl.concat_str(parts, separator=ITEM_SEPARATOR).alias(ITEM))
    if spec.rater:
        keys.append(pl.col(spec.rater).str.strip_chars().alias(RATER))
    frame = frame.with_columns(keys).with_columns(
        pl.col([k.meta.output_name() for k in keys]).replace("", None)
    )
    bad: set[int] = set()
    for column, declared in ((ITEM, ", ".join(spec.item)), (RATER, spec.rater)):
        if column not in frame.columns:
            continue
        rows = frame.filter(pl.col(column).is_null())[ROW].to_list()
        _add(
            one,
            rows,
            ProblemType.MISSING_VALUE,
            declared,
            None,
            f"no {column.removesuffix('_id')} id ({declared})",
        )
        bad.update(rows)
    return frame, bad


def _labels(
    one: ReadFile, frame: pl.DataFrame, scales: dict[str, Scale], missing: dict[str, int]
) -> tuple[list[pl.Series], set[int]]:
    """Each label of the file read by its scale, and the rows with a value outside it."""
    columns: list[pl.Series] = []
    bad: set[int] = set()
    for label, source in one.spec.labels.items():
        scale = scales[label]
        value, absent, outside = label_read(source, label, scale)
        read = frame.select(
            ROW,
            value,
            absent.alias("_absent"),
            outside.alias("_outside"),
            pl.col(source).str.strip_chars().alias("_raw"),
        )
        wrong = read.filter("_outside")
        rows = wrong[ROW].to_list()
        shown = ", ".join(map(str, scale.values))
        _add(
            one,
            rows,
            ProblemType.NOT_IN_ENUM,
            source,
            wrong["_raw"].to_list(),
            f"{label} is not one of its scale's values ({shortened(shown)})",
        )
        bad.update(rows)
        missing[label] += int(read["_absent"].sum())
        columns.append(read[label])
    return columns, bad


def label_read(
    source: str, label: str, scale: Scale, stripped: bool = False
) -> tuple[pl.Expr, pl.Expr, pl.Expr]:
    """How column `source` (`stripped`: of spaces already) is read as `label` on its
    scale: the stored value (named `label`), whether the cell is absent (empty or a
    missing code) and whether it is outside the scale."""
    raw = pl.col(source) if stripped else pl.col(source).str.strip_chars()
    absent = raw.is_null() | (raw == "")
    if text_codes := [str(m) for m in scale.missing if isinstance(m, str)]:
        absent = absent | raw.is_in(text_codes)
    if scale.numeric:
        number = raw.cast(pl.Float64, strict=False)
        if number_codes := [float(m) for m in scale.missing if not isinstance(m, str)]:
            absent = absent | number.is_in(number_codes).fill_null(False)
        known = number.is_in([float(v) for v in scale.values]).fill_null(False)
        dtype: pl.DataType = pl.Int64() if scale.integral else pl.Float64()
        value = pl.when(absent).then(None).otherwise(number).cast(dtype, strict=False)
    else:
        named = pl.Enum([str(v) for v in scale.values])
        typed_value = pl.when(absent).then(None).otherwise(raw).cast(named, strict=False)
        known = typed_value.is_not_null()
        value = typed_value
    return value.alias(label), absent, ~known & ~absent


def with_positive(ratings: pl.DataFrame | pl.LazyFrame, declared: DatasetDeclaration) -> Any:
    """`ratings` with LABEL_positive for each label whose scale declares a positive class,
    in the stored order: item, rater, labels, their positives, then the rest."""
    columns = ratings.collect_schema().names()
    for label, scale in declared.scales.items():
        if scale.positive and label in columns:
            fractional = scale.numeric and not scale.integral
            positive = [float(v) if fractional else v for v in scale.positive]
            ratings = ratings.with_columns(pl.col(label).is_in(positive).alias(f"{label}_positive"))
            columns.append(f"{label}_positive")
    ordered = [ITEM, RATER, *declared.labels]
    ordered += [f"{n}_positive" for n in declared.labels if f"{n}_positive" in columns]
    return ratings.select(*ordered, *[c for c in columns if c not in ordered])


def _ratings(
    files: Sequence[ReadFile], parts: list[pl.DataFrame], rejected: dict[int, set[int]]
) -> tuple[pl.DataFrame, int]:
    """Every file's ratings but the rejected ones, and how many repeat a pair: a second
    rating of an item by a rater is a warning, and kept (as published: the counts are the
    files')."""
    kept = []
    for index, one in enumerate(files):
        if one.spec.role != "ratings" or one.frame.is_empty():
            continue
        part = parts.pop(0).with_columns(pl.lit(index).alias("_file"))
        kept.append(part.filter(~pl.col(ROW).is_in(list(rejected[index]))))
    if not kept:
        empty = pl.DataFrame({ITEM: [], RATER: []}, schema={ITEM: pl.String, RATER: pl.String})
        return empty, 0
    every = pl.concat(kept, how="diagonal_relaxed")
    again = ~every.select(pl.struct(ITEM, RATER).is_first_distinct()).to_series()
    for (index,), part in every.filter(again).group_by("_file"):
        one = files[int(index)]
        rows = part[ROW].to_list()
        _add(
            one,
            rows,
            ProblemType.DUPLICATE_RATING,
            None,
            None,
            "a second rating of this item by this rater; both are kept",
            Severity.WARNING,
        )
    return every.drop(ROW, "_file"), int(again.sum())


def _entities(
    parts: list[tuple[ReadFile, pl.DataFrame]],
    key: str,
    problem: ProblemType,
    noun: str,
    rejected: dict[int, set[int]],
    files: Sequence[ReadFile],
) -> pl.DataFrame:
    """One row per rater (item), in order of first appearance: the attributes of its first
    row; another value in a later row is a warning."""
    if not parts:
        return pl.DataFrame({key: []}, schema={key: pl.String})
    frames = []
    for one, part in parts:
        index = next(i for i, f in enumerate(files) if f is one)
        frames.append(
            part.filter(~pl.col(ROW).is_in(list(rejected.get(index, ())))).with_columns(
                pl.lit(index).alias("_file")
            )
        )
    every = pl.concat(frames, how="diagonal_relaxed").filter(pl.col(key).is_not_null())
    attributes = [c for c in every.columns if c not in (key, ROW, "_file")]
    first = every.unique(key, keep="first", maintain_order=True)
    for column in attributes:
        values = every.select(key, column, ROW, "_file").join(
            first.select(key, pl.col(column).alias("_first")), on=key, how="left"
        )
        differs = values.filter(
            pl.col(column).is_not_null()
            & pl.col("_first").is_not_null()
            & (pl.col(column) != pl.col("_first"))
        )
        for (index,), part in differs.group_by("_file"):
            _add(
                files[int(index)],
                part[ROW].to_list(),
                problem,
                column,
                part[column].to_list(),
                f"another {column} than this {noun}'s first row gives; the first is kept",
                Severity.WARNING,
            )
        # A value first given after a row without one: the first row that has one.
        filled = every.filter(pl.col(column).is_not_null()).unique(key, keep="first")
        first = first.drop(column).join(
            filled.select(key, column), on=key, how="left", maintain_order="left"
        )
    return typed(first.select(key, *attributes))


def typed(frame: pl.DataFrame) -> pl.DataFrame:
    """Text attributes whose every value is a whole number (a number) as Int64 (Float64)."""
    columns = []
    for name in frame.columns[1:]:
        column = frame[name]
        if column.dtype != pl.String or column.null_count() == column.len():
            columns.append(column)
            continue
        for dtype in (pl.Int64, pl.Float64):
            cast = column.cast(dtype, strict=False)
            if cast.null_count() == column.null_count():
                columns.append(cast)
                break
        else:
            columns.append(column)
    return frame.select(frame.columns[0]).with_columns(columns)


def _add(
    one: ReadFile,
    rows: Iterable[int],
    kind: ProblemType,
    column: str | None,
    values: Sequence[object] | None,
    message: str,
    severity: Severity = Severity.ERROR,
) -> None:
    rows = list(rows)
    one.report.add(
        Problem(
            kind,
            one.line(row),
            column,
            None if values is None or values[i] is None else shortened(str(values[i])),
            f"{one.where(row)}{message}",
            severity,
        )
        for i, row in enumerate(rows)
    )

"""The fast path: a whole ProsocialDialog file read by PyArrow's JSON reader and checked
column by column. It answers "valid" or "look closer", never which line is wrong: any
doubt sends the file to the line-by-line reader (`dices_cli.formats.prosocial.rows`), which names
every problem with its line.

Several times faster than the line-by-line reader on a generated train.json
(scripts/make_prosocial.py), and faster than pandas.read_json reading alone: bench/prosocial.py.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from dices_cli.families.prosocial import ANNOTATIONS, ANNOTATORS_PER_ITEM, ENUM_FIELDS, ID_LIMITS
from dices_cli.read.json_lines import MAX_DEPTH
from dices_cli.read.lines import first_overlong

if TYPE_CHECKING:
    import polars as pl

    from dices_cli.read.source import Source

# A line holding nothing but blanks: the reader skips it, so rows would no longer be lines.
# (Starting with a literal lets `re` scan for it at memchr speed; an alternation with ^
# is orders of magnitude slower: bench/prosocial.py.)
_BLANK_LINE = re.compile(rb"\n[ \t\r]*\n")
# Fields that may be null: a null there may also be a missing key, which the reader cannot
# tell apart, so the lines of those rows are looked at for the key.
_NULLABLE = ("rots", "etc")


def read_valid(source: Source) -> pl.DataFrame | None:
    """Every line of `source` as a row, in order (row i is line i + 1), when every line is
    valid; None when any line may not be (or the file holds blank lines, a line too long to
    hold, or one nested deeper than a valid line: PyArrow's reader recurses into nesting,
    and crashed at 100,000 levels)."""
    import polars as pl
    import pyarrow as pa
    import pyarrow.json as pajson

    with source.open_text() as text:
        if first_overlong(text, openers=b"[{", most_openers=MAX_DEPTH) is not None:
            return None
    data = source.read(source.size)
    end = len(data)  # without the final line ends (no copy of the data: it may be 100 MB)
    while end and data[end - 1] == ord("\n"):
        end -= 1
    if not data[: data.find(b"\n")].strip() or _BLANK_LINE.search(data, 0, end):
        return None
    string, strings, integer = pa.string(), pa.list_(pa.string()), pa.int64()
    schema = pa.schema(
        [
            ("context", string),
            ("response", string),
            ("rots", strings),
            ("safety_label", string),
            ("safety_annotations", strings),
            ("safety_annotation_reasons", strings),
            ("source", string),
            ("etc", string),
            ("dialogue_id", integer),
            ("response_id", integer),
            ("episode_done", pa.bool_()),
        ]
    )
    options = pajson.ParseOptions(explicit_schema=schema, unexpected_field_behavior="error")
    try:
        table = pajson.read_json(pa.py_buffer(data), parse_options=options)
        table.validate(full=True)  # the reader never checks that text is UTF-8
    except pa.ArrowInvalid:  # broken JSON, a wrong type, an extra key, invalid UTF-8, ...
        return None
    # Two objects on one line would make two rows: as many rows as lines rules that out.
    if table.num_rows != data.count(b"\n", 0, end) + 1:
        return None
    frame = pl.from_arrow(table)
    assert isinstance(frame, pl.DataFrame)
    if not _all_valid(frame) or not _nullable_keys_present(frame, data):
        return None
    return frame.with_columns(pl.col("response_id").cast(pl.Int32))


def _all_valid(frame: pl.DataFrame) -> bool:
    import polars as pl

    required = [c for c in frame.columns if c not in _NULLABLE]
    annotations = pl.col("safety_annotations")
    reasons = pl.col("safety_annotation_reasons")
    checks = [
        pl.all_horizontal(pl.col(required).is_not_null().all()),
        pl.col("rots").list.eval(pl.element().is_null()).list.any().not_().all(),
        (annotations.list.len() == ANNOTATORS_PER_ITEM).all(),
        (reasons.list.len() == ANNOTATORS_PER_ITEM).all(),
        annotations.explode().is_in(ANNOTATIONS).fill_null(False).all(),
        reasons.explode().is_not_null().all(),
        *(pl.col(k).is_in(v).fill_null(False).all() for k, v in ENUM_FIELDS.items()),
        *(((pl.col(k) >= 0) & (pl.col(k) < limit)).all() for k, limit in ID_LIMITS.items()),
        pl.struct("dialogue_id", "response_id").is_duplicated().any().not_(),
    ]
    results = frame.select(check.alias(f"check_{i}") for i, check in enumerate(checks))
    return all(results.row(0))


def _nullable_keys_present(frame: pl.DataFrame, data: bytes) -> bool:
    """True when every line has the keys rots and etc (the reader makes a missing key null,
    as null itself). In JSON text a quote inside a string is escaped, so `"etc":` occurs
    only as a key; a key twice in one object is an error of the reader, and two objects on
    one line were ruled out: as many keys as rows is one on each line. (A key spelled with
    blanks before its colon is not counted, and sends the file to the careful reader.)"""
    return all(data.count(f'"{key}":'.encode()) == frame.height for key in _NULLABLE)

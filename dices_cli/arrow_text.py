"""Arrow record batches as CSV/TSV lines, byte for byte what `dices_cli.output` writes for
the same rows as Python values (`output.delimited_row` over `output.text_cell`).

Every speed trick of the output path lives in this module, each with its measured gain.
Figures: `dices sql "SELECT * FROM ratings_wide"` (115,153 rows x 69 columns, both replica
datasets), single thread, CPU seconds summed over the result's batches, 2-core machine;
`python bench/output.py` gives the end-to-end figures.
"""

from __future__ import annotations

import itertools
import re
from array import array
from collections import deque
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa

# What json.dumps(ensure_ascii=False) writes escaped: such a string is written by Python.
JSON_ESCAPED = r'["\\\x00-\x1f]'
# Time zones whose times `datetime.isoformat` writes with +00:00.
UTC_NAMES = ("UTC", "Etc/UTC", "+00:00")
# Rows of a stream's first batch formatted (in the calling thread) and written on their
# own. A reader that leaves early (`| head`) is noticed at the first write after it left:
# after 1,000 rows rather than after three batches of 10,000 on the thread pool.
# `bench/output.py` times the exit of `dices sql ... -f csv | head -c 100` after its first
# bytes, with and without this.
FIRST_ROWS = 1_000
WORKERS = 2  # batches formatted at once, on threads (see `delimited`)
# The days and seconds since 1970-01-01 that Python's dates and times hold: years 1 to 9999.
PYTHON_DAYS = (-719_162, 2_932_896)
PYTHON_SECONDS = (-62_135_596_800, 253_402_300_800)  # the end: the first second past them
UNITS_PER_SECOND = {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}
# How DuckDB gives Arrow an infinite date (days) or timestamp (any unit): the largest value
# of its integer, positive or negative.
INFINITE_DAYS = 2**31 - 1
INFINITE_TIME = 2**63 - 1


def delimited(
    batches: Iterator[pa.RecordBatch], delimiter: str, python_cell: Callable[[object], str]
) -> Iterator[pa.Buffer | bytes]:
    """The lines of each of `batches` (`delimited_lines`), in order; the first batch's first
    FIRST_ROWS rows on their own, formatted in this thread before any other work starts.

    Batches are formatted WORKERS at a time on threads (Arrow's compute functions let go of
    the GIL) while this thread reads the next ones from their source, so that on an idle
    2-core machine formatting overlaps DuckDB's work. On a loaded machine the threads
    cost a little more than one batch after the other (bench/output.py measures both).
    """
    from concurrent.futures import Future, ThreadPoolExecutor

    first = next(batches, None)
    if first is None:
        return
    yield delimited_lines(first.slice(0, FIRST_ROWS), delimiter, python_cell)  # at once
    pool = ThreadPoolExecutor(WORKERS)
    pending: deque[Future[pa.Buffer | bytes]] = deque()
    try:
        for batch in itertools.chain([first.slice(FIRST_ROWS)], batches):
            pending.append(pool.submit(delimited_lines, batch, delimiter, python_cell))
            if len(pending) > WORKERS:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:  # a reader that went away: no need to finish the work under way
        pool.shutdown(wait=False, cancel_futures=True)


def delimited_lines(
    batch: pa.RecordBatch, delimiter: str, python_cell: Callable[[object], str]
) -> pa.Buffer | bytes:
    """The rows of `batch` as CSV lines, as `output.delimited_row` writes `python_cell`s: a
    cell is quoted only when it holds the delimiter, a quote, a line feed or a carriage
    return; a row of one empty cell is `""`. Strings, ENUMs, integers, booleans, dates, UTC
    times and lists of strings or ENUMs are formatted by Arrow; other types (floats, say)
    in Python."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if batch.num_rows == 0:
        return b""
    special = f'[{re.escape(delimiter)}"\n\r]'
    named = zip(batch.columns, batch.schema.names, strict=True)
    cells = [_csv_cells(column, name, special, python_cell) for column, name in named]
    empty = _text("")
    if len(cells) == 1:
        cells[0] = pc.if_else(pc.equal(cells[0], empty), _text('""'), cells[0])
    cells[-1] = pc.binary_join_element_wise(cells[-1], _text("\n"), empty)  # the line feed
    lines = cells[0] if len(cells) == 1 else pc.binary_join_element_wise(*cells, _text(delimiter))
    lines = lines.cast(pa.large_string())  # 64-bit offsets, read below
    offsets = memoryview(lines.buffers()[1]).cast("q")
    start, end = offsets[lines.offset], offsets[lines.offset + len(lines)]
    return lines.buffers()[2][start:end]  # the lines one after another, not copied


def _csv_cells(
    column: pa.Array, name: str, special: str, python_cell: Callable[[object], str]
) -> pa.Array:
    """The cells of `column` (called `name`) as CSV text, quoted where they hold `special`."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_dictionary(column.type):
        # An ENUM: each value formatted once, then taken, never each cell decoded first
        # (nor adjacent ENUMs taken together through the product of their dictionaries,
        # which was slower still). bench/output.py times it.
        cells = _csv_cells(column.dictionary, name, special, python_cell).take(column.indices)
    else:
        cells = _arrow_text(column)
        if cells is None:
            cells = _strings([python_cell(v) for v in python_values(column, name)])
        kind = column.type
        if not (
            pa.types.is_integer(kind) or pa.types.is_boolean(kind) or pa.types.is_temporal(kind)
        ):
            special_cells = pc.match_substring_regex(cells, special)
            if pc.any(special_cells).as_py():
                quote = _text('"')
                quoted = pc.binary_join_element_wise(
                    quote, pc.replace_substring(cells, '"', '""'), quote, _text("")
                )
                cells = pc.if_else(special_cells, quoted, cells)
    return pc.fill_null(cells, _text("")) if cells.null_count else cells


def _arrow_text(column: pa.Array) -> pa.Array | None:
    """`column` as strings when Arrow can write its values as `output.text_cell` does, else
    None (the column is then written cell by cell in Python)."""
    import pyarrow as pa

    kind = column.type
    if _outside_python(column):
        return None  # written by `python_values`, which says infinity or refuses the value
    if (
        pa.types.is_string(kind)
        or pa.types.is_large_string(kind)
        or pa.types.is_integer(kind)
        or pa.types.is_boolean(kind)
        or pa.types.is_date32(kind)
    ):
        return column.cast(pa.string())
    if pa.types.is_float32(kind) or pa.types.is_float64(kind):
        # Python's shortest round-trip text, value by value: Arrow finds the same digits but
        # writes 1.0 as 1 and 1e-05 as 0.00001: faster than through `text_cell`, slower
        # than Arrow's own cast, which would change the text (bench/output.py). A missing
        # value is an empty cell either way.
        return _strings(["" if v is None else repr(v) for v in column.to_pylist()])
    if pa.types.is_timestamp(kind) and kind.unit == "us" and kind.tz in (None, *UTC_NAMES):
        return _iso_times(column)
    if (
        pa.types.is_list(kind)
        and pa.types.is_dictionary(kind.value_type)
        and pa.types.is_string(kind.value_type.value_type)
    ):
        return _json_lists(column, column.values.dictionary)
    if pa.types.is_list(kind) and pa.types.is_string(kind.value_type):
        return _json_lists(column, None)
    return None


def python_values(column: pa.Array, name: str) -> list[object]:
    """The values of `column` (called `name`) as Python's: `pa.Array.to_pylist`, but for a
    date or a time that Python cannot hold. DuckDB's infinite dates and times are the words
    `infinity` and `-infinity` (as DuckDB writes them); one outside the years 1 to 9999,
    or inside a list or a struct, is an `UnwritableError`. Checked without Arrow's compute
    functions, which a small result written through Python does not load."""
    held = _python_range(column)
    if held is None:
        return _pylist(column, name)
    numbers, low, high = held
    integers = numbers.to_pylist()
    if all(number is None or low <= number <= high for number in integers):
        return _pylist(column, name)
    infinite = INFINITE_DAYS if numbers.type.bit_width == 32 else INFINITE_TIME
    values: list[object] = []
    for i, number in enumerate(integers):
        if number is None or low <= number <= high:
            values.extend(_pylist(column.slice(i, 1), name))
        elif abs(number) == infinite:
            values.append("infinity" if number > 0 else "-infinity")
        else:
            raise UnwritableError(name, "a date outside the years 1 to 9999")
    return values


def _pylist(column: pa.Array, name: str) -> list[object]:
    try:
        return column.to_pylist()
    except (OverflowError, ValueError) as error:  # a time beyond Python's, at any depth
        raise UnwritableError(name, "a date or a time beyond Python's years 1 to 9999") from error


def _python_range(column: pa.Array) -> tuple[pa.Array, int, int] | None:
    """For a column of dates or timestamps: its values as integers, and the least and the
    greatest that Python holds (years 1 to 9999, not infinite); None for any other column."""
    import pyarrow as pa

    kind = column.type
    if pa.types.is_date32(kind):
        return column.view(pa.int32()), *PYTHON_DAYS
    if not pa.types.is_timestamp(kind):
        return None
    per_second = UNITS_PER_SECOND[kind.unit]
    low = max(PYTHON_SECONDS[0] * per_second, -INFINITE_TIME + 1)
    high = min(PYTHON_SECONDS[1] * per_second - 1, INFINITE_TIME - 1)
    return column.view(pa.int64()), low, high


def _outside_python(column: pa.Array) -> bool:
    """Whether `column` holds a date or a time that Python cannot hold (`_python_range`)."""
    import pyarrow.compute as pc

    held = _python_range(column)
    if held is None:
        return False
    numbers, low, high = held
    extremes = pc.min_max(numbers).as_py()
    return extremes["min"] is not None and not (low <= extremes["min"] and extremes["max"] <= high)


class UnwritableError(ValueError):
    """A value of column `name` that Python cannot hold: `what` it is."""

    def __init__(self, name: str, what: str) -> None:
        super().__init__(f"the column {name!r} holds {what}")
        self.name, self.what = name, what


def _iso_times(column: pa.Array) -> pa.Array:
    """Microsecond timestamps as `datetime.isoformat` writes them: the fraction only when it
    is not zero, and +00:00 for a time in UTC.

    Arrow's cast to text, then mended: faster than `strftime`, which also loads the time
    zone database the first time (bench/output.py).
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    naive = column.cast(pa.timestamp("us")) if column.type.tz is not None else column
    text = pc.utf8_replace_slice(naive.cast(pa.string()), 10, 11, "T")  # "YYYY-MM-DD HH:..."
    text = pc.if_else(pc.ends_with(text, ".000000"), pc.utf8_slice_codeunits(text, 0, -7), text)
    if column.type.tz is None:
        return text
    return pc.binary_join_element_wise(text, _text("+00:00"), _text(""))


def _json_lists(column: pa.Array, dictionary: pa.Array | None) -> pa.Array | None:
    """Lists of strings (or of ENUMs, whose `dictionary` is given) as `json.dumps` writes
    them, when no string needs escaping (else None).

    A list of ENUMs is quoted through its dictionary, each value once, never each ENUM
    decoded first (bench/output.py).
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    offsets = column.offsets  # of this slice of the lists, into all their values
    first = offsets[0].as_py()
    values = column.values.slice(first, offsets[-1].as_py() - first)
    strings = values if dictionary is None else dictionary
    if pc.any(pc.match_substring_regex(strings, JSON_ESCAPED)).as_py():
        return None
    quote, empty = _text('"'), _text("")
    quoted = pc.binary_join_element_wise(quote, strings, quote, empty)
    if dictionary is not None:
        quoted = quoted.take(values.indices)
    quoted = pc.fill_null(quoted, _text("null"))
    lists = pa.ListArray.from_arrays(
        pc.subtract(offsets, offsets[0]), quoted, mask=column.is_null()
    )
    joined = pc.binary_join(lists, _text(", "))
    return pc.binary_join_element_wise(_text("["), joined, _text("]"), empty)


def _strings(texts: list[str]) -> pa.Array:
    """Python strings as an Arrow string array, built from their bytes.

    Arrow's own conversion of Python values (`pa.array`, or a plain `str` handed to a
    compute function) imports pandas, to check whether a value is a pandas object: 0.3 s
    before the first line of `dices sql ... | head` on an idle machine.
    """
    import pyarrow as pa

    encoded = [text.encode() for text in texts]
    offsets = array("i", itertools.accumulate(map(len, encoded), initial=0))
    data = [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(encoded))]
    return pa.Array.from_buffers(pa.string(), len(texts), data)


def _text(value: str) -> pa.Scalar:
    """`value` as an Arrow string scalar, made without Arrow's conversion (see `_strings`)."""
    return _strings([value])[0]

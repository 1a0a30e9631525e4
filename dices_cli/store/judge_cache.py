"""The judge's cache: every request and its answer, in the data directory (`DIR/judge/`).

Each run appends to a segment of its own, `calls-<time>-<pid>-<tag>.jsonl`, one JSON record
a line, each line handed to the kernel by one `write` as soon as its answer arrives (an
O_APPEND descriptor, no buffer in between): a process killed with kill -9 loses only the
requests in flight. The segment is synced to disk every `SYNC_SECONDS` and when the run
ends, so a power cut loses at most those seconds; a line cut short by one is skipped when
the cache is read. Runs never share a segment, so two runs on one directory need no lock.

The tag (`run_tag`) is the hash of the key fields every call of a run shares (endpoint,
model, prompt, sampling): a run reads only the segments of its tag, and those named without
one (written before tags), and in them parses only the lines of its own calls (a line as
`Segment` writes it names its key first, read without parsing the line).

A record is one attempt (`ok` false for one that failed: HTTP status and error kept for
audit); a completed call (`ok` true) answers its key for every later run, the latest
winning. `dices sql` sees every record as the view `judge_calls` (`calls_table`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from collections.abc import Iterator, Mapping, Set
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dices_cli.errors import DicesError, system_reason
from dices_cli.read.untrusted import (
    UntrustedError,
    bounded_lines,
    finite_number,
    loads_json,
    open_regular_file,
)

if TYPE_CHECKING:
    import pyarrow as pa

DIRECTORY = "judge"
SYNC_SECONDS = 1.0
# A record holds an answer of at most 20,000 characters and a few fields: a longer line, or
# a deeper one, is not one of ours.
MAX_LINE_BYTES = 1 << 20
MAX_LINE_DEPTH = 8
# The fields of a call's key, in order: the same key asks the same question of the same model.
KEY_FIELDS = (
    "endpoint",
    "endpoint_sha256",
    "model",
    "prompt",
    "prompt_hash",
    "dataset",
    "item_id",
    "persona",
    "sample",
    "temperature",
    "max_tokens",
    "seed",
)
# The columns of the judge_calls view, with their Arrow types (by name, for `calls_table`).
COLUMNS = {
    "key": "string",
    "asked_at": "timestamp",
    "endpoint": "string",
    "model": "string",
    "prompt": "string",
    "prompt_hash": "string",
    "dataset": "string",
    "item_id": "string",
    "persona": "string",
    "sample": "int64",
    "temperature": "float64",
    "max_tokens": "int64",
    "seed": "int64",
    "ok": "bool",
    "status": "int64",
    "latency_ms": "float64",
    "answer": "string",
    "verdict": "string",
    "finish_reason": "string",
    "prompt_tokens": "int64",
    "completion_tokens": "int64",
    "error": "string",
}


# The key fields every call of one run shares: a segment's tag.
RUN_FIELDS = tuple(f for f in KEY_FIELDS if f not in ("dataset", "item_id", "persona", "sample"))
TAG_CHARS = 16
# A line as `Segment` writes it begins with its key: `{"key":"<64 hex digits>",`.
KEY_START = b'{"key":"'
KEY_END = len(KEY_START) + 64


def call_key(fields: dict[str, Any]) -> str:
    """The SHA-256 of a call's key fields (`KEY_FIELDS`), as JSON."""
    encoded = json.dumps([fields[name] for name in KEY_FIELDS], ensure_ascii=False)
    return hashlib.sha256(encoded.encode()).hexdigest()


def run_tag(fields: Mapping[str, Any]) -> str:
    """The tag of the segments of a run whose calls share these `RUN_FIELDS`."""
    encoded = json.dumps([fields[name] for name in RUN_FIELDS], ensure_ascii=False)
    return hashlib.sha256(encoded.encode()).hexdigest()[:TAG_CHARS]


def cache_directory(root: Path) -> Path:
    return root / DIRECTORY


def _segments(root: Path, tag: str | None = None) -> list[Path]:
    """The segments, oldest first: all, or those of `tag` and those of no tag (any name
    but `calls-<time>-<pid>-<another tag>.jsonl`)."""
    directory = cache_directory(root)
    if not directory.is_dir():
        return []
    segments = sorted(directory.glob("calls-*.jsonl"))
    if tag is None:
        return segments
    return [s for s in segments if s.name[6:-6].split("-")[2:] in ([], [tag])]


def _records(root: Path) -> Iterator[dict[str, Any]]:
    """Every whole record of every segment, oldest first (`_segment_records`)."""
    for segment in _segments(root):
        yield from _segment_records(segment)


def _segment_records(segment: Path, wanted: Set[bytes] | None = None) -> Iterator[dict[str, Any]]:
    """Every whole record of `segment`; with `wanted` (keys, as bytes), those of these keys
    only, a line `Segment` wrote for another key passed over unparsed. A line that is not a
    record (cut short by a crash, longer than MAX_LINE_BYTES, not JSON, too deep, or a key
    that is not text) is skipped; a segment that is not a regular file (a FIFO, a device)
    is refused."""
    try:
        with open_regular_file(segment) as handle:
            for line in bounded_lines(handle, MAX_LINE_BYTES):
                if line is None:
                    continue
                if (
                    wanted is not None
                    and line.startswith(KEY_START)
                    and line[KEY_END : KEY_END + 2] == b'",'
                    and line[len(KEY_START) : KEY_END] not in wanted
                ):
                    continue  # another call's line: its key, unescaped, is not wanted
                with contextlib.suppress(UntrustedError):
                    record = loads_json(line, MAX_LINE_BYTES, MAX_LINE_DEPTH)
                    if isinstance(record, dict) and isinstance(record.get("key"), str):
                        yield record
    except UntrustedError as error:
        raise DicesError(f"cannot read the judge cache {segment}: {error}") from error
    except OSError as error:
        raise DicesError(
            f"cannot read the judge cache {segment}: {system_reason(error)}"
        ) from error


def has_calls(root: Path) -> bool:
    """Whether the data directory has a judge cache."""
    return bool(_segments(root))


def completed(
    root: Path, tag: str | None = None, keys: Set[str] | None = None
) -> dict[str, dict[str, Any]]:
    """Each key's latest completed call (`ok` true, and each field of `COLUMNS` of its
    type: a record written by hand or by another version with a field of another type is
    not an answer, and its call is asked again).

    With `keys` (and the `tag` of their run): those keys' only, from the segments of the
    tag (`_segments`) read newest first, each whole, until every key has one: a key's
    latest is the last of the newest segment that has one, so older segments cannot
    change the answer and are not opened."""
    if keys is None:
        return {record["key"]: record for record in _records(root) if _completed(record)}
    wanted = {key.encode() for key in keys}
    found: dict[str, dict[str, Any]] = {}
    for segment in reversed(_segments(root, tag)):
        newest = {
            record["key"]: record
            for record in _segment_records(segment, wanted)
            if record["key"] in keys and _completed(record)
        }
        found = newest | found  # a newer segment's record wins
        if len(found) == len(keys):
            break
    return found


def _completed(record: dict[str, Any]) -> bool:
    return record.get("ok") is True and all(
        _fits(record.get(name), kind) for name, kind in COLUMNS.items() if name != "item_id"
    )


class Segment:
    """This run's segment (named with its `run_tag`), opened when the first record comes."""

    def __init__(self, root: Path, tag: str) -> None:
        self.directory = cache_directory(root)
        self.tag = tag
        self.path: Path | None = None
        self.descriptor: int | None = None
        self.synced = time.monotonic()

    def append(self, record: dict[str, Any]) -> None:
        line = json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
        try:
            if self.descriptor is None:
                self.directory.mkdir(parents=True, exist_ok=True)
                name = f"calls-{time.time_ns():020d}-{os.getpid()}-{self.tag}.jsonl"
                self.path = self.directory / name
                flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_CLOEXEC
                # A data file: read and write, as the umask allows; never executable.
                self.descriptor = os.open(self.path, flags, 0o666)
            os.write(self.descriptor, line)
            if time.monotonic() - self.synced > SYNC_SECONDS:
                self._sync()
        except OSError as error:
            where = self.path or self.directory
            raise DicesError(
                f"cannot write the judge cache {where}: {system_reason(error)}"
            ) from error

    def _sync(self) -> None:
        if self.descriptor is not None:
            os.fsync(self.descriptor)
        self.synced = time.monotonic()

    def close(self) -> None:
        if self.descriptor is not None:
            try:
                self._sync()
            finally:
                os.close(self.descriptor)
                self.descriptor = None


def calls_table(root: Path) -> pa.Table:
    """Every record of the cache as an Arrow table of `COLUMNS` (empty without a cache)."""

    import pyarrow as pa

    types = {
        "string": pa.string(),
        "int64": pa.int64(),
        "float64": pa.float64(),
        "bool": pa.bool_(),
        "timestamp": pa.timestamp("us", tz="UTC"),
    }
    schema = pa.schema([(name, types[kind]) for name, kind in COLUMNS.items()])
    columns: dict[str, list[Any]] = {name: [] for name in COLUMNS}
    for record in _records(root):
        for name, kind in COLUMNS.items():
            value = record.get(name)
            if name == "item_id" and value is not None:
                value = str(value)
            elif kind == "timestamp":
                value = _timestamp(value)
            elif not _fits(value, kind):
                value = None  # a record written by hand or by another version: its own business
            columns[name].append(value)
    return pa.table(columns, schema=schema)


def _timestamp(value: Any) -> Any:
    """Seconds since 1970 as a UTC time; None when they are not a number of a year 1 to 9999."""
    import datetime

    seconds = finite_number(value, -62_135_596_800, 253_402_300_799)
    return None if seconds is None else datetime.datetime.fromtimestamp(seconds, datetime.UTC)


def _fits(value: Any, kind: str) -> bool:
    if value is None:
        return True
    if kind == "timestamp":
        return finite_number(value) is not None
    if kind == "string":
        return isinstance(value, str)
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "int64":
        return isinstance(value, int) and not isinstance(value, bool) and abs(value) < 2**63
    return finite_number(value) is not None

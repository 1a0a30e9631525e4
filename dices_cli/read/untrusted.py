"""The one reader of untrusted JSON and TOML: server answers, the judge's cache lines, prompt
files and manifests. Whatever the bytes, it gives a value or an `UntrustedError`, in memory
and time bounded by the limits given, never a crash.

- A file is read only when it is a regular file no larger than the limit: a FIFO, a device
  (`/dev/zero`) or a directory is refused before a byte is read, and a file that grows while
  it is read is cut at the limit and refused.
- A text is refused when it is larger than its limit, not UTF-8, or nests lists, objects or
  tables deeper than `MAX_DEPTH` (Python's JSON parser raises RecursionError near 1,000
  levels, `tomllib` as soon as the stack is used up).
- A number is refused unless it is finite: JSON's NaN, Infinity and 1e999, TOML's nan and
  inf. Whether a finite number is in range is the caller's business (`finite_number`).
- JSON that names a key twice in one object is refused (readers keep the first or the last).
"""

from __future__ import annotations

import json
import math
import os
import stat
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from dices_cli.errors import DicesError, system_reason

MAX_DEPTH = 64  # levels of lists, objects and tables: every file of dices needs fewer than 8
MAX_FILE_BYTES = 1 << 20  # a prompt or a manifest: dices writes a few KB


class UntrustedError(DicesError):
    """Untrusted input that is not what it must be; the message says why (no location: the
    caller names the file or the server)."""


def read_regular_file(path: Path, limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of `path`, a regular file of at most `limit` bytes. A FIFO, a device or a
    directory is refused before it is read (opening a FIFO does not wait for a writer)."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as error:
        raise UntrustedError(f"cannot read it: {system_reason(error)}") from error
    with os.fdopen(descriptor, "rb") as handle:
        kind = os.fstat(descriptor).st_mode
        if not stat.S_ISREG(kind):
            raise UntrustedError(f"it is not a regular file ({_kind(kind)})")
        try:
            data = handle.read(limit + 1)
        except OSError as error:
            raise UntrustedError(f"cannot read it: {system_reason(error)}") from error
    if len(data) > limit:
        raise UntrustedError(f"it is larger than {_size(limit)}")
    return data


def open_regular_file(path: Path) -> BinaryIO:
    """`path` opened for reading when it is a regular file (of any size: the caller reads it
    in bounded pieces, `bounded_lines`); a FIFO, a device or a directory is refused."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as error:
        raise UntrustedError(f"cannot read it: {system_reason(error)}") from error
    kind = os.fstat(descriptor).st_mode
    if not stat.S_ISREG(kind):
        os.close(descriptor)
        raise UntrustedError(f"it is not a regular file ({_kind(kind)})")
    return os.fdopen(descriptor, "rb")


def bounded_lines(handle: BinaryIO, limit: int) -> Iterator[bytes | None]:
    """Each whole line of `handle` (ending in LF, kept), None for a line longer than `limit`
    bytes (skipped without being held). A last line without its LF (cut short by a crash) is
    not a whole line: it is not given."""
    while True:
        line = handle.readline(limit + 1)
        if not line:
            return
        if line.endswith(b"\n"):
            yield line
            continue
        if len(line) <= limit:
            return  # the end of the file, without a line break
        while line and not line.endswith(b"\n"):  # an overlong line: skipped to its end
            line = handle.readline(limit + 1)
        yield None


def loads_json(data: bytes | str, limit: int = MAX_FILE_BYTES, depth: int = MAX_DEPTH) -> Any:
    """The JSON value of `data`, checked: at most `limit` bytes and `depth` levels, finite
    numbers, each key once per object."""
    text = _text(data, limit)
    try:
        value = _JSON.decode(text)
    except RecursionError:
        raise UntrustedError(_too_deep(depth)) from None
    except UntrustedError:
        raise
    except ValueError as error:
        raise UntrustedError(f"it is not valid JSON ({_cut(str(error))})") from None
    _check_depth(value, depth)
    return value


def loads_toml(data: bytes | str, limit: int = MAX_FILE_BYTES, depth: int = MAX_DEPTH) -> Any:
    """The TOML table of `data`, checked: at most `limit` bytes and `depth` levels, finite
    numbers."""
    text = _text(data, limit)
    try:
        value = tomllib.loads(text, parse_float=_finite_float)
    except RecursionError:
        raise UntrustedError(_too_deep(depth)) from None
    except UntrustedError:
        raise
    except tomllib.TOMLDecodeError as error:
        raise UntrustedError(f"it is not valid TOML: {_cut(str(error))}") from None
    _check_depth(value, depth)
    return value


def finite_number(value: Any, low: float = -math.inf, high: float = math.inf) -> float | None:
    """`value` as a float when it is a number (not a bool) in [low, high], else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:  # an integer beyond any float
        return None
    return number if math.isfinite(number) and low <= number <= high else None


def _text(data: bytes | str, limit: int) -> str:
    size = len(data) if isinstance(data, bytes) else len(data.encode("utf-8", "surrogatepass"))
    if size > limit:
        raise UntrustedError(f"it is larger than {_size(limit)}")
    if isinstance(data, str):
        return data
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise UntrustedError(f"it is not UTF-8 text (at its byte {error.start + 1})") from None


def _finite_float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise UntrustedError(f"it holds the number {_cut(text)}, which is not finite")
    return number


def _refuse_constant(name: str) -> Any:
    raise UntrustedError(f"it holds {name}, which is not a finite number")


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) < len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise UntrustedError(f"the key {_cut(json.dumps(key))} appears twice in one object")
            seen.add(key)
    return result


_JSON = json.JSONDecoder(
    object_pairs_hook=_object, parse_float=_finite_float, parse_constant=_refuse_constant
)


def _check_depth(value: Any, limit: int) -> None:
    """Refuse `value` when it nests more than `limit` levels (counted without recursion, a
    level at a time)."""
    level = [value] if isinstance(value, dict | list) else []
    depth = 1
    while level:
        if depth > limit:
            raise UntrustedError(_too_deep(limit))
        deeper: list[Any] = []
        for item in level:
            children = item.values() if isinstance(item, dict) else item
            deeper += [child for child in children if isinstance(child, dict | list)]
        level = deeper
        depth += 1


def _too_deep(limit: int) -> str:
    return f"it nests lists and objects deeper than {limit} levels"


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a file"


def _size(limit: int) -> str:
    return f"{limit >> 20} MiB" if limit >= 1 << 20 else f"{limit >> 10} KiB"


def _cut(text: str, most: int = 80) -> str:
    return text if len(text) <= most else text[:most] + "..."

"""Fetch the official dataset files over HTTP(S), verified by size and SHA-256.

Standard library only (`urllib.request`, which takes proxies from http_proxy, https_proxy
and no_proxy), so that downloading needs nothing beyond dices itself. Each file is written
to `NAME.part` and hashed as it is written (one pass); it is renamed to `NAME` only after its
size and SHA-256 match. Connection failures, timeouts and 5xx answers are retried with
exponential back-off; a broken transfer resumes from the bytes it has with a Range request
when the server allows it (206), and a `.part` is left behind only when a later run can
resume it the same way.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from http.client import HTTPException, HTTPResponse
from pathlib import Path
from typing import BinaryIO
from urllib.parse import urlsplit

from dices_cli import __version__
from dices_cli.checksum import Digest, sha256_file
from dices_cli.errors import DicesError, LockedError, Option, UsageError, system_reason
from dices_cli.families import FAMILIES, listed, single_file_members

Progress = Callable[[str, float], None]  # (the file being fetched, fraction of it done)

BASE_VARIABLE = "DICES_DOWNLOAD_BASE"  # a mirror of every file, under the same paths

CHUNK = 1 << 16
BACKOFF_SECONDS = 1.0  # before the first retry; doubled before each next one
DEFAULT_TIMEOUT = 30.0  # seconds without a byte from the server
DEFAULT_RETRIES = 4
RETRIED_STATUSES = (429, 500, 502, 503, 504)


@dataclass(frozen=True)
class Source:
    """One file to fetch: where it lives (`base` + `path`), where it goes under the download
    directory (`file_name`), and what it must be (`size`, `sha256`; None when unpublished).
    Made from a family's declaration (`published_sources`), then perhaps pointed at a mirror."""

    dataset: str
    title: str
    file_name: str
    base: str
    path: str
    size: int | None
    sha256: str | None

    @property
    def url(self) -> str:
        return self.base + self.path


def published_sources() -> tuple[Source, ...]:
    """Every published file of every family, as the families declare them, in their order."""
    return tuple(
        Source(
            file.member,
            family.title_of(file.member),
            file.saved_as,
            file.base,
            file.path,
            file.size,
            file.sha256,
        )
        for family in FAMILIES.values()
        for file in family.files
    )


@dataclass(frozen=True)
class Fetched:
    source: Source
    path: Path
    digest: Digest
    downloaded: bool  # False: the verified file was there already


def plan(choice: str, url: str | None = None, sha256: str | None = None) -> list[Source]:
    """The files to fetch for `choice` (a dataset or "all"). A `url` fetches the one file of
    a single-file dataset from there (a mirror: the published size and checksum still
    apply); a `sha256` replaces the published checksum (a newer release: any size)."""
    base = os.environ.get(BASE_VARIABLE)
    published = published_sources()
    sources = [
        replace(s, base=base.rstrip("/") + "/") if base else s
        for s in published
        if choice in ("all", s.dataset)
    ]
    if url is None and sha256 is None:
        return sources
    given = Option("url") if url is not None else Option("sha256")
    if len(sources) != 1:
        raise UsageError(
            given,
            f" is for one file, and {choice} has {len(sources)}: "
            f"name {listed(single_file_members(), 'or')}",
        )
    (source,) = sources
    if url is not None:
        if urlsplit(url).scheme not in ("http", "https") or not urlsplit(url).hostname:
            raise UsageError(Option("url"), f" takes an http:// or https:// address, not {url!r}")
        source = replace(source, base=url, path="")
    if sha256 is not None:
        if not re.fullmatch(r"[0-9a-fA-F]{64}", sha256):
            raise UsageError(Option("sha256"), f" takes 64 hexadecimal digits, not {sha256!r}")
        source = replace(source, size=None, sha256=sha256.lower())
    return [source]


def download(
    sources: Sequence[Source],
    directory: Path,
    *,
    force: bool = False,
    timeout: float = DEFAULT_TIMEOUT,
    retries: int = DEFAULT_RETRIES,
    progress: Progress | None = None,
) -> Iterator[Fetched]:
    """Fetch each source into `directory`, one after another, yielding each as it is done.
    A file already there that matches its checksum is kept; one that does not is an error
    unless `force`."""
    # Built here, not once per process: its ProxyHandler reads the proxy variables now.
    opener = urllib.request.build_opener()
    for source in sources:
        yield _fetch(source, directory, opener, force, timeout, retries, progress or _silent)


def _silent(_stage: str, _fraction: float) -> None:
    return None


def _fetch(
    source: Source,
    directory: Path,
    opener: urllib.request.OpenerDirector,
    force: bool,
    timeout: float,
    retries: int,
    progress: Progress,
) -> Fetched:
    target = directory / source.file_name
    present = _present(source, target, force)
    if present is not None:
        return present
    part = _PartFile(target.with_name(target.name + ".part"), fresh=force)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with part:
            _transfer_with_retries(source, part, opener, timeout, retries, progress)
            digest = part.finish()
        _check(source, digest)
        os.replace(part.path, target)
    except LockedError:
        raise  # the .part is another process's
    except _Interrupted as failure:
        raise DicesError(failure.message + _left_behind(part)) from None
    except KeyboardInterrupt:
        _left_behind(part)
        raise
    except BaseException as error:
        part.path.unlink(missing_ok=True)
        if isinstance(error, OSError):
            raise DicesError(f"cannot write {part.path}: {system_reason(error)}") from None
        raise
    return Fetched(source, target, digest, downloaded=True)


def _present(source: Source, target: Path, force: bool) -> Fetched | None:
    """The file already in place, if it is the published one (then there is nothing to
    fetch), or if nothing is published to check it against and `force` is not given."""
    try:
        digest = sha256_file(target)
    except FileNotFoundError:
        return None
    except OSError as error:
        raise DicesError(f"cannot read {target}: {system_reason(error)}") from None
    # Without a published checksum, only `force` says that the file there is not wanted.
    if _mismatch(source, digest) is None and not (force and source.sha256 is None):
        return Fetched(source, target, digest, downloaded=False)
    if force:
        return None
    raise DicesError(
        f"{target} is already there and is not the {source.title} file "
        f"({_mismatch(source, digest)}); move it away, or replace it with ",
        Option("force"),
    )


def _mismatch(source: Source, digest: Digest) -> str | None:
    """How `digest` differs from what `source` must be, or None when it does not."""
    if source.size is not None and digest.size != source.size:
        return f"{digest.size:,} bytes, expected {source.size:,}"
    if source.sha256 is not None and digest.sha256 != source.sha256:
        return f"SHA-256 {digest.sha256}, expected {source.sha256}"
    return None


def _check(source: Source, digest: Digest) -> None:
    mismatch = _mismatch(source, digest)
    if mismatch is not None:
        raise DicesError(
            f"{source.url} sent a file that is not the {source.title} file "
            f"({mismatch}); nothing was kept"
        )


class _Interrupted(Exception):
    """The transfer stopped for a reason that trying again may cure."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class _PartFile:
    """`NAME.part`, appended to and hashed as it is written; the bytes of an earlier,
    interrupted run are hashed first (unless `fresh`), so that a resumed file still takes one
    pass. Locked while open: two downloads of one file into one place would mix their bytes."""

    def __init__(self, path: Path, fresh: bool) -> None:
        self.path = path
        self.fresh = fresh
        # The server serves byte ranges of this file; a .part of an earlier run was kept
        # because it did.
        self.resumable = False

    def __enter__(self) -> _PartFile:
        self.handle: BinaryIO = open(self.path, "a+b")  # closed in __exit__
        self.size, self.hash = 0, hashlib.sha256()
        try:
            try:
                fcntl.flock(self.handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise LockedError(
                    f"{self.path} is being downloaded by another dices process; "
                    "wait for it to finish, then run this again"
                ) from None
            if self.fresh:
                self.handle.truncate(0)
            self.handle.seek(0)
            while chunk := self.handle.read(CHUNK):  # appending goes on from here
                self.hash.update(chunk)
                self.size += len(chunk)
            self.resumable = self.size > 0
        except BaseException:
            self.handle.close()
            raise
        return self

    def __exit__(self, *_exc: object) -> None:
        self.handle.close()

    def restart(self) -> None:
        """Drop what was written: the server sends the whole file again."""
        self.handle.truncate(0)
        self.size, self.hash = 0, hashlib.sha256()

    def write(self, chunk: bytes) -> None:
        self.handle.write(chunk)
        self.hash.update(chunk)
        self.size += len(chunk)

    def finish(self) -> Digest:
        self.handle.flush()
        os.fsync(self.handle.fileno())
        return Digest(self.size, self.hash.hexdigest())


def _left_behind(part: _PartFile) -> str:
    """Keep a `.part` that a later run can resume; remove any other. Says which it was."""
    try:
        size = part.path.stat().st_size
    except OSError:
        return ""
    if part.resumable and size:
        return f"; the {size:,} bytes fetched are kept in {part.path} for the next try to resume"
    part.path.unlink(missing_ok=True)
    return ""


def _transfer_with_retries(
    source: Source,
    written: _PartFile,
    opener: urllib.request.OpenerDirector,
    timeout: float,
    retries: int,
    progress: Progress,
) -> None:
    for attempt in range(retries + 1):
        try:
            _transfer(source, written, opener, timeout, progress)
            return
        except _Interrupted:
            if attempt == retries:
                raise
        time.sleep(BACKOFF_SECONDS * 2**attempt)


def _transfer(
    source: Source,
    written: _PartFile,
    opener: urllib.request.OpenerDirector,
    timeout: float,
    progress: Progress,
) -> None:
    """One request for the rest of the file; `_Interrupted` if it stops before the end."""
    host = urlsplit(source.url).hostname or source.url
    while (response := _request(source, written, opener, host, timeout)) is None:
        written.restart()  # the .part holds more than the file has: ask for all of it
    with response:
        _receive(response, source, written, host, timeout, progress)


def _request(
    source: Source,
    written: _PartFile,
    opener: urllib.request.OpenerDirector,
    host: str,
    timeout: float,
) -> HTTPResponse | None:
    """The answer to a request for the bytes `written` lacks; None when the server says
    there are none past them (416), which only a request with a Range can get."""
    url = source.url
    request = urllib.request.Request(
        url, headers={"User-Agent": f"dices/{__version__}", "Accept-Encoding": "identity"}
    )
    if written.size:
        request.add_header("Range", f"bytes={written.size}-")
    try:
        response: HTTPResponse = opener.open(request, timeout=timeout)
        return response
    except urllib.error.HTTPError as error:
        error.close()
        if error.code == 416 and written.size:
            return None
        answer = f"{host} answered {error.code} {error.reason}"
        if error.code in RETRIED_STATUSES:
            raise _Interrupted(f"cannot download {url}: {answer}") from None
        raise DicesError(f"cannot download {url}: {answer}") from None
    except (OSError, HTTPException) as error:  # URLError is an OSError
        raise _Interrupted(_unreachable(host, error, timeout)) from None


def _receive(
    response: HTTPResponse,
    source: Source,
    written: _PartFile,
    host: str,
    timeout: float,
    progress: Progress,
) -> None:
    if response.status == 206:
        written.resumable = True
        start = re.match(r"bytes (\d+)-", response.headers.get("Content-Range", ""))
        if start is None or int(start[1]) != written.size:
            written.restart()
            raise _Interrupted(f"{host} sent the wrong part of {source.url}")
    else:  # the whole file, whatever was asked
        written.resumable = response.headers.get("Accept-Ranges", "").lower() == "bytes"
        written.restart()
    length = response.headers.get("Content-Length")
    end = written.size + int(length) if length and length.isdigit() else source.size
    while True:
        try:
            chunk = response.read(CHUNK)
        except (OSError, HTTPException) as error:
            raise _Interrupted(_broken(host, written, end, error, timeout)) from None
        if not chunk:
            break
        written.write(chunk)
        if source.size is not None and written.size > source.size:
            raise DicesError(
                f"{source.url} sent more than the {source.size:,} bytes of the "
                f"{source.title} file; nothing was kept"
            )
        progress(source.file_name, written.size / end if end else 0.0)
    if end is not None and written.size < end:
        raise _Interrupted(_broken(host, written, end, None, timeout))


def _unreachable(host: str, error: BaseException, timeout: float) -> str:
    reason = error.reason if isinstance(error, urllib.error.URLError) else error
    return f"cannot reach {host}: {_reason(reason, timeout)}; check your network or proxy"


def _broken(
    host: str, written: _PartFile, end: int | None, error: BaseException | None, timeout: float
) -> str:
    of = f" of {end:,}" if end is not None else ""
    why = _reason(error, timeout) if error is not None else "the server closed the connection"
    return f"the download from {host} broke off after {written.size:,}{of} bytes: {why}"


def _reason(error: object, timeout: float) -> str:
    if isinstance(error, TimeoutError):
        return f"no answer within {timeout:g} s"
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    return str(error) or type(error).__name__

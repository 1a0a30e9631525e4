"""Fetch the official dataset files over HTTP(S), verified by size and SHA-256.

Standard library only (`urllib.request`, which takes proxies from http_proxy, https_proxy
and no_proxy), so that downloading needs nothing beyond dices itself.

Each published file declares its sources in order (`dices_cli.families`); they are tried
one after another until one serves the file. An answer other than the file (404, 410, 403
...) moves to the next source at once; connection failures, timeouts and 5xx answers are
retried with exponential back-off first; bytes that are not the published file are
dropped, never kept, and the next source is tried. From each source the file is written to
a `.part` of its own, named by the source's address, so that bytes from one source are
never resumed from another. It is hashed as it is written (one pass) and renamed to `NAME`
only once its size and SHA-256 match. A broken transfer resumes with a Range request when
the server allows it (206); a `.part` is left behind only when a later run can resume it the
same way.

Nothing a server does is trusted to end: no more is written than the published size, else
the announced Content-Length, and never more than `max_size` without a published size; each
source has `deadline` seconds for the whole file, tries included. A `.part` is created
exclusively, never opened through a symbolic link, and must be a regular file with no other
name. What a server says (its reason phrase, a malformed status line) reaches a message with
its control characters escaped.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import socket
import stat
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
from dices_cli.download.network import Deadline, Interrupted, Message, SourceFault
from dices_cli.errors import DicesError, LockedError, Option, UsageError, system_reason
from dices_cli.families import FAMILIES, listed, single_file_members
from dices_cli.read.checksum import Digest, sha256_fd
from dices_cli.read.source import DEFAULT_MAX_SIZE, format_size
from dices_cli.terminal_text import printable

Progress = Callable[[str, float], None]  # (the file being fetched, fraction of it done)
# (the file's title, what its source did, the seconds before the next try): said as it happens
Retrying = Callable[[str, "SourceFailed", float], None]

BASE_VARIABLE = "DICES_DOWNLOAD_BASE"  # a mirror of every file, under the same paths

CHUNK = 1 << 16
BACKOFF_SECONDS = 1.0  # before the first retry; doubled before each next one
DEFAULT_TIMEOUT = 30.0  # seconds without a byte from the server
DEFAULT_DEADLINE = 3600.0  # seconds for one source to serve a whole file, tries included
DEFAULT_RETRIES = 4
RETRIED_STATUSES = (429, 500, 502, 503, 504)
# What http.client refuses in an address, once it is too late to say which option gave it.
_UNSENDABLE = re.compile("[\x00-\x20\x7f]")


@dataclass(frozen=True)
class WantedFile:
    """One file to fetch: where it is published (`urls`, its sources in the order they are
    tried), where it goes under the download directory (`file_name`), and what it must be
    (`size`, `sha256`; None when unpublished). Made from a family's declaration
    (`published_files`), then perhaps pointed at a mirror, which keeps `path`."""

    dataset: str
    title: str
    file_name: str
    urls: tuple[str, ...]
    path: str
    size: int | None
    sha256: str | None


def published_files() -> tuple[WantedFile, ...]:
    """Every published file of every family, as the families declare them, in their order."""
    return tuple(
        WantedFile(
            file.member,
            family.title_of(file.member),
            file.saved_as,
            file.urls,
            file.path,
            file.size,
            file.sha256,
        )
        for family in FAMILIES.values()
        for file in family.files
    )


@dataclass(frozen=True)
class Fetched:
    wanted: WantedFile
    path: Path
    digest: Digest
    url: str | None  # the source that served it; None: the verified file was there already
    # What each source tried before it did, in order (SourceFailed).
    passed: tuple[SourceFailed, ...] = ()


class SourceFailed(DicesError):
    """One source did not serve a file: its address, then what it did; `unreachable` when
    no answer came from it at all (no network, a wrong host, a firewall)."""

    def __init__(self, url: str, did: Message, unreachable: bool = False) -> None:
        super().__init__(printable(url), " ", *did)
        self.unreachable = unreachable


class NoSourceServed(DicesError):
    """Every source of a file failed: what each did, in order."""

    def __init__(self, *message: str | Option, unreachable: bool) -> None:
        super().__init__(*message)
        self.unreachable = unreachable


def plan(choice: str, url: str | None = None, sha256: str | None = None) -> list[WantedFile]:
    """The files to fetch for `choice` (a dataset or "all"). A `url` fetches the one file of
    a single-file dataset from there alone (a mirror: the published size and checksum still
    apply); a `sha256` replaces the published checksum (a newer release: any size)."""
    base = os.environ.get(BASE_VARIABLE)
    wanted = [
        replace(f, urls=(base.rstrip("/") + "/" + f.path,)) if base else f
        for f in published_files()
        if choice in ("all", f.dataset)
    ]
    if url is None and sha256 is None:
        return wanted
    given = Option("url") if url is not None else Option("sha256")
    if len(wanted) != 1:
        raise UsageError(
            given,
            f" is for one file, and {choice} has {len(wanted)}: "
            f"name {listed(single_file_members(), 'or')}",
        )
    (one,) = wanted
    if url is not None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname or _UNSENDABLE.search(url):
            raise UsageError(Option("url"), f" takes an http:// or https:// address, not {url!r}")
        one = replace(one, urls=(url,))
    if sha256 is not None:
        if not re.fullmatch(r"[0-9a-fA-F]{64}", sha256):
            raise UsageError(Option("sha256"), f" takes 64 hexadecimal digits, not {sha256!r}")
        one = replace(one, size=None, sha256=sha256.lower())
    return [one]


def download(
    files: Sequence[WantedFile],
    directory: Path,
    *,
    force: bool = False,
    timeout: float = DEFAULT_TIMEOUT,
    deadline: float = DEFAULT_DEADLINE,
    retries: int = DEFAULT_RETRIES,
    max_size: int = DEFAULT_MAX_SIZE,
    progress: Progress | None = None,
    retrying: Retrying | None = None,
) -> Iterator[Fetched]:
    """Fetch each file into `directory`, one after another, yielding each as it is done.
    A file already there that matches its checksum is kept; one that does not is an error
    unless `force`. `max_size` bounds a file without a published size; `deadline` bounds the
    time each source has for a file, `timeout` each wait for a byte. `retrying` hears of
    each fault that is tried again, before the wait."""
    settings = _Settings(
        force, timeout, deadline, retries, max_size, progress or _silent, retrying or _unheard
    )
    for wanted in files:
        yield _fetch(wanted, directory, settings)


def status(wanted: WantedFile, directory: Path) -> str:
    """Whether `wanted` is in `directory` and is the published file, in words, from the file
    alone (no request is made)."""
    target = directory / wanted.file_name
    try:
        digest = _here(target)
    except DicesError as error:
        return str(error)
    if digest is None:
        return f"not here yet: {target}"
    mismatch = _mismatch(wanted, digest)
    if mismatch is not None:
        return f"here, and not the published file ({mismatch}): {target}"
    if wanted.sha256 is None:
        return f"here, with nothing published to verify (SHA-256 {digest.sha256}): {target}"
    return f"here and verified: {target}"


@dataclass(frozen=True)
class _Settings:
    force: bool
    timeout: float
    deadline: float
    retries: int
    max_size: int
    progress: Progress
    retrying: Retrying


def _silent(_stage: str, _fraction: float) -> None:
    return None


def _unheard(_title: str, _failed: SourceFailed, _wait: float) -> None:
    return None


def _fetch(wanted: WantedFile, directory: Path, settings: _Settings) -> Fetched:
    target = directory / wanted.file_name
    present = _present(wanted, target, settings.force)
    if present is not None:
        return present
    _make_directories(directory, target.parent)
    failed: list[SourceFailed] = []
    for url in wanted.urls:
        try:
            digest = _fetch_from(url, wanted, target, settings)
        except SourceFault as fault:
            failed.append(SourceFailed(url, fault.did, fault.unreachable))
            continue
        for other in wanted.urls:
            if other != url:
                _discard(_part_path(target, other))
        return Fetched(wanted, target, digest, url, tuple(failed))
    if len(failed) == 1:
        raise failed[0]
    said: list[str | Option] = [f"no source served the {wanted.title} file: "]
    for number, failure in enumerate(failed):
        said += ["; " if number else "", *failure.message]
    raise NoSourceServed(*said, unreachable=all(failure.unreachable for failure in failed))


def _make_directories(directory: Path, parent: Path) -> None:
    """Create `parent`, a directory under `directory` (the one the user named, which may be
    a link), each directory between them refused if it is a symbolic link or not a
    directory: a link there would have the files land outside `directory`."""
    at = directory
    try:
        directory.mkdir(parents=True, exist_ok=True)
        for name in parent.relative_to(directory).parts:
            at = at / name
            with contextlib.suppress(FileExistsError):
                at.mkdir()
            found = os.lstat(at)
            if stat.S_ISLNK(found.st_mode):
                raise DicesError(
                    f"{at} is a symbolic link, and dices writes only into directories of its "
                    f"own under {directory}; move it away, then run this again"
                )
            if not stat.S_ISDIR(found.st_mode):
                raise DicesError(
                    f"{at} is {_kind(found) or 'a file'}, not a directory; move it away, then "
                    "run this again"
                )
    except OSError as error:
        raise DicesError(f"cannot create {at}: {system_reason(error)}") from None


def _part_path(target: Path, url: str) -> Path:
    """Where the bytes from `url` are gathered: named by the address, so that a later run
    resumes them only from the same source."""
    source = hashlib.sha256(url.encode()).hexdigest()[:8]
    return target.with_name(f"{target.name}.{source}.part")


def _here(target: Path) -> Digest | None:
    """The size and SHA-256 of the file at `target`; None when there is none. Anything else
    there (a directory, a FIFO, a device) is an error, and is not read: a FIFO would wait
    for a writer, a device might never end."""
    try:
        fd = os.open(target, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as error:
        raise DicesError(f"cannot read {target}: {system_reason(error)}") from None
    try:
        kind = _kind(os.fstat(fd))
        if kind is not None:
            raise DicesError(f"{target} is {kind}, not a file; move it away")
        return sha256_fd(fd)
    except OSError as error:
        raise DicesError(f"cannot read {target}: {system_reason(error)}") from None
    finally:
        os.close(fd)


def _kind(found: os.stat_result) -> str | None:
    """What is not a regular file, in words; None for a regular file."""
    mode = found.st_mode
    if stat.S_ISREG(mode):
        return None
    kinds = {stat.S_ISDIR: "a directory", stat.S_ISFIFO: "a FIFO", stat.S_ISSOCK: "a socket"}
    return next((name for test, name in kinds.items() if test(mode)), "a device")


def _present(wanted: WantedFile, target: Path, force: bool) -> Fetched | None:
    """The file already in place, if it is the published one (then there is nothing to
    fetch), or if nothing is published to check it against and `force` is not given."""
    digest = _here(target)
    if digest is None:
        return None
    # Without a published checksum, only `force` says that the file there is not wanted.
    if _mismatch(wanted, digest) is None and not (force and wanted.sha256 is None):
        return Fetched(wanted, target, digest, url=None)
    if force:
        return None
    raise DicesError(
        f"{target} is already there and is not the {wanted.title} file "
        f"({_mismatch(wanted, digest)}); move it away, or replace it with ",
        Option("force"),
    )


def _mismatch(wanted: WantedFile, digest: Digest) -> str | None:
    """How `digest` differs from what `wanted` must be, or None when it does not."""
    if wanted.size is not None and digest.size != wanted.size:
        return f"{digest.size:,} bytes, expected {wanted.size:,}"
    if wanted.sha256 is not None and digest.sha256 != wanted.sha256:
        return f"SHA-256 {digest.sha256}, expected {wanted.sha256}"
    return None


def _fetch_from(url: str, wanted: WantedFile, target: Path, settings: _Settings) -> Digest:
    """The file from the source at `url`, verified and renamed to `target` (under the lock
    of its `.part`, so that no other run takes the bytes meanwhile); `SourceFault` when
    this source does not serve it."""
    part = _PartFile(_part_path(target, url), fresh=settings.force)
    with Deadline(settings.deadline) as deadline, part:
        try:
            _FromSource(url, wanted, part, deadline, settings).transfer_with_retries()
            digest = part.finish()
            mismatch = _mismatch(wanted, digest)
            if mismatch is not None:
                raise SourceFault(f"served different bytes ({mismatch}), which were not kept")
            os.replace(part.path, target)
        except Interrupted as failure:  # tries or time spent: perhaps resumable later
            did = (*failure.did, _left_behind(part))
            raise SourceFault(*did, unreachable=failure.unreachable) from None
        except KeyboardInterrupt:
            _left_behind(part)
            raise
        except BaseException as error:
            part.remove()
            if isinstance(error, OSError):
                raise DicesError(f"cannot write {target}: {system_reason(error)}") from None
            raise
    return digest


class _PartFile:
    """`NAME.SOURCE.part`, appended to and hashed as it is written; the bytes of an earlier,
    interrupted run are hashed first (unless `fresh`), so that a resumed file still takes one
    pass. Locked while open: two downloads of one file into one place would mix their bytes.

    Created exclusively; an existing one is opened only if it is a regular file with no
    other name, never through a symbolic link: a link or a hard link put there would have
    the download overwrite a file elsewhere."""

    def __init__(self, path: Path, fresh: bool) -> None:
        self.path = path
        self.fresh = fresh
        # The server serves byte ranges of this file; a .part of an earlier run was kept
        # because it did.
        self.resumable = False

    def __enter__(self) -> _PartFile:
        fd = self._open()
        self.handle: BinaryIO = os.fdopen(fd, "r+b")  # closed in __exit__
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
            while chunk := self.handle.read(CHUNK):  # appending goes on from here
                self.hash.update(chunk)
                self.size += len(chunk)
            self.resumable = self.size > 0
        except OSError as error:
            self.handle.close()
            raise DicesError(f"cannot read {self.path}: {system_reason(error)}") from None
        except BaseException:
            self.handle.close()
            raise
        return self

    def _open(self) -> int:
        flags = os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            try:
                return os.open(self.path, flags | os.O_CREAT | os.O_EXCL, 0o666)
            except FileExistsError:
                # Not blocking, should it be a FIFO: it is refused below.
                fd = os.open(self.path, flags | os.O_NONBLOCK)
        except OSError as error:
            if os.path.islink(self.path):  # O_NOFOLLOW's refusal
                raise self._not_ours("a symbolic link") from None
            if os.path.isdir(self.path):
                raise self._not_ours("a directory") from None
            raise DicesError(f"cannot write {self.path}: {system_reason(error)}") from None
        found = os.fstat(fd)
        kind = _kind(found) or ("a file with other names" if found.st_nlink != 1 else None)
        if kind is not None:
            os.close(fd)
            raise self._not_ours(kind)
        return fd

    def _not_ours(self, kind: str) -> DicesError:
        return DicesError(
            f"{self.path} is {kind}, not a download of dices; move it away, then run this again"
        )

    def __exit__(self, *_exc: object) -> None:
        self.handle.close()

    def restart(self) -> None:
        """Drop what was written: the server sends the whole file again."""
        self.handle.truncate(0)
        self.handle.seek(0)
        self.size, self.hash = 0, hashlib.sha256()

    def write(self, chunk: bytes) -> None:
        self.handle.write(chunk)
        self.hash.update(chunk)
        self.size += len(chunk)

    def finish(self) -> Digest:
        self.handle.flush()
        os.fsync(self.handle.fileno())
        return Digest(self.size, self.hash.hexdigest())

    def remove(self) -> None:
        """Remove this run's .part (it is open and locked, so it is ours)."""
        self.path.unlink(missing_ok=True)


def _discard(path: Path) -> None:
    """Remove the .part of an earlier run that is no use now (another source served the
    file), unless it is not a file of ours or another run is writing it."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return  # none, or a link
    try:
        if _kind(os.fstat(fd)) is None:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            path.unlink()
    except OSError:
        pass  # being written, or gone
    finally:
        os.close(fd)


def _left_behind(part: _PartFile) -> str:
    """Keep a `.part` that a later run can resume; remove any other. Says which it was."""
    if part.resumable and part.size:
        return f" (the {part.size:,} bytes fetched are kept in {part.path} to resume)"
    part.remove()
    return ""


class _FromSource:
    """The tries of one source at one file, into its `.part`."""

    def __init__(
        self,
        url: str,
        wanted: WantedFile,
        written: _PartFile,
        deadline: Deadline,
        settings: _Settings,
    ) -> None:
        self.url, self.wanted, self.written = url, wanted, written
        self.deadline, self.settings = deadline, settings
        self.opener = deadline.opener()

    def transfer_with_retries(self) -> None:
        for attempt in range(self.settings.retries + 1):
            try:
                self._transfer()
                return
            except Interrupted as fault:
                last = fault
                if self.deadline.passed:
                    raise self._late(last) from None
                if attempt == self.settings.retries:
                    raise
                wait = min(BACKOFF_SECONDS * 2**attempt, self.deadline.remaining())
                self.settings.retrying(self.wanted.title, SourceFailed(self.url, fault.did), wait)
            time.sleep(wait)
            if self.deadline.passed:
                raise self._late(last)

    def _late(self, last: Interrupted) -> Interrupted:
        """The time is up. A source never reached is said to be that (the network is the
        likelier cause than the deadline), the deadline in second place."""
        allowed = (f"{self.deadline.seconds:g} s that ", Option("deadline"), " allows")
        if last.unreachable:
            return Interrupted(
                *last.did, " (tried again until the ", *allowed, " had passed)", unreachable=True
            )
        return Interrupted("did not serve the whole file within the ", *allowed)

    def _transfer(self) -> None:
        """One request for the rest of the file; `Interrupted` if it stops before the end."""
        while (response := self._request()) is None:
            self.written.restart()  # the .part holds more than the file has: ask for all of it
        with response:
            self._receive(response)

    def _request(self) -> HTTPResponse | None:
        """The answer to a request for the bytes the .part lacks; None when the server says
        there are none past them (416), which only a request with a Range can get."""
        request = urllib.request.Request(
            self.url,
            headers={"User-Agent": f"dices/{__version__}", "Accept-Encoding": "identity"},
        )
        if self.written.size:
            request.add_header("Range", f"bytes={self.written.size}-")
        try:
            response: HTTPResponse = self.opener.open(request, timeout=self.settings.timeout)
            return response
        except urllib.error.HTTPError as error:
            error.close()
            if error.code == 416 and self.written.size:
                return None
            # The reason phrase is the server's own text.
            answer = f"answered {error.code} {printable(str(error.reason))}"
            if error.code in RETRIED_STATUSES:
                raise Interrupted(answer) from None
            raise SourceFault(answer) from None
        except (OSError, HTTPException) as error:  # URLError is an OSError
            reason = error.reason if isinstance(error, urllib.error.URLError) else error
            if isinstance(reason, socket.gaierror):
                # A name that cannot be looked up is no network (or a wrong name): trying
                # again does not cure it.
                raise SourceFault(
                    "could not be reached: no network, or no such host (the name lookup "
                    f"failed: {self._reason(reason)})",
                    unreachable=True,
                ) from None
            raise Interrupted(
                f"could not be reached: {self._reason(reason)}", unreachable=True
            ) from None

    def _receive(self, response: HTTPResponse) -> None:
        written = self.written
        if response.status == 206:
            written.resumable = True
            start = re.match(r"bytes ([0-9]+)-", response.headers.get("Content-Range", ""))
            if start is None or int(start[1]) != written.size:
                written.restart()
                raise Interrupted("sent the wrong part of the file")
        else:  # the whole file, whatever was asked
            written.resumable = response.headers.get("Accept-Ranges", "").lower() == "bytes"
            written.restart()
        length = response.headers.get("Content-Length", "")
        # As http.client reads it, which stops there; not "²", which str.isdigit allows.
        announced = written.size + int(length) if re.fullmatch("[0-9]+", length) else None
        end = announced if announced is not None else self.wanted.size
        limit, bound = self._limit(announced)
        if announced is not None and announced > limit:
            raise SourceFault(f"announced {announced:,} bytes, more than ", *bound)
        while True:
            try:
                chunk = response.read(CHUNK)
            except (OSError, HTTPException) as error:
                raise Interrupted(self._broken(end, error)) from None
            if not chunk:
                break
            if written.size + len(chunk) > limit:  # checked before writing: never past it
                raise SourceFault("sent more than ", *bound, ", which were not kept")
            written.write(chunk)
            fraction = written.size / end if end else 0.0
            self.settings.progress(self.wanted.file_name, fraction)
        # A shut-down connection without a Content-Length ends as if the body did.
        if self.deadline.passed or (end is not None and written.size < end):
            raise Interrupted(self._broken(end, None))

    def _limit(self, announced: int | None) -> tuple[int, Message]:
        """The most bytes this source may send, and that bound in words ("the 100 bytes
        published"): the published size, else the announced size up to `max_size`."""
        size, max_size = self.wanted.size, self.settings.max_size
        if size is not None:
            return size, (f"the {size:,} bytes published",)
        if announced is not None and announced <= max_size:
            return announced, (f"the {announced:,} bytes it announced",)
        return max_size, (
            f"the {format_size(max_size)} that ",
            Option("max_size"),
            " allows for a file without a published size",
        )

    def _broken(self, end: int | None, error: BaseException | None) -> str:
        of = f" of {end:,}" if end is not None else ""
        why = self._reason(error) if error is not None else "the server closed the connection"
        return f"broke off after {self.written.size:,}{of} bytes: {why}"

    def _reason(self, error: object) -> str:
        if isinstance(error, TimeoutError):
            return f"no answer within {self.settings.timeout:g} s"
        if isinstance(error, OSError) and error.strerror:
            return error.strerror
        # A malformed answer's exception quotes the server's own bytes.
        return printable(str(error)) or type(error).__name__

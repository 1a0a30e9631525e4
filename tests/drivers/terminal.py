"""dices under a real pseudo-terminal of a given width, as a person runs it."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from tests.conftest import memory_cap

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


@dataclass(frozen=True)
class Screen:
    code: int
    stdout: str  # without colours, lines ending in \n where it is the terminal
    stderr: str


# The child of `Terminal`: it runs `dices` as the console script does (dices_cli.cli.launch),
# once per request, with the request's stream (stdout, or stderr: where progress bars go) on
# the terminal and the other on the request's file.
_CHILD = r"""
import json, os, struct, sys, fcntl, termios, threading

class Done(BaseException):
    pass

_exit = os._exit

def leave(code):
    if threading.current_thread() is not threading.main_thread():
        _exit(code)  # a run's own watchdog ends the process, as it would end dices
    raise Done(code)

os._exit = leave
from dices_cli.cli import launch

requests, answers = os.fdopen(int(sys.argv[1])), os.fdopen(int(sys.argv[2]), "w")
tty = os.dup(1)
for line in requests:
    request = json.loads(line)
    fcntl.ioctl(tty, termios.TIOCSWINSZ, struct.pack("HHHH", 50, request["width"], 0, 0))
    sys.stdout.flush()
    sys.stderr.flush()
    shown, other = (1, 2) if request["stream"] == "stdout" else (2, 1)
    os.dup2(tty, shown)
    piped = os.open(request["other"], os.O_WRONLY | os.O_TRUNC)
    os.dup2(piped, other)
    os.close(piped)
    before = dict(os.environ)
    os.environ.update(request["env"])
    sys.argv = ["dices", *request["arguments"]]
    try:
        launch.run()
        code = 0
    except Done as done:
        code = done.args[0]
    except SystemExit as done:
        code = done.code if isinstance(done.code, int) else 0
    os.environ.clear()
    os.environ.update(before)
    sys.stdout.flush()
    sys.stderr.flush()
    os.write(tty, request["marker"].encode())
    answers.write(f"{code}\n")
    answers.flush()
"""


class Terminal:
    """One `dices` process on a pseudo-terminal that runs command after command (`run`), as a
    person runs them: stdout (or stderr: where progress bars go) on the terminal, now `width`
    columns wide (so Rich finds the width the way it does for a person: from the terminal,
    not from COLUMNS, asked at each command), the other stream on a file. The terminal's text
    is returned without colours or cursor moves, as it was written. A test whose point is the
    drawing on a terminal, not the process, pays the interpreter's start once. The process
    runs under `memory_cap` (a `sql` statement runs under a time limit); `close` ends it. A
    command that ends the process (a crash) fails its own test; the next command starts a new
    process."""

    MARKER = "\x00\x01end of a dices command\x01\x00"

    def __init__(self) -> None:
        self._piped = tempfile.NamedTemporaryFile()  # noqa: SIM115 (closed by `close`)
        self._start()

    def _start(self) -> None:
        self._leader, follower = pty.openpty()
        requests_read, self._requests = os.pipe()
        self._answers, answers_write = os.pipe()
        environment = {**os.environ, "TERM": "xterm", "NO_COLOR": "1"}
        environment.pop("COLUMNS", None)
        environment.pop("LINES", None)
        with memory_cap():
            self._process = subprocess.Popen(
                [sys.executable, "-c", _CHILD, str(requests_read), str(answers_write)],
                stdin=subprocess.DEVNULL,
                stdout=follower,
                stderr=self._piped,
                env=environment,
                pass_fds=(requests_read, answers_write),
            )
        for fd in (follower, requests_read, answers_write):
            os.close(fd)
        self._answers_file = os.fdopen(self._answers)

    def run(
        self, width: int, *arguments: str, env: dict[str, str] | None = None, stream: str = "stdout"
    ) -> Screen:
        """`dices ARGUMENTS` with `stream` (stdout or stderr) on the terminal, `width` columns
        wide, and `env` set for it."""
        if self._process.poll() is not None:  # ended by the command before
            self._end()
            self._start()
        request = {
            "width": width,
            "arguments": list(arguments),
            "env": env or {},
            "stream": stream,
            "other": self._piped.name,
            "marker": self.MARKER,
        }
        os.write(self._requests, (json.dumps(request) + "\n").encode())
        marker = self.MARKER.encode()
        shown = b""
        while not shown.endswith(marker):
            try:
                chunk = os.read(self._leader, 65536)
            except OSError:  # the terminal is closed: the process has ended
                chunk = b""
            if not chunk:
                self._piped.seek(0)
                raise RuntimeError(
                    f"the terminal's dices process ended: {shown!r} {self._piped.read()!r}"
                )
            shown += chunk
        code = int(self._answers_file.readline())
        self._piped.seek(0)
        piped = self._piped.read().decode("utf-8")
        text = ANSI.sub("", shown[: -len(marker)].decode("utf-8")).replace("\r\n", "\n")
        return Screen(code, text, piped) if stream == "stdout" else Screen(code, piped, text)

    def _end(self) -> None:
        os.close(self._requests)
        self._process.wait()
        self._answers_file.close()
        os.close(self._leader)

    def close(self) -> None:
        self._end()
        self._piped.close()


_SHARED: list[Terminal] = []


@pytest.fixture(scope="session", name="terminal")
def terminal_fixture() -> Iterator[Terminal]:
    """`terminal`: the run's one `Terminal` (each xdist worker's own), for the drawings on a
    terminal of every test module that imports this fixture (`from tests.drivers.terminal
    import terminal_fixture`): the first to ask starts it, the session's end closes it."""
    if not _SHARED:
        _SHARED.append(Terminal())
    yield _SHARED[0]
    if _SHARED:  # each importing module's fixture ends at the session's end: the first closes
        _SHARED.pop().close()

"""dices under a real pseudo-terminal of a given width, as a person runs it."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import tempfile
import termios
from dataclasses import dataclass

from tests.conftest import memory_cap

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


@dataclass(frozen=True)
class Screen:
    code: int
    stdout: str  # without colours, lines ending in \n where it is the terminal
    stderr: str


def on_terminal(
    width: int, *arguments: str, env: dict[str, str] | None = None, stream: str = "stdout"
) -> Screen:
    """`dices ARGUMENTS` with `stream` (stdout, or stderr: where progress bars go) on a
    pseudo-terminal `width` columns wide (so Rich finds the width the way it does for a
    person: from the terminal, not from COLUMNS) and the other stream on a pipe. The
    terminal's text is returned without colours or cursor moves, as it was written. The
    process runs under `memory_cap` (a `sql` statement runs under a time limit)."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 50, width, 0, 0))
    environment = {**os.environ, **(env or {}), "TERM": "xterm", "NO_COLOR": "1"}
    environment.pop("COLUMNS", None)
    environment.pop("LINES", None)
    with tempfile.TemporaryFile() as other, memory_cap():  # a file: a full pipe would stall
        process = subprocess.Popen(
            [sys.executable, "-m", "dices_cli", *arguments],
            stdin=subprocess.DEVNULL,
            stdout=follower if stream == "stdout" else other,
            stderr=follower if stream == "stderr" else other,
            env=environment,
        )
        os.close(follower)
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal is closed once the process has exited
                break
            if not chunk:
                break
            chunks.append(chunk)
        code = process.wait()
        os.close(leader)
        other.seek(0)
        piped = other.read().decode("utf-8")
    shown = ANSI.sub("", b"".join(chunks).decode("utf-8")).replace("\r\n", "\n")
    return Screen(code, shown, piped) if stream == "stdout" else Screen(code, piped, shown)

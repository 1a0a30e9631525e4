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

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


@dataclass(frozen=True)
class Screen:
    code: int
    stdout: str  # what the terminal shows, without colours, lines ending in \n
    stderr: str


def on_terminal(width: int, *arguments: str, env: dict[str, str] | None = None) -> Screen:
    """`dices ARGUMENTS` with stdout on a pseudo-terminal `width` columns wide (so Rich finds
    the width the way it does for a person: from the terminal, not from COLUMNS) and stderr
    on a pipe."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 50, width, 0, 0))
    environment = {**os.environ, **(env or {}), "TERM": "xterm", "NO_COLOR": "1"}
    environment.pop("COLUMNS", None)
    environment.pop("LINES", None)
    with tempfile.TemporaryFile() as stderr:  # a file: a full pipe would stall the run
        process = subprocess.Popen(
            [sys.executable, "-m", "dices_cli", *arguments],
            stdin=subprocess.DEVNULL,
            stdout=follower,
            stderr=stderr,
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
        stderr.seek(0)
        said = stderr.read().decode("utf-8")
    shown = ANSI.sub("", b"".join(chunks).decode("utf-8")).replace("\r\n", "\n")
    return Screen(code, shown, said)

"""Run `dices` commands over and over in one other process, until told to stop.

    python tests/drivers/repeat.py RUNS '[["ingest", "a.csv", ...], ["ingest", "b.csv", ...]]'

The commands run in turn, round and round, RUNS runs in all, each through the command
line's app in this process: a process of its own per run would cost its start-up, which a
test that only needs another process writing or reading beside it does not need. After
each run one JSON line goes to stdout: {"start", "code", "stdout", "stderr"} (start:
`time.monotonic()` when the run began, the caller's clock too on Linux). Closing this
process's stdin stops it after the run under way (before RUNS), so that no run is cut short.
"""

from __future__ import annotations

import json
import select
import subprocess
import sys
import threading
import time
from typing import Any


class Repeating:
    """This script in a process beside the caller, from construction to `stop()` (or the
    end of its `times` runs): `runs` holds each finished run's {"start", "code", "stdout",
    "stderr"} as it comes."""

    def __init__(self, times: int, *commands: list[str]) -> None:
        self.process = subprocess.Popen(
            [sys.executable, __file__, str(times), json.dumps(commands)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.runs: list[dict[str, Any]] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.runs.append(json.loads(line))

    def running(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> list[dict[str, Any]]:
        """Stop after the run under way; every run's result."""
        assert self.process.stdin is not None and self.process.stderr is not None
        self.process.stdin.close()
        code = self.process.wait(120)
        self._reader.join(120)
        assert code == 0, self.process.stderr.read()
        return self.runs


def main() -> None:
    from typer.testing import CliRunner

    from dices_cli.cli.main import app

    times, commands = int(sys.argv[1]), json.loads(sys.argv[2])
    runner = CliRunner()
    for number in range(times):
        start = time.monotonic()
        result = runner.invoke(app, commands[number % len(commands)])
        line = {"code": result.exit_code, "stdout": result.stdout, "stderr": result.stderr}
        line["start"] = start
        print(json.dumps(line), flush=True)
        if select.select([sys.stdin], [], [], 0)[0] and not sys.stdin.read(1):
            return  # stdin closed: stop


if __name__ == "__main__":
    main()

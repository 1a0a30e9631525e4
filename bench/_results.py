"""Where every bench script keeps its figures: one JSON line per run in bench/results/.

A line holds the bench's name, the commit measured (and whether the tree had uncommitted
changes), the time, the machine (cores, load, platform, Python) and the script's own
document: the settings it ran with and its figures (medians, spreads, ratios). The files
are appended to, never rewritten, so a figure can be diffed against any earlier one;
`python bench/summary.py` draws the current table of bench/README.md from them.

`DICES_BENCH_RESULTS=DIR` writes elsewhere (the smoke tests write to a temporary
directory); `DICES_BENCH_RESULTS=-` writes nothing.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DEFAULT_DIRECTORY = HERE / "results"
VARIABLE = "DICES_BENCH_RESULTS"


def _git(*arguments: str) -> str:
    try:
        done = subprocess.run(
            ["git", *arguments], cwd=HERE, capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


# The tree measured: taken when the script starts (it imports this module first), not when
# it ends, as a long run outlives commits made meanwhile.
MEASURED = {
    "commit": _git("rev-parse", "--short=12", "HEAD"),
    "dirty": bool(_git("status", "--porcelain", "--untracked-files=no")),
}


def machine() -> dict[str, Any]:
    """The machine a figure was measured on, as far as it can be seen from inside."""
    try:
        load = [round(value, 2) for value in os.getloadavg()]
    except OSError:
        load = []
    return {
        "cpus": os.cpu_count(),
        "load": load,
        "platform": platform.platform(),
        "python": sys.version.split()[0],
    }


def directory() -> Path | None:
    """Where results go: $DICES_BENCH_RESULTS, else bench/results; None for '-'."""
    chosen = os.environ.get(VARIABLE)
    if chosen == "-":
        return None
    return Path(chosen) if chosen else DEFAULT_DIRECTORY


def append(bench: str, document: dict[str, Any] | list[Any]) -> Path | None:
    """Append one run's `document` (the script's JSON output) to bench/results/BENCH.jsonl.

    Returns the file written, or None when results are switched off.
    """
    folder = directory()
    if folder is None:
        return None
    folder.mkdir(parents=True, exist_ok=True)
    line = {
        "bench": bench,
        **MEASURED,
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "document": document,
    }
    path = folder / f"{bench}.jsonl"
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(line, sort_keys=True, default=str) + "\n")
    print(f"results appended to {path}", file=sys.stderr)
    return path

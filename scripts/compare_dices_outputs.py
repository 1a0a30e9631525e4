"""DICES's outputs from two trees, compared: which are byte-identical, which columns differ.

    git worktree add --detach /tmp/base <commit>
    DICES_SHARED=../shared python scripts/compare_dices_outputs.py --baseline /tmp/base

Each tree (the baseline and this one) ingests the same DICES files with its own code (the
replica files `DICES_SHARED/data/make_replica.py` writes, or `--files`), then runs the
outputs tests/golden/outputs.py names (every canned DICES query, `dices evaluate` of one
predictions file made from the DICES-350 file, the report's numbers) in a process of its
own, with its `dices_cli` first on the path. For each output the script says: identical,
or which columns differ (in how many rows, by at most how much), or that one tree failed.
The report's numbers are compared per section table. `--keep DIR` keeps both outputs.
Exit 0 when the comparison ran (whatever it found), 1 when a tree could not ingest.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import os
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parents[1]
OUTPUTS = HERE / "tests" / "golden" / "outputs.py"


def replica_files(folder: Path) -> list[Path]:
    """The full-size replica DICES-350 and DICES-990 files, written into `folder`."""
    shared = Path(os.environ.get("DICES_SHARED", HERE.parent / "shared"))
    generator = shared / "data" / "make_replica.py"
    if not generator.exists():
        sys.exit(f"the replica generator is not at {generator}: set DICES_SHARED or give --files")
    files = []
    for name in ("350", "990"):
        path = folder / f"dices_{name}.csv"
        subprocess.run([sys.executable, str(generator), name, str(path)], check=True)
        files.append(path)
    return files


def run_tree(tree: Path, files: list[Path], predictions: Path, out: Path) -> float:
    """Ingest `files` and write the outputs into `out`, with `tree`'s dices_cli; the CPU
    seconds the child processes took."""
    environment = {**os.environ, "PYTHONPATH": str(tree.resolve())}
    environment.pop("DICES_DATA", None)
    data = out.parent / f"{out.name}-data"
    before = os.times()
    ingest = [sys.executable, "-m", "dices_cli", "ingest", *map(str, files), "-q"]
    done = subprocess.run(
        [*ingest, "--data", str(data)], env=environment, capture_output=True, text=True
    )
    if done.returncode != 0:
        sys.exit(f"{tree}: ingest failed (exit {done.returncode}): {done.stderr.strip()}")
    command = [sys.executable, str(OUTPUTS), str(data), str(predictions), str(out)]
    subprocess.run([*command, "--tree", str(tree)], env=environment, check=True, stdout=2)
    after = os.times()
    return (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )


def compare(baseline: Path, current: Path) -> list[tuple[str, str, str]]:
    """One row per output: its name, what was found, the details."""
    names = sorted({p.name for p in baseline.iterdir()} | {p.name for p in current.iterdir()})
    rows = []
    for name in names:
        old, new = baseline / name, current / name
        if name.endswith(".error") or not old.exists() or not new.exists():
            which = "baseline" if old.exists() else "current"
            detail = (old if old.exists() else new).read_text(encoding="utf-8").strip()
            if name.endswith(".error"):
                rows.append((name, f"fails in {which}", detail.splitlines()[-1][:160]))
            else:
                rows.append((name, f"only in {which}", ""))
            continue
        if old.read_bytes() == new.read_bytes():
            rows.append((name, "identical", ""))
        elif name.endswith(".csv"):
            rows.append((name, "differs", csv_difference(old, new)))
        else:
            rows.append((name, "differs", report_difference(old, new)))
    return rows


def csv_difference(old: Path, new: Path) -> str:
    before = list(csv.reader(io.StringIO(old.read_text(encoding="utf-8"))))
    after = list(csv.reader(io.StringIO(new.read_text(encoding="utf-8"))))
    return table_difference(before[0], before[1:], after[0], after[1:])


def table_difference(
    old_columns: list[str], old_rows: list[Any], new_columns: list[str], new_rows: list[Any]
) -> str:
    """Columns added, removed, and those whose values differ (rows matched in order)."""
    said = []
    if added := [c for c in new_columns if c not in old_columns]:
        said.append(f"added: {', '.join(added)}")
    if removed := [c for c in old_columns if c not in new_columns]:
        said.append(f"removed: {', '.join(removed)}")
    if len(old_rows) != len(new_rows):
        said.append(f"rows {len(old_rows)} -> {len(new_rows)}")
    changed = []
    for column in (c for c in old_columns if c in new_columns):
        i, j = old_columns.index(column), new_columns.index(column)
        pairs = [(a[i], b[j]) for a, b in zip(old_rows, new_rows, strict=False) if a[i] != b[j]]
        if pairs:
            largest = max((_gap(a, b) for a, b in pairs), default=math.nan)
            by = "" if math.isnan(largest) else f", up to {largest:.3g}"
            changed.append(f"{column} ({len(pairs)} rows{by})")
    if changed:
        said.append(f"values: {', '.join(changed)}")
    if not said and old_columns != new_columns:
        said.append("columns reordered")
    return "; ".join(said) or "same values, other bytes"


def _gap(a: Any, b: Any) -> float:
    try:
        gap = abs(float(a) - float(b))
    except (TypeError, ValueError):
        return math.nan
    return gap if math.isfinite(gap) else math.nan


def report_difference(old: Path, new: Path) -> str:
    """Which of the report's tables differ, and how."""
    tables = [_tables(old), _tables(new)]
    said = []
    for key in dict.fromkeys([*tables[0], *tables[1]]):
        if key not in tables[0] or key not in tables[1]:
            said.append(f"{' '.join(key)}: only in {'current' if key in tables[1] else 'baseline'}")
        elif tables[0][key] != tables[1][key]:
            (old_columns, old_rows), (new_columns, new_rows) = tables[0][key], tables[1][key]
            difference = table_difference(old_columns, old_rows, new_columns, new_rows)
            said.append(f"{' '.join(key)}: {difference}")
    return " | ".join(said) or "same tables, other bytes"


def _tables(path: Path) -> dict[tuple[str, ...], Any]:
    tables: dict[tuple[str, ...], Any] = defaultdict(lambda: [[], []])
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record[2:3] == ["columns"]:
            tables[(record[0], record[1])][0] = record[3]
        elif record[2:3] == ["row"]:
            tables[(record[0], record[1])][1].append(record[3])
        else:
            tables[(record[0], record[1])][1].append(record[2:])
    return dict(tables)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", type=Path, required=True, help="the older tree")
    parser.add_argument("--files", type=Path, nargs=2, help="DICES-350 and DICES-990 files")
    parser.add_argument("--keep", type=Path, help="keep both trees' outputs in this folder")
    arguments = parser.parse_args()
    sys.path.insert(0, str(OUTPUTS.parent))
    from outputs import predictions as make_predictions

    with tempfile.TemporaryDirectory() as scratch:
        folder = arguments.keep or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        files = list(arguments.files) if arguments.files else replica_files(Path(scratch))
        predictions = make_predictions(files[0], folder / "predictions.csv")
        seconds = {}
        for label, tree in (("baseline", arguments.baseline), ("current", HERE)):
            seconds[label] = run_tree(tree, files, predictions, folder / label)
        rows = compare(folder / "baseline", folder / "current")
    print(f"baseline {arguments.baseline} against {HERE}")
    print(f"CPU: baseline {seconds['baseline']:.1f} s, current {seconds['current']:.1f} s\n")
    print("| output | found | details |\n|---|---|---|")
    for name, found, detail in rows:
        print(f"| {name} | {found} | {detail.replace('|', '/')} |")
    same = sum(found == "identical" for _, found, _ in rows)
    print(f"\n{same} of {len(rows)} outputs byte-identical")


if __name__ == "__main__":
    main()

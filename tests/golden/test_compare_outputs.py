"""scripts/compare_dices_outputs.py's comparison: identical files, changed and added columns,
a failing output, the report's tables."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "compare_dices_outputs.py"


def script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("compare_dices_outputs", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def report(rows: list[list[object]]) -> str:
    lines = [["shares", "figure 1", "columns", ["group", "share"]]]
    lines += [["shares", "figure 1", "row", row] for row in rows]
    return "".join(json.dumps(line) + "\n" for line in lines)


def test_each_output_is_said_identical_or_how_it_differs(tmp_path: Path) -> None:
    old, new = tmp_path / "baseline", tmp_path / "current"
    old.mkdir()
    new.mkdir()
    (old / "same.csv").write_text("a,b\n1,x\n", encoding="utf-8")
    (new / "same.csv").write_text("a,b\n1,x\n", encoding="utf-8")
    (old / "moved.csv").write_text("a,b,c\n1,x,2\n3,y,4\n", encoding="utf-8")
    (new / "moved.csv").write_text("a,b,d\n1.5,x,0\n3,z,0\n", encoding="utf-8")
    (old / "fails.csv").write_text("a\n1\n", encoding="utf-8")
    (new / "fails.csv.error").write_text("exit 2\nError: no such option\n", encoding="utf-8")
    (old / "report-numbers.jsonl").write_text(report([["a", 0.5]]), encoding="utf-8")
    (new / "report-numbers.jsonl").write_text(report([["a", 0.25]]), encoding="utf-8")
    assert script().compare(old, new) == [
        ("fails.csv", "only in baseline", ""),
        ("fails.csv.error", "fails in current", "Error: no such option"),
        ("moved.csv", "differs", "added: d; removed: c; values: a (1 rows, up to 0.5), b (1 rows)"),
        ("report-numbers.jsonl", "differs", "shares figure 1: values: share (1 rows, up to 0.25)"),
        ("same.csv", "identical", ""),
    ]

"""The text of a draft declaration (`dices describe`): the files' roles and the labels'
scales as TOML, with what was guessed and what could not be decided as comments. Text from
the data is quoted as TOML strings, and escaped in comments, so no column name can add a
key."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import polars as pl

from dices_cli.families.declaration import stored_name
from dices_cli.formats.declared.guess_scale import GuessedScale


@dataclass
class DescribedFile:
    """One file described: its format, role, id columns and the columns of each role."""

    name: str
    format: str
    rows: int
    columns: list[str]
    role: str = "ratings"
    item: str | None = None
    rater: str | None = None
    roles: dict[str, list[str]] = field(default_factory=dict)
    frame: pl.DataFrame | None = None


def draft_text(
    dataset: str,
    files: list[DescribedFile],
    scales: dict[str, GuessedScale],
    counts: dict[str, int],
    guessed: list[str],
    undecided: list[str],
    several: bool,
) -> str:
    names = _commented(" ".join(f.name for f in files))
    lines = [
        f"# A draft declaration written by `dices describe` from {names}.",
        "# Check each guess, then give this file to dices ingest as the files' declaration.",
        "# Guessed:",
        *(f"#   {_commented(g)}" for g in guessed),
    ]
    if undecided:
        lines += ["# Could not decide (edit the draft where it says UNDECIDED):"]
        lines += [f"#   {_commented(u)}" for u in undecided]
    lines += [
        "",
        "[[dataset]]",
        f"name = {_quoted(dataset)}",
        f"title = {_quoted(dataset)}",
        f"description = {_quoted(f'drafted by dices describe from {names}')}",
    ]
    if counts:
        lines += [
            "# Counted from the files described: ingest warns when it stores other counts.",
            "published = { " + ", ".join(f"{k} = {v}" for k, v in counts.items()) + " }",
        ]
    for one in files:
        lines += ["", "[[dataset.file]]"]
        if one.role != "ratings":
            lines.append(f"role = {_quoted(one.role)}")
        lines.append(f"format = {_quoted(one.format)}")
        if several:
            lines.append(f"match = {_quoted(_escaped_glob(one.name))}")
        if one.role != "raters":
            lines.append(
                f"item = {_quoted(one.item)}"
                if one.item
                else '# UNDECIDED: item = "COLUMN"  (the item id)'
            )
        if one.role != "items":
            lines.append(
                f"rater = {_quoted(one.rater)}"
                if one.rater
                else '# UNDECIDED: rater = "COLUMN"  (the rater id)'
            )
        for role, columns in one.roles.items():
            if columns:
                lines.append(f"{role} = {_columns(columns)}")
            elif role == "labels" and one.role == "ratings":
                lines.append('# UNDECIDED: labels = ["COLUMN"]')
    for label, scale in scales.items():
        lines += ["", f"[dataset.scales.{label}]", f"kind = {_quoted(scale.kind)}"]
        lines.append(f"values = {_array(scale.values)}")
        if scale.missing:
            lines.append(f"missing = {_array(scale.missing)}")
        if scale.positive:
            lines.append(f"positive = {_array(scale.positive)}")
        if scale.suggested:
            lines.append(f"# positive = {_array(scale.suggested)}  # for a binary view: check")
    return "\n".join(lines) + "\n"


def _commented(text: str) -> str:
    """Text from the data as a TOML comment holds it: no control character ends the line."""
    return re.sub(r"[\x00-\x08\x0a-\x1f\x7f]", lambda m: f"\\x{ord(m.group()):02x}", text)


def _escaped_glob(name: str) -> str:
    return re.sub(r"([*?\[])", r"[\1]", name)


def _quoted(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _array(values: Sequence[str | int | float]) -> str:
    return "[" + ", ".join(_quoted(v) if isinstance(v, str) else repr(v) for v in values) + "]"


def _columns(columns: list[str]) -> str:
    """A role's columns: a list when each stored name is unique, else a table of names."""
    stored: dict[str, str] = {}
    for column in columns:
        name = stored_name(column)
        while name in stored or name in ("item_id", "rater_id"):
            name = f"{name}_2"
        stored[name] = column
    if all(stored_name(c) == n for n, c in stored.items()):
        return _array(columns)
    return "{ " + ", ".join(f"{n} = {_quoted(c)}" for n, c in stored.items()) + " }"

"""Declared datasets as registry entries: each `[[dataset]]` of a declaration file becomes a
`Family` of one stored dataset, found as DICES and ProsocialDialog are (`dices_cli.families`).

The built-in declarations are the TOML files in `dices_cli/families/declared/`; a user's own
is registered when `dices ingest --declaration FILE` stores its data, and kept in the data
directory (`DIR/.families/`) so that every later command over that directory knows it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from dices_cli.families.family import Family, SourceFile

if TYPE_CHECKING:
    from dices_cli.families.declaration import DatasetDeclaration, FileSpec

BUILT_IN = Path(__file__).with_name("declared")
# Where a data directory keeps the declarations of what was ingested into it.
USER_FOLDER = ".families"
TABLES = ("items", "raters", "ratings")
# The canned queries written for any declared dataset (sql/declared/*.sql).
QUERIES = (
    "overview",
    "label-by-group",
    "label-distribution",
    "item-distribution",
    "agreement",
    "group-disagreement",
)
# The queries of a declared dataset whose items hold a reference label (experts' gold).
REFERENCE_QUERIES = ("gold-vs-crowd", "gold-vs-crowd-items")


def built_in() -> list[DatasetDeclaration]:
    """Every dataset the package's own declaration files declare, in file-name order."""
    from dices_cli.families.declaration import read_declaration

    return [d for path in sorted(BUILT_IN.glob("*.toml")) for d in read_declaration(path)]


def family_from(declared: DatasetDeclaration) -> Family:
    """The registry entry of one declared dataset."""
    return Family(
        name=declared.name,
        title=declared.title,
        members=(declared.name,),
        files=tuple(
            SourceFile(
                Path(spec.source.saved_as).name,
                declared.name,
                0,
                spec.description or f"{declared.title}: the {spec.role}",
                (),
                spec.source.saved_as,
                size=spec.source.size,
                sha256=spec.source.sha256,
                folder=str(Path(spec.source.saved_as).parent).removeprefix("."),
                addresses=(spec.source.url,),
            )
            for spec in declared.files
            if spec.source is not None
        ),
        recognised_by=f"the columns of its declaration ({declared.origin})",
        recognises=recogniser(declared),
        validates="dices_cli.formats.declared.ingest:validate_declared",
        ingests="dices_cli.formats.declared.ingest:ingest_declared",
        tables=TABLES,
        entities={
            "items": "one item (what raters rated), its text and attributes",
            "raters": "one rater and their attributes",
            "ratings": "one rater's labels for one item",
        },
        enums={},
        published={declared.name: dict(declared.published)},
        manifest={"sources": list, "counts": {"items": int, "raters": int}},
        queries=QUERIES + (REFERENCE_QUERIES if declared.references else ()),
        has_raters=declared.has_raters,
        has_demographics=declared.has_demographics,
        has_gold=bool(declared.references),
        declared=declared,
    )


def recogniser(declared: DatasetDeclaration) -> Callable[[bytes], bool]:
    """Whether a file's first bytes are one of `declared`'s files: a CSV or TSV header, or
    the first JSON Lines object, with every column its declaration reads, or a JSON text
    with each of its keys; and every text the declaration says it contains. A Parquet file
    is named, never recognised (its columns are at its end)."""

    def recognises(first: bytes) -> bool:
        return any(_file_recognises(spec, first) for spec in declared.files)

    return recognises


def _file_recognises(spec: FileSpec, first: bytes) -> bool:
    import csv
    import json

    if not all(text.encode() in first for text in spec.contains):
        return False
    required = spec.required()
    kind = spec.format or sniffed_format(first)
    line = first.split(b"\n", 1)[0].rstrip(b"\r").decode("utf-8", "replace")
    if kind in ("csv", "tsv"):
        try:
            header = next(csv.reader([line], delimiter="\t" if kind == "tsv" else ","), [])
        except csv.Error:  # a header the csv module refuses (a lone CR in it) is no match
            return False
        return set(required) <= {cell.strip() for cell in header}
    if kind == "jsonl":
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            return False
        return isinstance(record, dict) and set(required) <= set(record)
    if kind == "json":
        return all(json.dumps(key).encode() in first for key in required)
    return False


def sniffed_format(first: bytes) -> str:
    import json

    start = first.lstrip()[:1]
    if start == b"[":
        return "json"
    if start == b"{":
        try:
            json.loads(first.split(b"\n", 1)[0])
        except (ValueError, RecursionError):
            return "json"
        return "jsonl"
    if first.startswith(b"PAR1"):
        return "parquet"
    line = first.split(b"\n", 1)[0]
    return "tsv" if line.count(b"\t") > line.count(b",") else "csv"


def user_declarations(root: Path) -> list[Path]:
    """The declaration files a data directory keeps."""
    folder = root / USER_FOLDER
    return sorted(folder.glob("*.toml")) if folder.is_dir() else []

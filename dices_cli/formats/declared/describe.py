"""A draft declaration for files dices does not know (`dices describe FILE...`).

Each file is read whole, every cell as text, and its columns are given roles:

- the item id and the rater id by their names (item, comment, instance, text ... id; rater,
  annotator, worker, user ... id);
- the labels by their names (label, rating, score, annotation, or a task such as toxicity or
  offensiveness); with none so named, the one column that varies within items and within
  raters and holds few values;
- a column with one value per rater: a rater attribute; one value per item: the item's text
  (a long, varied text, or a text-like name) or an item attribute; one value in every row:
  left out; any other column: an answer, stored as text.

Each label's scale is read from its values (`guess_scale`), and the draft written as TOML
(`draft_toml`).

The draft says, in TOML comments, what was guessed and what could not be decided. A file
with a rater id and no item id is a raters file; one with an item id and no rater id, an
items file.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any

import polars as pl

from dices_cli.errors import DicesError, InvalidInputError, Option, UsageError
from dices_cli.families.declaration import (
    EXTENSIONS,
    NAME,
    RESERVED_NAMES,
    DatasetDeclaration,
    FileSpec,
    parse_declaration,
    stored_name,
)
from dices_cli.formats.declared.draft_toml import DescribedFile, draft_text
from dices_cli.formats.declared.guess_scale import MOST_LEVELS, GuessedScale, scale_of
from dices_cli.formats.declared.read import ROW, read_file
from dices_cli.problems import Report
from dices_cli.read.source import DEFAULT_MAX_SIZE, Source, open_source


def _words_of(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Name words (a column's name split at _, -, spaces and case changes) that say a role.
ITEM_WORDS = _words_of(
    "item comment instance text post tweet message conversation dialog dialogue sentence "
    "example sample document doc question prompt utterance thread"
)
RATER_WORDS = _words_of(
    "rater annotator worker user labeler labeller coder participant respondent judge"
)
# Role words that name an id column alone ("user"), without an id word ("user_id").
ALONE_WORDS = _words_of("item instance rater annotator worker user labeler labeller coder")
ID_WORDS = frozenset({"id", "ids", "key", "idx", "index", "no", "num", "number"})
LABEL_WORDS = _words_of(
    "label labels rating ratings score annotation annotations answer judgement judgment "
    "class toxicity toxic offensiveness offensive offense hate hateful hatespeech abuse "
    "abusive aggression aggressive insult threat obscene profanity sentiment sarcasm "
    "sarcastic irony misogyny sexism sexist racism racist politeness polite safety "
    "unsafe safe harm harmful harmfulness stance emotion humor humour bias biased "
    "respect dehumanize violence genocide disrespect"
)
TEXT_WORDS = _words_of(
    "text comment content body sentence tweet post message utterance prompt response "
    "conversation context title document passage"
)
# A column whose one-per-item values are this long on average (and mostly distinct) is text.
TEXT_LENGTH = 40


@dataclass
class Draft:
    """A draft declaration: its TOML text, what was guessed, and what could not be decided
    (`complete`: whether it names an item id, a rater id and a label wherever it must)."""

    text: str
    guessed: list[str]
    undecided: list[str]
    complete: bool


def describe(
    paths: Sequence[Path], name: str | None = None, max_size: int = DEFAULT_MAX_SIZE
) -> Draft:
    """The draft declaration of the dataset `paths` hold (one file, or several joined by
    their item and rater ids), named `name` (else after the first file)."""
    if not paths:
        raise UsageError("give the files to describe")
    for path in paths:
        if not path.exists():
            raise UsageError(f"'{path}' does not exist")
        if path.is_dir():
            raise UsageError(f"'{path}' is a directory: give the files to describe")
    dataset = _dataset_name(name, paths[0])
    guessed: list[str] = []
    undecided: list[str] = []
    several = len(paths) > 1
    files = [_describe_file(path, max_size, several, guessed, undecided) for path in paths]
    if not any(f.role == "ratings" for f in files):
        undecided.append(
            "no file holds ratings (an item id, a rater id and a label in one row): give the "
            "ratings file too"
        )
    scales = _scales(files, guessed, undecided)
    counts = _counts(files)
    text = draft_text(dataset, files, scales, counts, guessed, undecided, several)
    complete = all(
        (f.role == "items" or f.rater) and (f.role == "raters" or f.item) for f in files
    ) and any(f.role == "ratings" and f.roles.get("labels") for f in files)
    if complete:
        _check(text, dataset)
    return Draft(text, guessed, undecided, complete)


def _dataset_name(name: str | None, first: Path) -> str:
    if name is not None:
        if not NAME.fullmatch(name) or name in RESERVED_NAMES:
            raise UsageError(
                Option("name"),
                f" {name!r} is not a dataset name: use a lower-case letter, then "
                "lower-case letters, digits and _ (at most 40; not all or auto)",
            )
        return name
    stem = PurePath(first.name.removesuffix(".gz")).stem
    made = stored_name(stem).lower()[:40].strip("_") or "dataset"
    made = made if made[0].isalpha() else f"d_{made}"[:40]
    return f"{made}_data"[:40] if made in RESERVED_NAMES else made


def _describe_file(
    path: Path, max_size: int, several: bool, guessed: list[str], undecided: list[str]
) -> DescribedFile:
    """One file's roles; of `several` files, one without an item id (a rater id) is the
    raters' (the items'), and one file alone is the ratings'."""
    fmt = _format_of(path)
    with open_source(path, max_size) as source:
        if fmt == "parquet" and not source.read(4).startswith(b"PAR1"):
            raise InvalidInputError(
                f"{path} is not a Parquet file (its name ends in .parquet)", Report(str(path), "")
            )
        frame = _json_frame(source, fmt) if fmt in ("json", "jsonl") else _table_frame(source, fmt)
    if frame.width == 0 or frame.height == 0:
        raise InvalidInputError(f"{path} holds no records to describe", Report(str(path), ""))
    frame = frame.select(
        pl.col(c).str.strip_chars().replace("", None) for c in frame.columns if c != ROW
    )
    one = DescribedFile(path.name, fmt, frame.height, frame.columns, frame=frame)
    said = f"{path.name}: "
    one.item = _id_column(one, frame, ITEM_WORDS, "item", said, guessed, undecided)
    one.rater = _id_column(one, frame, RATER_WORDS, "rater", said, guessed, undecided)
    if several and one.rater and not one.item:
        one.role = "raters"
        undecided[:] = [u for u in undecided if not u.startswith(f"{said}the item id")]
        guessed.append(f"{said}a raters file (a rater id and no item id)")
    elif several and one.item and not one.rater and not _label_columns(one, frame):
        one.role = "items"
        undecided[:] = [u for u in undecided if not u.startswith(f"{said}the rater id")]
        guessed.append(f"{said}an items file (an item id and no rater id)")
    _other_roles(one, frame, said, guessed, undecided)
    return one


def _format_of(path: Path) -> str:
    lowered = path.name.lower().removesuffix(".gz")
    found = next((f for e, f in EXTENSIONS.items() if lowered.endswith(e)), None)
    if found is not None:
        return found
    try:
        with path.open("rb") as handle:
            first = handle.read(1 << 12)
    except OSError:
        return "csv"  # the reader says why it cannot be read
    from dices_cli.families.registered import sniffed_format

    return sniffed_format(first)


def _table_frame(source: Source, fmt: str) -> pl.DataFrame:
    whole = FileSpec(
        role="items",
        format=fmt,
        layout="long",
        match="*",
        item=(),
        rater=None,
        labels={},
        text={},
        item_attributes={},
        rater_attributes={},
        answers={},
    )
    report = Report(source.name, "")
    read = read_file(source, whole, fmt, report)
    if report.errors:
        first = report.errors[0]
        where = f"line {first.line}: " if first.line else ""
        raise InvalidInputError(
            f"{source.name} is not a table dices can describe: {where}{first.message}", report
        )
    return read.frame


def _json_frame(source: Source, fmt: str) -> pl.DataFrame:
    """The records of a JSON Lines file, or of a JSON array or object of records, with each
    value as text (an object's fields as outer/inner; a record key as "key")."""
    with source.open_text() as handle:
        data = handle.read().decode("utf-8", "replace")
    try:
        if fmt == "jsonl":
            records = [json.loads(line) for line in data.splitlines() if line.strip()]
        else:
            parsed = json.loads(data)
            if isinstance(parsed, dict):
                records = [{"key": k, **v} if isinstance(v, dict) else v for k, v in parsed.items()]
            else:
                records = parsed if isinstance(parsed, list) else [parsed]
    except (ValueError, RecursionError) as error:
        raise InvalidInputError(
            f"{source.name} is not valid JSON: {error}", Report(source.name, "")
        ) from None
    rows = []
    for record in records:
        if not isinstance(record, dict):
            raise InvalidInputError(
                f"{source.name} holds a record that is not a JSON object", Report(source.name, "")
            )
        rows.append(dict(_flat(record)))
    columns = list(dict.fromkeys(c for row in rows for c in row))
    return pl.DataFrame(
        {c: [row.get(c) for row in rows] for c in columns},
        schema=dict.fromkeys(columns, pl.String),
    )


def _flat(record: dict[str, Any], prefix: str = "") -> Iterable[tuple[str, str | None]]:
    for key, value in record.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and not prefix:
            yield from _flat(value, f"{name}/")
        elif value is None or isinstance(value, str):
            yield name, value
        elif isinstance(value, bool):
            yield name, "true" if value else "false"
        elif isinstance(value, int | float):
            yield name, str(value)
        else:
            yield name, json.dumps(value, ensure_ascii=False)


def _words(column: str) -> list[str]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", column.rsplit("/", 1)[-1])
    return [w for w in re.split(r"[^A-Za-z0-9]+", spaced.lower()) if w]


def _id_column(
    one: DescribedFile,
    frame: pl.DataFrame,
    words: frozenset[str],
    noun: str,
    said: str,
    guessed: list[str],
    undecided: list[str],
) -> str | None:
    """The column named like an id of `noun`s (a role word and an id word, or the role word
    alone), the one with the fewest empty cells first, then the first."""
    taken = {one.item, one.rater}
    named = []
    for column in one.columns:
        parts = _words(column)
        if column in taken or not parts or not set(parts) & words:
            continue
        if set(parts) <= words | ID_WORDS and (set(parts) & (ID_WORDS | ALONE_WORDS)):
            named.append(column)
    if not named and noun == "item" and "id" in [c.lower() for c in one.columns]:
        named = [c for c in one.columns if c.lower() == "id"]
    if not named:
        hint = (
            "item/comment/instance/text id" if noun == "item" else "rater/annotator/worker/user id"
        )
        undecided.append(
            f"{said}the {noun} id: no column's name looks like one ({hint}); name it with "
            f'{noun} = "COLUMN"'
        )
        return None
    named.sort(key=lambda c: frame[c].null_count())
    chosen = named[0]
    count = frame[chosen].drop_nulls().n_unique()
    guessed.append(f"{said}{noun} id: {chosen} (its name; {count:,} {noun}s)")
    if empty := frame[chosen].null_count():
        undecided.append(
            f"{said}{empty:,} {'row has' if empty == 1 else 'rows have'} no {noun} id "
            f"({chosen}): ingest refuses the file "
            "unless it is given a file for the rejected rows"
        )
    for other in named[1:]:
        if _same_grouping(frame, chosen, other):
            continue
        undecided.append(
            f"{said}the {noun} id: {chosen} and {other} both look like one and do not name "
            f"the same {noun}s; {chosen} chosen"
        )
    return chosen


def _same_grouping(frame: pl.DataFrame, one: str, other: str) -> bool:
    pairs = frame.select(one, other).unique().height
    return pairs == frame[one].n_unique() == frame[other].n_unique()


def _constant_within(frame: pl.DataFrame, key: str | None, columns: list[str]) -> set[str]:
    """The columns with at most one value (nulls aside) for every value of `key`."""
    if key is None or not columns:
        return set()
    most = (
        frame.filter(pl.col(key).is_not_null())
        .group_by(key)
        .agg(pl.col(c).drop_nulls().n_unique() for c in columns)
        .select(pl.col(c).max() for c in columns)
    )
    return {c for c in columns if (most[c][0] or 0) <= 1}


def _label_columns(one: DescribedFile, frame: pl.DataFrame) -> list[str]:
    return [
        c
        for c in one.columns
        if c not in (one.item, one.rater)
        and set(_words(c)) & LABEL_WORDS
        and not set(_words(c)) & ID_WORDS
    ]


def _other_roles(
    one: DescribedFile, frame: pl.DataFrame, said: str, guessed: list[str], undecided: list[str]
) -> None:
    rest = [c for c in one.columns if c not in (one.item, one.rater)]
    per_rater = _constant_within(frame, one.rater, rest)
    per_item = _constant_within(frame, one.item, rest)
    roles: dict[str, list[str]] = {
        r: [] for r in ("labels", "text", "item_attributes", "rater_attributes", "answers")
    }
    labels = _label_columns(one, frame) if one.role == "ratings" else []
    if one.role == "ratings" and not labels:
        varying = [
            c
            for c in rest
            if c not in per_rater | per_item and 1 < frame[c].n_unique() <= MOST_LEVELS + 1
        ]
        if len(varying) == 1:
            labels = varying
            guessed.append(
                f"{said}label: {varying[0]} (no column is named as a label; it is the one "
                "that varies within items and within raters)"
            )
        else:
            among = f" (perhaps one of {', '.join(varying)})" if varying else ""
            undecided.append(
                f"{said}the label: no column's name looks like one (label, rating, score, "
                f'annotation, toxicity ...){among}; name it with labels = ["COLUMN"]'
            )
    elif labels:
        guessed.append(f"{said}labels: {', '.join(labels)} (their names)")
    for column in rest:
        values = frame[column].drop_nulls()
        if values.n_unique() <= 1 and (one.item or one.rater):
            held = f"one value ({values[0]!r})" if values.len() else "no value"
            guessed.append(f"{said}{column} holds {held} in every row: left out")
            continue
        if column in labels:
            many = frame[column].drop_nulls().n_unique()
            if many > MOST_LEVELS:
                undecided.append(
                    f"{said}{column} is named as a label but holds {many:,} values: stored "
                    "as an answer (text); to read it as a label, move it to labels and "
                    "declare its scale"
                )
                roles["answers"].append(column)
            else:
                roles["labels"].append(column)
            continue
        if one.role == "raters" or (column in per_rater and column not in per_item):
            roles["rater_attributes"].append(column)
        elif one.role == "items" or column in per_item:
            is_text = set(_words(column)) & TEXT_WORDS or _long_text(values)
            roles["text" if is_text else "item_attributes"].append(column)
            if column in per_rater:
                guessed.append(
                    f"{said}{column} has one value per item and one per rater: taken as an item's"
                )
        else:
            roles["answers"].append(column)
    for role, noun in (
        ("text", "text"),
        ("item_attributes", "item attributes (one value per item)"),
        ("rater_attributes", "rater attributes (one value per rater)"),
        ("answers", "answers, stored as text (they vary by rating)"),
    ):
        if roles[role]:
            guessed.append(f"{said}{noun}: {', '.join(roles[role])}")
    one.roles = roles


def _long_text(values: pl.Series) -> bool:
    if values.is_empty():
        return False
    mean = values.str.len_chars().mean()
    return isinstance(mean, float) and mean >= TEXT_LENGTH and values.n_unique() * 2 > values.len()


def _scales(
    files: list[DescribedFile], guessed: list[str], undecided: list[str]
) -> dict[str, GuessedScale]:
    seen: dict[str, list[pl.Series]] = {}
    for one in files:
        assert one.frame is not None
        for column in one.roles.get("labels", []):
            seen.setdefault(stored_name(column), []).append(one.frame[column].drop_nulls())
    return {
        label: scale_of(label, pl.concat(parts).unique().to_list(), guessed, undecided)
        for label, parts in seen.items()
    }


def _counts(files: list[DescribedFile]) -> dict[str, int]:
    """The counts ingest will store, of what the files' ids say (none of an undecided id)."""
    items: set[str] = set()
    raters: set[str] = set()
    ratings = 0
    for one in files:
        assert one.frame is not None
        frame = one.frame
        if one.role == "ratings" and one.item and one.rater:
            keyed = frame.filter(pl.col(one.item).is_not_null() & pl.col(one.rater).is_not_null())
            ratings += keyed.height
        if one.item:
            items.update(frame[one.item].drop_nulls().to_list())
        if one.rater:
            raters.update(frame[one.rater].drop_nulls().to_list())
    counts = {"items": len(items), "raters": len(raters), "ratings": ratings}
    return {name: count for name, count in counts.items() if count}


def _check(text: str, dataset: str) -> list[DatasetDeclaration]:
    """The draft, parsed as ingest will parse it: a draft that does not is our bug."""
    import tomllib

    try:
        return parse_declaration(tomllib.loads(text), f"the draft of {dataset}")
    except (tomllib.TOMLDecodeError, ValueError) as error:
        raise DicesError(
            f"the draft declaration does not parse ({error}); a bug in dices"
        ) from error

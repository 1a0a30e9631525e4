"""A dataset declared as data: one TOML file maps a family's files into one model.

The model every declared dataset is stored as:

    items    one row per item: item_id, its text fields, its attributes
    raters   one row per rater: rater_id, their attributes (demographics, scores)
    ratings  one row per rating: item_id, rater_id, each label (and, for a label whose
             scale declares a positive class, LABEL_positive), further answers

Each label has a scale: binary, nominal or ordinal (values in their order), the values
that are missing codes (stored as null), and the values that count as the positive class
of a binary view. A declaration file holds one or more `[[dataset]]` tables; each names
its files (`[[dataset.file]]`: format, layout, column roles, where it is published), the
scales of its labels (`[dataset.scales.LABEL]`) and the item attributes that hold a
reference label, such as experts' gold (`[dataset.references.ATTRIBUTE]`: the label it is
a reference for, read on that label's scale). docs/datasets.md describes every key.

`read_declaration` parses a file and checks it; a mistake raises `DeclarationError`,
which names the key and says how to fix it. Nothing here reads a data file.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import Any

from dices_cli.families.schema import RESERVED_NAMES

# A declaration is a small text file: larger is a mistake (a data file given in its place).
MAX_DECLARATION_BYTES = 1 << 20
FORMATS = ("csv", "tsv", "jsonl", "json", "parquet")
EXTENSIONS = {
    ".csv": "csv",
    ".tsv": "tsv",
    ".tab": "tsv",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "json",
    ".parquet": "parquet",
}
ROLES = ("ratings", "raters", "items")
LAYOUTS = ("long", "lists")
SCALE_KINDS = ("binary", "nominal", "ordinal")
# A stored dataset's name: a folder of the data directory and the commands' dataset choice.
# It names SQL views too, so: no "-".
NAME = re.compile(r"[a-z][a-z0-9_]{0,39}")
# The column roles a file may give, each a list of columns (or a table: stored name ->
# column); a nested JSON field is written "outer/inner".
LIST_ROLES = ("labels", "text", "item_attributes", "rater_attributes", "answers")
DATASET_KEYS = {"name", "title", "description", "citation", "licence", "published", "file"}
DATASET_KEYS |= {"scales", "family", "references"}
FILE_KEYS = {"role", "format", "layout", "match", "item", "rater", "separator", "from_name"}
FILE_KEYS |= {"json_records", "json_key", "rater_attribute_maps", "source", "description"}
FILE_KEYS |= {"contains"}
FILE_KEYS |= set(LIST_ROLES)
SOURCE_KEYS = {"url", "repository", "commit", "path", "size", "sha256", "saved_as", "note"}
SCALE_KEYS = {"kind", "values", "missing", "positive", "description"}
REFERENCE_KEYS = {"label", "values", "missing", "description"}
COUNT_NAMES = ("items", "raters", "ratings")

Value = str | int | float


class DeclarationError(ValueError):
    """A declaration that cannot be used as written: the message names the file, the key
    and the fix. (The families are below the errors' floor: the reader that registers a
    declaration raises it again as a usage error.)"""


@dataclass(frozen=True)
class Scale:
    """How one label's values are read: kind, values in order, missing codes, positives."""

    kind: str
    values: tuple[Value, ...]
    missing: tuple[Value, ...] = ()
    positive: tuple[Value, ...] = ()
    description: str = ""

    @property
    def numeric(self) -> bool:
        return all(isinstance(v, int | float) for v in self.values)

    @property
    def integral(self) -> bool:
        return self.numeric and all(float(v).is_integer() for v in self.values)


@dataclass(frozen=True)
class Reference:
    """An item attribute holding a reference label for one of the labels (experts' gold):
    read on that label's scale. A cell is one of the label's values, or a key of `values`
    (the cell's text -> the label's value it stands for) when the file writes them
    otherwise; a cell that is empty or in `missing` gives the item no reference."""

    attribute: str
    label: str
    values: dict[str, Value] = field(default_factory=dict)
    missing: tuple[Value, ...] = ()
    description: str = ""

    def rank_of(self, cell: str | None, scale: Scale) -> int | None:
        """The rank in `scale` of the value a stored cell (as text) stands for; None for no
        reference; a KeyError for a cell that is none of them."""
        if cell is None or not cell.strip() or _among(cell, self.missing):
            return None
        value = next((v for k, v in self.values.items() if _same_value(cell, k)), None)
        if value is None and self.values:
            raise KeyError(cell)
        target = cell if value is None else value
        for rank, known in enumerate(scale.values):
            if _same_value(target, known):
                return rank
        raise KeyError(cell)


def _same_value(cell: Value, value: Value) -> bool:
    """Whether a cell's text (or a declared value) and a declared value are one value: the
    same text stripped, or the same number (a stored 3.0 is the scale's 3)."""
    if str(cell).strip() == str(value).strip():
        return True
    try:
        return float(str(cell)) == float(str(value))
    except ValueError:
        return False


def _among(cell: str, values: tuple[Value, ...]) -> bool:
    return any(_same_value(cell, v) for v in values)


@dataclass(frozen=True)
class Source:
    """Where one file is published: an address pinned to a commit or revision, its size and
    SHA-256 from the bytes (None: not learnt; the download then shows the file's own)."""

    url: str
    saved_as: str
    repository: str = ""
    commit: str = ""
    path: str = ""
    size: int | None = None
    sha256: str | None = None
    note: str = ""


@dataclass(frozen=True)
class FileSpec:
    """One file of a declared dataset and the role of each of its columns. Each role maps a
    stored name to the column (or nested JSON field "outer/inner") it is read from."""

    role: str
    format: str | None  # None: from the file name's extension
    layout: str
    match: str  # a glob on the file's name: which given file this is
    item: tuple[str, ...]  # the item key's columns (several: joined by "-")
    rater: str | None
    labels: dict[str, str]
    text: dict[str, str]
    item_attributes: dict[str, str]
    rater_attributes: dict[str, str]
    answers: dict[str, str]
    separator: str = ","  # layout "lists": what separates the values of one cell
    from_name: dict[str, str] = field(default_factory=dict)  # column -> regex on the name
    json_records: str = "auto"  # json: "object" (keyed by json_key), "array" or "auto"
    json_key: str = "key"
    # layout "lists": attribute -> a field holding an object keyed by rater id
    rater_attribute_maps: dict[str, str] = field(default_factory=dict)
    source: Source | None = None
    description: str = ""
    # Texts the file's first bytes hold (after its column names): what tells it from
    # another dataset's file with the same columns.
    contains: tuple[str, ...] = ()

    def matches(self, name: str) -> bool:
        return fnmatch.fnmatch(PurePath(name).name, self.match)

    def format_of(self, name: str) -> str:
        """The declared format, else the one the file name's extension says (csv)."""
        if self.format is not None:
            return self.format
        lowered = PurePath(name).name.lower().removesuffix(".gz")
        return next((f for e, f in EXTENSIONS.items() if lowered.endswith(e)), "csv")

    def required(self) -> list[str]:
        """The top-level columns (or JSON keys) this file must have."""
        columns = [*self.item, *([self.rater] if self.rater else [])]
        for role in LIST_ROLES:
            columns += getattr(self, role).values()
        columns += self.rater_attribute_maps.values()
        tops = [c.split("/", 1)[0] for c in columns if c not in self.from_name]
        if self.format == "json" and self.json_records != "array":
            tops = [c for c in tops if c != self.json_key]
        return list(dict.fromkeys(tops))


@dataclass(frozen=True)
class DatasetDeclaration:
    """One stored dataset, declared: its files and the scales of its labels."""

    name: str
    title: str
    family: str  # the declaration it belongs to (popquorn), for grouping in lists
    files: tuple[FileSpec, ...]
    scales: dict[str, Scale]
    published: dict[str, int]
    description: str = ""
    citation: str = ""
    licence: str = ""
    origin: str = ""  # the declaration file, for messages
    references: dict[str, Reference] = field(default_factory=dict)  # attribute -> reference

    def reference_of(self, label: str) -> Reference | None:
        """The reference label declared for `label`, or None."""
        return next((r for r in self.references.values() if r.label == label), None)

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(n for f in self.files for n in f.labels))

    @property
    def has_raters(self) -> bool:
        return any(f.rater for f in self.files)

    @property
    def has_demographics(self) -> bool:
        return any(f.rater_attributes or f.rater_attribute_maps for f in self.files)

    @property
    def has_text(self) -> bool:
        return any(f.text for f in self.files)


def read_declaration(path: Path) -> list[DatasetDeclaration]:
    """The datasets a declaration file declares, checked."""
    import tomllib

    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_DECLARATION_BYTES + 1)
    except OSError as error:
        raise DeclarationError(f"cannot read the declaration {path}: {error.strerror}") from error
    if len(data) > MAX_DECLARATION_BYTES:
        raise DeclarationError(
            f"{path} is larger than {MAX_DECLARATION_BYTES:,} bytes: a declaration is a small "
            "TOML file (give the data files as FILE arguments)"
        )
    try:
        parsed = tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise DeclarationError(f"{path} is not UTF-8 text ({error.reason})") from error
    except tomllib.TOMLDecodeError as error:
        raise DeclarationError(f"{path} is not valid TOML: {error}") from error
    return parse_declaration(parsed, str(path))


def parse_declaration(data: Mapping[str, Any], origin: str) -> list[DatasetDeclaration]:
    """The datasets of a parsed declaration; `origin` names it in messages."""
    checker = _Checker(origin)
    checker.keys(data, {"dataset", "family", "schema"}, "")
    family = data.get("family", "")
    if not isinstance(family, str):
        checker.fail("family", "is not text", 'write family = "NAME" (or leave it out)')
    datasets: Any = data.get("dataset")
    if not isinstance(datasets, list) or not datasets:
        checker.fail(
            "dataset",
            "is missing" if datasets is None else "is not an array of tables",
            "declare each stored dataset in a [[dataset]] table with a name and a [[dataset.file]]",
        )
    declared = [
        checker.dataset(one, f"dataset[{i}]", str(family)) for i, one in enumerate(datasets)
    ]
    names = [d.name for d in declared]
    if len(set(names)) < len(names):
        twice = next(n for n in names if names.count(n) > 1)
        checker.fail("dataset.name", f"{twice!r} is declared twice", "give each dataset its own")
    return declared


class _Checker:
    """Reads a parsed declaration's tables, failing with the key and the fix."""

    def __init__(self, origin: str) -> None:
        self.origin = origin

    def fail(self, key: str, what: str, fix: str) -> Any:
        raise DeclarationError(f"{self.origin}: {key} {what}; {fix}")

    def keys(self, table: Mapping[str, Any], allowed: set[str], where: str) -> None:
        for key in table:
            if key not in allowed:
                self.fail(
                    f"{where}.{key}" if where else key,
                    "is not a key of this table",
                    f"use one of: {', '.join(sorted(allowed))}",
                )

    def text(self, table: Mapping[str, Any], key: str, where: str, default: str | None) -> str:
        value = table.get(key, default)
        if value is None:
            self.fail(f"{where}.{key}", "is missing", f'add {key} = "..."')
        if not isinstance(value, str):
            self.fail(f"{where}.{key}", f"is {value!r}, not text", f'write {key} = "..."')
        return str(value)

    def choice(
        self,
        table: Mapping[str, Any],
        key: str,
        where: str,
        choices: tuple[str, ...],
        default: str | None,
    ) -> str:
        value = self.text(table, key, where, default)
        if value not in choices:
            self.fail(f"{where}.{key}", f"is {value!r}", f"use one of: {', '.join(choices)}")
        return value

    def dataset(self, table: Any, where: str, family: str) -> DatasetDeclaration:
        if not isinstance(table, dict):
            self.fail(where, "is not a table", "write it as [[dataset]]")
        self.keys(table, DATASET_KEYS, where)
        name = self.text(table, "name", where, None)
        if not NAME.fullmatch(name) or name in RESERVED_NAMES:
            self.fail(
                f"{where}.name",
                f"is {name!r}",
                "use a lower-case letter, then lower-case letters, digits and _ (at most 40, not "
                "all or auto): it "
                "names the dataset's folder and the dataset commands choose",
            )
        where = f"dataset {name!r}"
        files = table.get("file")
        if not isinstance(files, list) or not files:
            self.fail(
                f"{where}.file",
                "is missing" if files is None else "is not an array of tables",
                "declare each file in a [[dataset.file]] table (role, format, columns)",
            )
        specs = tuple(self.file(one, f"{where}.file[{i}]") for i, one in enumerate(files))
        if not any(s.role == "ratings" for s in specs):
            self.fail(f"{where}.file", 'has no role = "ratings" file', "declare the ratings")
        scales_table = table.get("scales", {})
        if not isinstance(scales_table, dict):
            self.fail(f"{where}.scales", "is not a table", "write [dataset.scales.LABEL]")
        scales = {
            label: self.scale(scale, f"{where}.scales.{label}")
            for label, scale in scales_table.items()
        }
        labels = {n for s in specs for n in s.labels}
        for label in sorted(labels - set(scales)):
            self.fail(
                f"{where}.scales.{label}",
                "is missing",
                f"declare the label's scale: [dataset.scales.{label}] with kind and values",
            )
        for label in sorted(set(scales) - labels):
            self.fail(f"{where}.scales.{label}", "names no label", "name it in a file's labels")
        references = self.references(table, where, specs, scales)
        published = table.get("published", {})
        if not isinstance(published, dict) or not all(
            k in COUNT_NAMES and isinstance(v, int) and not isinstance(v, bool) and v >= 0
            for k, v in published.items()
        ):
            self.fail(
                f"{where}.published",
                f"is {published!r}",
                "write published = { items = N, raters = N, ratings = N } (any of them)",
            )
        return DatasetDeclaration(
            name=name,
            title=self.text(table, "title", where, name),
            family=self.text(table, "family", where, family or name),
            files=specs,
            scales=scales,
            published=dict(published),
            description=self.text(table, "description", where, ""),
            citation=self.text(table, "citation", where, ""),
            licence=self.text(table, "licence", where, ""),
            origin=self.origin,
            references=references,
        )

    def references(
        self,
        table: Mapping[str, Any],
        where: str,
        specs: tuple[FileSpec, ...],
        scales: dict[str, Scale],
    ) -> dict[str, Reference]:
        """The `[dataset.references.ATTRIBUTE]` tables: each names an item attribute that
        holds a reference label, and the label (and so the scale) it is a reference for."""
        tables = table.get("references", {})
        if not isinstance(tables, dict):
            self.fail(
                f"{where}.references",
                "is not a table",
                'write [dataset.references.ATTRIBUTE] with label = "LABEL"',
            )
        attributes = {n for s in specs for n in s.item_attributes}
        labels = list(dict.fromkeys(n for s in specs for n in s.labels))
        found: dict[str, Reference] = {}
        for attribute, one in tables.items():
            at = f"{where}.references.{attribute}"
            if not isinstance(one, dict):
                self.fail(at, "is not a table", 'write label = "LABEL" under it')
            self.keys(one, REFERENCE_KEYS, at)
            if attribute not in attributes:
                self.fail(
                    at,
                    "names no item attribute",
                    "store the reference column as one in the file that has it: "
                    f'item_attributes = {{ {attribute} = "COLUMN" }}',
                )
            label = self.text(one, "label", at, labels[0] if len(labels) == 1 else None)
            if label not in labels:
                self.fail(f"{at}.label", f"is {label!r}", f"use one of: {', '.join(labels)}")
            if (twice := next((r for r in found.values() if r.label == label), None)) is not None:
                self.fail(
                    f"{at}.label",
                    f"is {label!r}, which {twice.attribute} is a reference for already",
                    "declare one reference per label",
                )
            scale = scales[label]
            values = one.get("values", {})
            if not isinstance(values, dict) or not all(
                isinstance(v, str | int | float) and not isinstance(v, bool)
                for v in values.values()
            ):
                self.fail(
                    f"{at}.values",
                    f"is {values!r}",
                    'map each cell onto the label\'s value: values = { "cell" = VALUE }',
                )
            shown = ", ".join(map(str, scale.values))
            for cell, value in values.items():
                if not _among(str(value), scale.values):
                    self.fail(
                        f"{at}.values.{cell}",
                        f"is {value!r}, not a value of {label}'s scale",
                        f"map it onto one of: {shown}",
                    )
            missing = one.get("missing", [])
            if not isinstance(missing, list) or not all(
                isinstance(v, str | int | float) and not isinstance(v, bool) for v in missing
            ):
                self.fail(f"{at}.missing", f"is {missing!r}", 'write missing = [-1] or ["n/a"]')
            found[attribute] = Reference(
                attribute,
                label,
                dict(values),
                tuple(missing),
                self.text(one, "description", at, ""),
            )
        return found

    def columns(self, table: Mapping[str, Any], key: str, where: str) -> dict[str, str]:
        value = table.get(key, [])
        if isinstance(value, list) and all(isinstance(v, str) and v for v in value):
            return {stored_name(v): v for v in value}
        if isinstance(value, dict) and all(
            isinstance(v, str) and v and NAME_OF_COLUMN.fullmatch(k) for k, v in value.items()
        ):
            return dict(value)
        return self.fail(
            f"{where}.{key}",
            f"is {value!r}",
            f'write {key} = ["column", ...] or {key} = {{ stored_name = "column" }} '
            "(stored names: letters, digits and _)",
        )

    def file(self, table: Any, where: str) -> FileSpec:
        if not isinstance(table, dict):
            self.fail(where, "is not a table", "write it as [[dataset.file]]")
        self.keys(table, FILE_KEYS, where)
        role = self.choice(table, "role", where, ROLES, "ratings")
        item_value = table.get("item")
        if isinstance(item_value, str):
            item: tuple[str, ...] = (item_value,)
        elif (
            isinstance(item_value, list)
            and item_value
            and all(isinstance(v, str) for v in item_value)
        ):
            item = tuple(item_value)
        elif item_value is None and role == "raters":
            item = ()
        else:
            item = self.fail(
                f"{where}.item",
                "is missing" if item_value is None else f"is {item_value!r}",
                'name the item id column: item = "item_id" (several: item = ["split", "id"])',
            )
        rater = table.get("rater")
        if rater is not None and not isinstance(rater, str):
            self.fail(f"{where}.rater", f"is {rater!r}", 'write rater = "rater_id"')
        if role in ("ratings", "raters") and rater is None:
            self.fail(f"{where}.rater", "is missing", 'name the rater id column: rater = "..."')
        spec_format = table.get("format")
        if spec_format is not None and spec_format not in FORMATS:
            self.fail(f"{where}.format", f"is {spec_format!r}", f"use one of: {', '.join(FORMATS)}")
        from_name = table.get("from_name", {})
        if not isinstance(from_name, dict) or not all(
            isinstance(v, str) for v in from_name.values()
        ):
            self.fail(f"{where}.from_name", f"is {from_name!r}", 'write { split = "_(\\w+)\\." }')
        for column, pattern in from_name.items():
            try:
                if re.compile(pattern).groups != 1:
                    raise re.error("it needs exactly one (group)")
            except re.error as error:
                self.fail(
                    f"{where}.from_name.{column}",
                    f"is not a usable pattern ({error})",
                    "give a regular expression with one (group): the value",
                )
        roles = {r: self.columns(table, r, where) for r in LIST_ROLES}
        if role == "ratings" and not roles["labels"]:
            self.fail(f"{where}.labels", "is missing", 'name the label columns: labels = ["..."]')
        maps = self.columns(table, "rater_attribute_maps", where)
        source = table.get("source")
        contains = table.get("contains", [])
        if not isinstance(contains, list) or not all(isinstance(c, str) and c for c in contains):
            self.fail(f"{where}.contains", f"is {contains!r}", 'write contains = ["text", ...]')
        return FileSpec(
            role=role,
            format=spec_format,
            layout=self.choice(table, "layout", where, LAYOUTS, "long"),
            match=self.text(table, "match", where, "*"),
            item=item,
            rater=rater,
            separator=self.text(table, "separator", where, ","),
            from_name=dict(from_name),
            json_records=self.choice(
                table, "json_records", where, ("auto", "object", "array"), "auto"
            ),
            json_key=self.text(table, "json_key", where, "key"),
            rater_attribute_maps=maps,
            source=None if source is None else self.source(source, f"{where}.source"),
            description=self.text(table, "description", where, ""),
            contains=tuple(contains),
            **roles,
        )

    def source(self, table: Any, where: str) -> Source:
        if not isinstance(table, dict):
            self.fail(where, "is not a table", "write [dataset.file.source] with url, size, sha256")
        self.keys(table, SOURCE_KEYS, where)
        url = self.text(table, "url", where, None)
        if not url.startswith("https://"):
            self.fail(f"{where}.url", f"is {url!r}", "give an https:// address")
        size = table.get("size")
        if size is not None and (not isinstance(size, int) or size < 0):
            self.fail(f"{where}.size", f"is {size!r}", "give the size in bytes, or leave it out")
        sha256 = table.get("sha256")
        if sha256 is not None and (
            not isinstance(sha256, str) or not re.fullmatch(r"[0-9a-f]{64}", sha256)
        ):
            self.fail(f"{where}.sha256", f"is {sha256!r}", "give 64 lower-case hex digits")
        saved_as = self.text(table, "saved_as", where, PurePath(url).name)
        if saved_as.startswith("/") or ".." in PurePath(saved_as).parts:
            self.fail(f"{where}.saved_as", f"is {saved_as!r}", "give a relative path")
        return Source(
            url=url,
            saved_as=saved_as,
            repository=self.text(table, "repository", where, ""),
            commit=self.text(table, "commit", where, ""),
            path=self.text(table, "path", where, ""),
            size=size,
            sha256=sha256,
            note=self.text(table, "note", where, ""),
        )

    def scale(self, table: Any, where: str) -> Scale:
        if not isinstance(table, dict):
            self.fail(where, "is not a table", "write kind and values under it")
        self.keys(table, SCALE_KEYS, where)
        kind = self.choice(table, "kind", where, SCALE_KINDS, None)
        lists = {}
        for key in ("values", "missing", "positive"):
            value = table.get(key, [])
            if not isinstance(value, list) or not all(
                isinstance(v, str | int | float) and not isinstance(v, bool) for v in value
            ):
                self.fail(f"{where}.{key}", f"is {value!r}", f'write {key} = [1, 2] or ["a"]')
            lists[key] = tuple(value)
        values, missing, positive = lists["values"], lists["missing"], lists["positive"]
        if not values:
            self.fail(f"{where}.values", "is missing", "list the label's values, in order")
        if len(set(values)) < len(values):
            self.fail(f"{where}.values", "lists a value twice", "list each value once")
        if kind == "binary" and len(values) != 2:
            self.fail(f"{where}.values", f"has {len(values)} values", "a binary scale has two")
        numbers = [isinstance(v, int | float) for v in values]
        if any(numbers) and not all(numbers):
            self.fail(
                f"{where}.values",
                "mixes numbers and text",
                "write every value as a number or every value as text",
            )
        if overlap := set(missing) & set(values):
            self.fail(
                f"{where}.missing",
                f"holds {sorted(overlap)!r}, also a value",
                "a missing code is not among the values",
            )
        if unknown := [v for v in positive if v not in values]:
            self.fail(
                f"{where}.positive",
                f"holds {unknown[0]!r}, not among the values",
                "list positive values from values",
            )
        if kind == "binary" and not positive:
            if set(values) != {0, 1}:
                self.fail(
                    f"{where}.positive",
                    "is missing",
                    "say which of the two values is the positive class",
                )
            positive = (1,)
        return Scale(kind, values, missing, positive, self.text(table, "description", where, ""))


NAME_OF_COLUMN = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")


def stored_name(column: str) -> str:
    """The name a column is stored under: its last "/" part, each run of characters other
    than letters, digits and _ as one _ ("other_info/annotators group" -> annotators_group)."""
    name = re.sub(r"[^A-Za-z0-9_]+", "_", column.rsplit("/", 1)[-1]).strip("_") or "column"
    return f"c_{name}" if name[0].isdigit() else name

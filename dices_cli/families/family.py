"""The shape of a family declaration (see `dices_cli.families`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dices_cli.families.declaration import DatasetDeclaration


@dataclass(frozen=True)
class SourceFile:
    """One published file of a family: its usual name, what it holds, its row count, and
    where it is published (each of `bases` + `path`, in the order `dices download` tries
    them), with its size and SHA-256 when those are published (None: `dices download` shows
    the file's own SHA-256 to check instead). Without a checksum a second source could not
    be told from a wrong one, so such a file has one."""

    name: str
    member: str  # the stored dataset it becomes
    rows: int
    description: str
    # The addresses `path` is under, each ending in "/", in order: the bytes of the first
    # that serves the published size and SHA-256 are kept. A mirror keeps the paths.
    bases: tuple[str, ...]
    path: str
    size: int | None = None
    sha256: str | None = None
    # The folder, under the download directory, that `dices download` puts it in, for a
    # name that could be another family's (train.json); "": the download directory itself.
    folder: str = ""
    # Whole addresses, in order, for a file whose `path` under a mirror is not the tail of
    # its address (a declared file: its mirror path is where the download puts it, unique
    # to its dataset, so that two datasets' raw_data.csv do not meet on one mirror).
    addresses: tuple[str, ...] = ()

    @property
    def urls(self) -> tuple[str, ...]:
        return self.addresses or tuple(base + self.path for base in self.bases)

    @property
    def saved_as(self) -> str:
        """Where `dices download` puts it, relative to the download directory."""
        return f"{self.folder}/{self.name}" if self.folder else self.name


@dataclass(frozen=True)
class Family:
    """One family's facts (see `dices_cli.families`)."""

    name: str
    title: str
    members: tuple[str, ...]  # the stored datasets, as named in DIR and by --dataset
    files: tuple[SourceFile, ...]
    recognised_by: str  # how a file is recognised as this family's, in words
    # The same in code: given a file's first bytes (up to 1 MiB), whether it is this
    # family's. Light (no Polars): it runs before the file is read. None: the family takes
    # every file that no other family recognises (DICES, whose checks say what is amiss).
    recognises: Callable[[bytes], bool] | None
    # "module:function" of what checks one file of the family for `dices validate` (a
    # `dices_cli.formats.validate.FamilyValidate`), and of what checks and stores the family's
    # files in one `dices ingest` call (a `dices_cli.formats.ingest.FamilyIngest`); named, not
    # imported, so that declaring a family imports nothing heavy.
    validates: str
    ingests: str
    tables: tuple[str, ...]  # each stored as TABLE.parquet
    entities: dict[str, str]  # table -> what one row of it is
    enums: dict[str, tuple[str, ...]]  # column -> values, in their order
    published: dict[str, dict[str, int]]  # member -> count name -> published count
    # What the commands read from a stored version's manifest beyond what every family's
    # holds (`dices_cli.store.datasets.MANIFEST_SHAPE`): key -> type, or the shape of a nested
    # object.
    # The files it was made from are "sources", a list, or DICES's one "source".
    manifest: dict[str, Any]
    queries: tuple[str, ...]  # the canned queries that apply
    has_raters: bool
    has_demographics: bool
    has_gold: bool
    # A dataset declared as data (`dices_cli.families.declaration`): its files' roles and
    # its labels' scales. None: a family with code of its own (DICES, ProsocialDialog).
    declared: DatasetDeclaration | None = None
    # The splits one file of the family holds, when its files are splits: a file's split is
    # its name's stem, or the one the ingest is given for it. (): no splits.
    splits: tuple[str, ...] = ()

    def title_of(self, member: str) -> str:
        """The name a message gives one stored dataset ("DICES-350", "ProsocialDialog")."""
        return self.title if len(self.members) == 1 else f"{self.title}-{member}"

    def lacks(self, *wanted: str) -> str:
        """What the family has not of `wanted` (rater ids, demographics, expert gold labels;
        none named: all three), for a message saying why something cannot apply."""
        present = {
            "rater ids": self.has_raters,
            "demographics": self.has_demographics,
            "expert gold labels": self.has_gold,
        }
        missing = [what for what in wanted or present if not present[what]]
        if not missing:
            return f"{self.title} has {', '.join(wanted or present)}"
        return f"{self.title} has no {listed(missing, 'or')}"

    def files_of(self, member: str) -> tuple[SourceFile, ...]:
        """The published files that become the stored dataset `member`."""
        return tuple(file for file in self.files if file.member == member)


def listed(words: Sequence[str], last: str) -> str:
    """`words` as a sentence lists them: "a, b or c" (`last` "or"), "a and b" ("and")."""
    return ", ".join(words[:-1]) + (f" {last} " if len(words) > 1 else "") + words[-1]

"""The shape of a family declaration (see `dices_cli.families`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SourceFile:
    """One published file of a family: its usual name, what it holds, and its row count."""

    name: str
    member: str  # the stored dataset it becomes
    rows: int
    description: str


@dataclass(frozen=True)
class Family:
    """One family's facts (see `dices_cli.families`). Published checksums are not declared
    here yet: `dices download` (issue 14) brings the files' own."""

    name: str
    title: str
    members: tuple[str, ...]  # the stored datasets, as named in DIR and by --dataset
    files: tuple[SourceFile, ...]
    recognised_by: str  # how a file is recognised as this family's, in words
    tables: tuple[str, ...]  # each stored as TABLE.parquet
    entities: dict[str, str]  # table -> what one row of it is
    enums: dict[str, tuple[str, ...]]  # column -> values, in their order
    published: dict[str, dict[str, int]]  # member -> count name -> published count
    queries: tuple[str, ...]  # the canned queries that apply
    has_raters: bool
    has_demographics: bool
    has_gold: bool

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
        listed = ", ".join(missing[:-1]) + (" or " if len(missing) > 1 else "") + missing[-1]
        return f"{self.title} has no {listed}"

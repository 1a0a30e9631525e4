"""Dataset families: one declaration each, and the registry that finds them.

A family is a set of published datasets that share a shape: its stored datasets (members)
and the files they come from (where each is published, with its size and SHA-256 when
those are published), how a file of the family is recognised, the tables it is stored as,
its enums in order, the published counts, the canned queries that apply, and what it lacks
(raters, demographics, expert gold labels). The declarations hold facts and a light
recogniser only, and are imported on the CLI's start-up path: reading, validating and
storing live elsewhere, in the validator and the ingester each declaration names by its
dotted path (`dices_cli.formats.validate` and `dices_cli.formats.ingest` find a file's family with
`families_of_files` and call them through `named`; `dices_cli.download` fetches the declared
files). A family of its own code is a declaration here, its validator and ingester, its
SQL and its tests; a dataset declared as data is a TOML file only
(`dices_cli.families.declaration`): the package's own in `families/declared/`, a user's
registered with `register` (`dices ingest --declaration FILE`; a data directory keeps them).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dices_cli.families.dices import DICES
from dices_cli.families.family import Family, SourceFile, listed
from dices_cli.families.prosocial import PROSOCIAL
from dices_cli.families.registered import BUILT_IN, built_in, family_from, user_declarations
from dices_cli.families.schema import RESERVED_NAMES, SCORED_BY_DEFAULT

if TYPE_CHECKING:  # the declarations' reader is imported when one is read
    from dices_cli.families.declaration import DatasetDeclaration

__all__ = [
    "FAMILIES",
    "SCORED_BY_DEFAULT",
    "Family",
    "SourceFile",
    "all_members",
    "coded_members",
    "declared_family",
    "families_of_files",
    "family_of",
    "grouped_members",
    "listed",
    "member_choices",
    "named",
    "register",
    "register_directory",
    "single_file_members",
]


class Registry(dict[str, Family]):
    """The families by name: those of code of their own at once, the declared ones (TOML
    files, parsed by tomllib) at the first look past them, so that a command that never
    asks for one does not parse them."""

    def __init__(self, families: tuple[Family, ...]) -> None:
        super().__init__((family.name, family) for family in families)
        self._loaded = False

    def load(self) -> None:
        if not self._loaded:
            self._loaded = True
            for declared in built_in():
                super().__setitem__(declared.name, family_from(declared))

    def __getitem__(self, name: str) -> Family:
        if not super().__contains__(name):
            self.load()
        return super().__getitem__(name)

    def __contains__(self, name: object) -> bool:
        if super().__contains__(name):
            return True
        if name in RESERVED_NAMES:  # "all": no declaration takes it, none is parsed for it
            return False
        self.load()
        return super().__contains__(name)

    def get(self, name: str, default: Any = None) -> Any:
        if name not in self:
            return default
        return self[name]

    def __iter__(self) -> Iterator[str]:
        self.load()
        return super().__iter__()

    def __len__(self) -> int:
        self.load()
        return super().__len__()

    def keys(self) -> Any:
        self.load()
        return super().keys()

    def values(self) -> Any:
        self.load()
        return super().values()

    def items(self) -> Any:
        self.load()
        return super().items()

    def __setitem__(self, name: str, family: Family) -> None:
        self.load()
        super().__setitem__(name, family)

    def coded(self) -> list[Family]:
        """The families with code of their own, in order, without parsing the declared ones
        (the commands' choices are built from them as the command line starts)."""
        return [family for family in super().values() if family.declared is None]


FAMILIES = Registry((DICES, PROSOCIAL))


def register(declared: list[DatasetDeclaration]) -> list[Family]:
    """Add declared datasets to the registry, and return them. A user's declaration
    replaces an earlier one of the same name (edited and given again); a name that a family
    of dices's own uses (DICES, ProsocialDialog, a built-in declaration) is refused."""
    from dices_cli.families.declaration import DeclarationError

    added = []
    for one in declared:
        known = FAMILIES.get(one.name) or next(
            (f for f in FAMILIES.values() if one.name in f.members), None
        )
        if known is not None and _built_in(known) and not _same(known, one):
            raise DeclarationError(
                f"{one.origin}: dataset.name {one.name!r} is {known.title}'s, which dices "
                "declares itself; give the dataset another name"
            )
        FAMILIES[one.name] = family = family_from(one)
        added.append(family)
    return added


def _built_in(family: Family) -> bool:
    return family.declared is None or Path(family.declared.origin).parent == BUILT_IN


def _same(family: Family, one: DatasetDeclaration) -> bool:
    return family.declared is not None and replace(family.declared, origin="") == replace(
        one, origin=""
    )


def register_directory(root: Path) -> None:
    """Register the declarations a data directory keeps (`registered.USER_FOLDER`)."""
    from dices_cli.families.declaration import read_declaration

    for path in user_declarations(root):
        register(read_declaration(path))


def declared_family(member: str) -> Family | None:
    """The declared family (POPQUORN, a user's own file) whose one dataset `member` is, or
    None for a family with code of its own and for a name no family has."""
    family = FAMILIES.get(member)
    return family if family is not None and family.declared is not None else None


def family_of(member: str) -> Family:
    """The family a stored dataset (350, 990, prosocial, a declared one) belongs to: one of
    code of its own found without parsing the declarations (no declared dataset takes its
    name: `register`)."""
    coded = next((f for f in FAMILIES.coded() if member in f.members), None)
    return coded or next(f for f in FAMILIES.values() if member in f.members)


def all_members() -> tuple[str, ...]:
    """Every stored dataset of every family, in declaration order."""
    return tuple(member for family in FAMILIES.values() for member in family.members)


def coded_members() -> tuple[str, ...]:
    """The stored datasets of the families with code of their own (not declared as data):
    what the commands written for them (evaluate, judge, the canned queries) offer."""
    return tuple(member for family in FAMILIES.coded() for member in family.members)


def grouped_members() -> tuple[str, ...]:
    """The stored datasets, of the families with code of their own, that have rater ids and
    demographics: what the rater-group commands read, and what their "all" means."""
    return tuple(
        member
        for family in FAMILIES.coded()
        if family.has_raters and family.has_demographics
        for member in family.members
    )


def member_choices() -> tuple[str, ...]:
    """The choices of the commands that read one family of their own code at a time
    (evaluate, judge, export): the grouped datasets, "all" (those together), the others."""
    grouped = grouped_members()
    return (*grouped, "all", *(m for m in coded_members() if m not in grouped))


def single_file_members() -> tuple[str, ...]:
    """The stored datasets published as one file (those a mirror's address can replace)."""
    return tuple(
        member
        for family in FAMILIES.values()
        for member in family.members
        if len(family.files_of(member)) == 1
    )


def families_of_files(firsts: Sequence[bytes], choice: str = "auto") -> list[Family]:
    """The families of the files whose first bytes (up to 1 MiB each) are `firsts`, each
    once: the family of `choice` when it names a stored dataset; else, for each file, the
    first family whose recogniser knows it, or the family that takes what no other
    recognises (listed last)."""
    if choice != "auto":
        return [family_of(choice)]
    trying = [f for f in FAMILIES.values() if f.recognises is not None]
    trying += [f for f in FAMILIES.values() if f.recognises is None]
    found = {
        next(f.name for f in trying if f.recognises is None or f.recognises(first))
        for first in firsts
    }
    return [f for f in trying if f.name in found]


def named(dotted: str) -> Any:
    """What a declaration names as "module:function" (its validator, its ingester), imported
    only now: declaring a family imports nothing heavy."""
    module, _, name = dotted.partition(":")
    return getattr(importlib.import_module(module), name)

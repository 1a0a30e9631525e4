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
files). Adding a family is adding a declaration here, its validator and ingester, its SQL
and its tests.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any

from dices_cli.families.dices import DICES
from dices_cli.families.family import Family, SourceFile, listed
from dices_cli.families.prosocial import PROSOCIAL

__all__ = [
    "FAMILIES",
    "Family",
    "SourceFile",
    "all_members",
    "families_of_files",
    "family_of",
    "listed",
    "named",
    "single_file_members",
]

FAMILIES: dict[str, Family] = {family.name: family for family in (DICES, PROSOCIAL)}


def family_of(member: str) -> Family:
    """The family a stored dataset (350, 990, prosocial) belongs to."""
    return next(f for f in FAMILIES.values() if member in f.members)


def all_members() -> tuple[str, ...]:
    """Every stored dataset of every family, in declaration order."""
    return tuple(member for family in FAMILIES.values() for member in family.members)


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

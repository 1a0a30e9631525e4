"""Dataset families: one declaration each, and the registry that finds them.

A family is a set of published datasets that share a shape: its stored datasets (members)
and the files they come from (where each is published, with its size and SHA-256 when
those are published), how a file of the family is recognised, the tables it is stored as,
its enums in order, the published counts, the canned queries that apply, and what it lacks
(raters, demographics, expert gold labels). The declarations hold facts and a light
recogniser only, and are imported on the CLI's start-up path: reading, validating and
storing live elsewhere, in the ingester each declaration names by its dotted path
(`dices_cli.ingest` dispatches to it; `dices_cli.download` fetches the declared files).
Adding a family is adding a declaration here, its ingester, its SQL and its tests.
"""

from __future__ import annotations

from dices_cli.families.dices import DICES
from dices_cli.families.family import Family, SourceFile
from dices_cli.families.prosocial import PROSOCIAL

__all__ = ["FAMILIES", "Family", "SourceFile", "all_members", "family_of"]

FAMILIES: dict[str, Family] = {family.name: family for family in (DICES, PROSOCIAL)}


def family_of(member: str) -> Family:
    """The family a stored dataset (350, 990, prosocial) belongs to."""
    return next(f for f in FAMILIES.values() if member in f.members)


def all_members() -> tuple[str, ...]:
    """Every stored dataset of every family, in declaration order."""
    return tuple(member for family in FAMILIES.values() for member in family.members)

"""What a declared dataset's query over its items' reference label (`gold-vs-crowd`) binds
beyond the label: the item attribute holding the reference, how its cells are read, and
the crowd rule checked against the label's scale. A dataset that declares no reference,
or none for the label asked, is a usage error that says which labels have one and how a
declaration names one."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dices_cli.errors import Option, UsageError

if TYPE_CHECKING:
    from dices_cli.families.declaration import DatasetDeclaration

# How a declaration names a reference label (docs/datasets.md).
DECLARE = (
    'declare the item attribute that holds it: [dataset.references.ATTRIBUTE] with label = "LABEL"'
)


def reference_label(declared: DatasetDeclaration, query: str) -> str:
    """The label a query over the reference compares when none is asked: the first with a
    reference."""
    if not declared.references:
        raise UsageError(
            f"{declared.title} has no reference label (experts' gold) for its items; {query} "
            f"compares the crowd with one ({DECLARE})"
        )
    return next(iter(declared.references.values())).label


def reference_parameters(
    declared: DatasetDeclaration, label: str, bound: dict[str, Any], query: str
) -> dict[str, Any]:
    """The reference's parameters for `label`: its attribute (for the SQL), the rule that
    reads its cells and the label's scale (for the compute step)."""
    reference = declared.reference_of(label)
    if reference is None:
        if not declared.references:
            reference_label(declared, query)  # says there is none
        have = ", ".join(r.label for r in declared.references.values())
        raise UsageError(
            f"{declared.title}'s {label} has no reference label; choose ",
            Option("label"),
            f" from those that have one: {have}",
        )
    scale = declared.scales[label]
    if bound.get("crowd") == "median" and scale.kind != "ordinal":
        raise UsageError(
            f"{declared.title}'s {label} is {scale.kind}: its values have no order for a median; "
            "use ",
            Option("crowd"),
            " plurality",
        )
    return {"reference": reference.attribute, "reference_rule": reference, "scale": scale}

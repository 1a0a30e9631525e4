"""The report of a declared dataset (POPQUORN, D3CODE, the LeWiDi sets, a user's own file):
the sections its labels and rater attributes allow, each naming the declared label and scale
it shows.

    overview   every label: its scale, counts, and the split of its values
    shares     per label with a positive class: the share in it per group, 95% intervals
    agreement  per label, with rater attributes: Krippendorff's alpha and GRASP's IRR, XRR
               and GAI per group, with permutation p-values (Benjamini-Hochberg)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import dices_cli.report.charts as charts
from dices_cli.output import Table, collect, table_from_rows
from dices_cli.report.context import Figure, Section

if TYPE_CHECKING:
    from dices_cli.families import Family
    from dices_cli.families.declaration import Scale
    from dices_cli.store.datasets import Store

# Without chosen attributes, the shares and agreement compare the groups of the first ones
# the declaration lists (DICES's report likewise shows two columns by default).
DEFAULT_ATTRIBUTES = 2
AGREEMENT_COLUMNS = ("raters", "irr", "xrr", "gai", "gai_p", "gai_p_bh")


@dataclass(frozen=True)
class DeclaredContext:
    """What the sections of a declared dataset's report read: its family, the store, the
    rater attributes compared, and the agreement query's permutations and seed."""

    store: Store
    family: Family
    attributes: list[str]
    permutations: int
    seed: int

    @property
    def dataset(self) -> str:
        return self.family.members[0]

    @property
    def scales(self) -> dict[str, Scale]:
        assert self.family.declared is not None
        return self.family.declared.scales

    def run(self, name: str, **given: Any) -> Table:
        """The family's own canned query `name` with the values `given`, as a table."""
        from dices_cli.queries.catalog import family_queries
        from dices_cli.queries.declared import DeclaredSession

        query = family_queries(self.family.name)[name]
        parameters = query.bind(given)
        return collect(DeclaredSession(self.store, self.dataset).run(query, parameters))


def declared_attributes(family: Family) -> list[str]:
    """The rater attributes the family's declaration lists, in its order."""
    assert family.declared is not None
    names: dict[str, None] = {}
    for spec in family.declared.files:
        names.update(dict.fromkeys(spec.rater_attributes))
    return list(names)


def compared_attributes(family: Family, by: Sequence[str]) -> list[str]:
    """The attributes whose groups the report compares: `by`, else the first declared."""
    return list(by) or declared_attributes(family)[:DEFAULT_ATTRIBUTES]


def label_shown(label: str, scale: Scale) -> str:
    """The note atop a section: which declared label, on which scale, it shows."""
    values = ", ".join(map(str, scale.values))
    positive = f"; positive: {', '.join(map(str, scale.positive))}" if scale.positive else ""
    return f"Label shown: {label} ({scale.kind}: {values}{positive})."


def overview(ctx: DeclaredContext) -> Section:
    labels = ctx.run("overview")
    rows = []
    for label in ctx.scales:
        split = ctx.run("label-distribution", label=label)
        rows += [(label, str(r["value"]), r["ratings"], r["share"]) for r in split.records()]
    values = table_from_rows(["label", "value", "ratings", "share"], rows)
    chart = charts.bars(
        "Values given, per label",
        "Share of ratings giving each value of each declared label.",
        [{**r, "panel": r["label"]} for r in values.records()],
        ("value", "value"),
        charts.share("share", "share of ratings"),
    )
    return Section(
        "overview",
        "Labels and raters",
        [
            Figure(
                chart,
                values,
                "Each panel is one declared label; each bar the share of its ratings giving "
                "one value (a missing code is no rating).",
            )
        ],
        tables=[("Each label: its scale, items, raters and ratings", labels)],
        notes=[" ".join(label_shown(label, scale) for label, scale in ctx.scales.items())],
    )


def shares(ctx: DeclaredContext, label: str) -> Section | None:
    scale = ctx.scales[label]
    if not scale.positive or scale.kind == "nominal" or not ctx.attributes:
        return None
    keep = ["raters", "ratings", "share_positive", "share_positive_ci_low"]
    keep += ["share_positive_ci_high", "mean", "interval_note", "difference", "p_adjusted"]
    rows = []
    for attribute in ctx.attributes:
        result = ctx.run(
            "label-by-group", label=label, by=[attribute], permutations=ctx.permutations,
            seed=ctx.seed,
        )  # fmt: skip
        for record in result.records():
            group = "(missing)" if record[attribute] is None else str(record[attribute])
            rows.append((attribute, group, *(record[k] for k in keep)))
    table = table_from_rows(["column", "group", *keep], rows)
    positive = ", ".join(map(str, scale.positive))
    chart = charts.interval_dots(
        f"Share of {label} in {positive} per group, with 95% intervals",
        f"Share of ratings of {label} in the positive class ({positive}) per group of "
        f"{', '.join(ctx.attributes)}, with its 95% interval.",
        [{**r, "panel": r["column"]} for r in table.records()],
        ("group", None),
        ("share_positive", f"share of {label} in {positive}"),
        ("share_positive_ci_low", "share_positive_ci_high"),
    )
    return Section(
        f"shares-{label}",
        f"{label}: share in the positive class per group",
        [
            Figure(
                chart,
                table,
                "A dot is a group's share of ratings in the positive class, its line the 95% "
                "interval (two-way cluster-robust over the group's raters and the items); a "
                "group of fewer than 5 raters gets no line (interval_note says why). "
                "difference is the group's share minus the rest's, p_adjusted its permutation "
                "p-value adjusted for the groups tested (Benjamini-Hochberg).",
            )
        ],
        notes=[label_shown(label, scale)],
    )


def agreement(ctx: DeclaredContext, label: str) -> Section | None:
    if not ctx.attributes:
        return None
    scale = ctx.scales[label]
    rows = []
    metric = ""
    for attribute in ctx.attributes:
        result = ctx.run(
            "agreement",
            label=label,
            by=[attribute],
            permutations=ctx.permutations,
            seed=ctx.seed,
        )
        for record in result.records():
            metric = record["metric"]
            group = "(missing)" if record[attribute] is None else str(record[attribute])
            rows.append((attribute, group, *(record[k] for k in AGREEMENT_COLUMNS)))
    table = table_from_rows(["column", "group", *AGREEMENT_COLUMNS], rows)
    chart = charts.bars(
        f"Group association (GAI) of {label} per group",
        f"GRASP's group association index (IRR / XRR, {metric} distance) of {label} per "
        f"group of {', '.join(ctx.attributes)}.",
        [{**r, "panel": r["column"]} for r in table.records()],
        ("group", None),
        charts.count("gai", "GAI (IRR / XRR)"),
    )
    return Section(
        f"agreement-{label}",
        f"{label}: agreement within and across groups",
        [
            Figure(
                chart,
                table,
                "A bar above 1 means the group agrees more among itself than with the rest "
                f"of the pool ({metric} Krippendorff's alpha); gai_p_bh is its permutation "
                f"p-value over {ctx.permutations:,} relabellings of the raters, adjusted for "
                "the groups tested (Benjamini-Hochberg).",
            )
        ],
        notes=[label_shown(label, scale)],
    )


def declared_sections(ctx: DeclaredContext) -> list[Section]:
    """The sections that apply, in order: the overview, then each label's shares and
    agreement."""
    sections = [overview(ctx)]
    for label in ctx.scales:
        sections += [s for s in (shares(ctx, label), agreement(ctx, label)) if s is not None]
    return sections

"""The report's sections: each runs canned queries through the engine and draws their rows.

A section is a function of the `Context` that returns a `Section` (or None when it does not
apply: no DICES-350 for gold, no `by` columns for agreement, no predictions for models).
`SECTIONS` is their order; a new section is one more function in that list.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import dices_cli.report.charts as charts
from dices_cli.output import table_from_rows
from dices_cli.queries.catalog import get_query
from dices_cli.raters.audit import MISSING_GROUP
from dices_cli.report.context import (
    Context,
    Figure,
    Section,
    dataset_title,
    panels,
    select,
    stacked,
)

if TYPE_CHECKING:
    from dices_cli.evaluate.evaluation import Evaluation
    from dices_cli.report.models import ScoredModels

# The demographic columns of the rater pool overview, and of the shares without `by`.
POOL_COLUMNS = ("rater_gender", "rater_race", "rater_age", "rater_education")
DEFAULT_GROUPS = ("rater_race", "rater_gender")
TOP_CONVERSATIONS = 8  # per dataset and column, in the chart of conversations groups disagree on
SIGNIFICANT = 0.05  # Benjamini-Hochberg adjusted p-value below which a point is filled
NO_GOLD = "no gold label"


# The one bar-less row of a grid cell whose dataset lacks the column (DICES-350's rater_locale).
NO_GROUPS = "(none)"


def overview(ctx: Context) -> Section:
    result = ctx.run("overview")
    assert result is not None
    sizes = select(
        result.columns,
        [{**r, "dataset": dataset_title(r["dataset"])} for r in result.records()],
    )
    shares = {"share_no": "No", "share_yes": "Yes", "share_unsure": "Unsure"}
    answers = charts.stacked_shares(
        "Q_overall answers per dataset",
        "Share of ratings answering No (safe), Yes (unsafe) and Unsure, per dataset.",
        charts.records(sizes.columns, sizes.rows),
        ("dataset", "dataset"),
        shares,
    )
    pool = stacked(ctx, "qoverall-by-demographic", POOL_COLUMNS, ["raters", "ratings"])
    raters = charts.bars(
        "Raters per demographic group",
        "Number of raters in each group of gender, race, age and education, per dataset.",
        panels(pool),
        ("group", None),
        charts.count("raters", "raters"),
    )
    return Section(
        "overview",
        "Datasets and rater pool",
        [
            Figure(
                answers,
                sizes,
                "Each bar is one dataset: the longer its vermillion part, the more often raters "
                "called the chatbot's answer unsafe.",
            ),
            Figure(
                raters,
                pool,
                "Each bar counts the raters of one group; small groups give wide intervals in "
                "the sections below.",
            ),
        ],
    )


def qoverall_shares(ctx: Context) -> Section:
    groups = ctx.by or list(DEFAULT_GROUPS)
    keep = ["raters", "ratings", "share_yes", "share_yes_ci_low", "share_yes_ci_high"]
    shares = stacked(ctx, "qoverall-by-demographic", groups, keep)
    figures = [
        Figure(
            charts.interval_dots(
                "Share of Yes (unsafe) per group, with 95% intervals",
                "Share of ratings answering Yes per demographic group, with its 95% interval "
                "(clustered by the group's raters and the conversations), per dataset.",
                panels(shares),
                ("group", None),
                ("share_yes", "share of Yes (unsafe)"),
                ("share_yes_ci_low", "share_yes_ci_high"),
            ),
            shares,
            "A dot is a group's share of Yes and its line the 95% interval (a two-way "
            "cluster-robust t interval over the group's raters and the conversations): what "
            "raters and conversations like these would give; a group of fewer than 5 raters "
            "gets no line. `dices query qoverall-by-demographic` tests each group against "
            "the rest (difference, p_value, p_adjusted) and whether the groups differ at all "
            "(p_groups_differ).",
        )
    ]
    if len(groups) >= 2:
        figures.append(_intersection(ctx, groups))
    return Section("shares", "Q_overall per demographic group", figures)


def _intersection(ctx: Context, groups: Sequence[str]) -> Figure:
    result = ctx.run("qoverall-by-demographic", by=list(groups))
    assert result is not None
    rest = " / ".join(groups[1:])
    rows = [
        {
            **r,
            "dataset": dataset_title(r["dataset"]),
            rest: " / ".join(str(r[c]) for c in groups[1:]),
        }
        for r in result.records()
    ]
    columns = ["dataset", groups[0], rest, "raters", "ratings", "share_yes"]
    table = select([*columns, "share_yes_ci_low", "share_yes_ci_high"], rows)
    spec = charts.heatmap(
        f"Share of Yes (unsafe) per {groups[0]} x {rest}",
        f"Share of ratings answering Yes for each intersection of {' and '.join(groups)}.",
        charts.records(table.columns, table.rows),
        (groups[0], groups[0]),
        (rest, rest),
        ("share_yes", "share of Yes"),
        ".0%",
        count=("raters", "raters"),
    )
    return Figure(
        spec,
        table,
        "Each cell is one intersection of groups, lighter for a larger share of Yes, with its "
        "raters (n): a cell of few raters is noisy.",
    )


def gold_vs_crowd(ctx: Context) -> Section | None:
    cells = ctx.run("gold-vs-crowd")
    summary = ctx.run("gold-vs-crowd-summary")
    if cells is None or summary is None:
        return None
    spec = charts.heatmap(
        "Experts' gold label against the crowd's plurality label (DICES-350)",
        "Number of conversations for each pair of gold label and crowd plurality label.",
        charts.records(cells.columns, cells.rows),
        ("crowd_label", "crowd plurality label"),
        ("safety_gold", "experts' gold label"),
        ("conversations", "conversations"),
        "d",
        column=None,
    )
    return Section(
        "gold",
        "Experts against the crowd",
        [
            Figure(
                spec,
                cells,
                "The diagonal (No/No, Yes/Yes) is where the crowd agrees with the experts; "
                "the gold Yes row's No cell counts unsafe conversations the crowd called safe. "
                "tie: Yes tied for the most (the crowd cannot say); No=Unsure: No and Unsure "
                "tied above Yes (not unsafe).",
            )
        ],
        tables=[("How well the crowd's label predicts the experts' (Yes = unsafe)", summary)],
    )


def disagreement(ctx: Context) -> Section:
    items = ctx.run("item-distribution")
    assert items is not None
    columns = ["dataset", "item_id", "degree_of_harm", "safety_gold", "ratings", "share_yes"]
    columns += ["plurality", "entropy_bits"]
    rows = [
        {**r, "dataset": dataset_title(r["dataset"]), "safety_gold": r["safety_gold"] or NO_GOLD}
        for r in items.records()
    ]
    table = select(columns, rows)
    spec = charts.scatter(
        "Disagreement per conversation: entropy against share of Yes",
        "One point per conversation: its share of Yes answers against the entropy of its "
        "answers, coloured by the experts' gold label.",
        charts.records(table.columns, table.rows),
        ("share_yes", "share of Yes (unsafe)"),
        ("entropy_bits", "entropy of the answers (bits)"),
        ("safety_gold", "gold label"),
        {"No": charts.BLUE, "Yes": charts.VERMILLION, NO_GOLD: charts.GREY},
    )
    figures = [
        Figure(
            spec,
            table,
            "Points high up are conversations the raters split on (1.58 bits: a three-way "
            "split); vermillion points on the left are unsafe by the experts but safe to most "
            "raters.",
        )
    ]
    if ctx.by:
        figures.append(_group_gaps(ctx))
    return Section("disagreement", "Where raters disagree", figures)


def _group_gaps(ctx: Context) -> Figure:
    min_raters = get_query("group-disagreement").parameter("min_raters")
    assert min_raters is not None
    shown: list[dict[str, Any]] = []
    for column in ctx.by:  # one column at a time: intersections of a few raters gap widest
        result = ctx.run("group-disagreement", by=[column])
        records = [] if result is None else result.records()
        for dataset in ctx.datasets:  # the query ranks by adjusted p-value, then gap
            compared = [r for r in records if r["dataset"] == dataset and r["groups"] >= 2]
            shown += [
                {
                    **r,
                    "dataset": dataset_title(dataset),
                    "column": column,
                    "panel": f"{dataset_title(dataset)} · {column}",
                    "conversation": f"#{r['item_id']}: "
                    f"{charts.short(r['lowest_group'], 14)} ({r['lowest_raters']}) < "
                    f"{charts.short(r['highest_group'], 14)} ({r['highest_raters']})",
                }
                for r in compared[:TOP_CONVERSATIONS]
            ]
    columns = ["dataset", "column", "item_id", "lowest_group", "lowest_raters", "lowest_share_yes"]
    columns += ["highest_group", "highest_raters", "highest_share_yes", "gap", "test", "p_value"]
    columns += ["p_adjusted"]
    table = select(columns, shown)
    spec = charts.dumbbell(
        "Conversations the groups disagree on most",
        f"For the {TOP_CONVERSATIONS} conversations per dataset and column where the answer "
        "depends on the group most surely (smallest adjusted p-value, then largest gap), the "
        "share of Yes of the group with the lowest and of the one with the highest share. "
        f"Groups of fewer than {min_raters.convert(None)} raters on a conversation are left out.",
        charts.records(
            ["panel", "conversation", *columns],
            [(r["panel"], r["conversation"], *(r[c] for c in columns)) for r in shown],
        ),
        ("conversation", None),
        (("lowest_share_yes", "lowest group"), ("highest_share_yes", "highest group")),
        "share of Yes (unsafe) in the group",
    )
    return Figure(
        spec,
        table,
        "Each line joins the least and the most alarmed group of one conversation (named "
        "lowest < highest, with their raters); p_adjusted says whether the answers depend on "
        "the group more than chance would make them.",
    )


def rater_quality(ctx: Context) -> Section:
    from dices_cli.raters.audit import audit, audit_table
    from dices_cli.raters.quality import (
        COMPONENTS,
        DEMOGRAPHICS,
        RaterFilter,
        kept_raters,
        quality_table,
        score_raters,
    )

    session = ctx.session(ctx.datasets)
    raters = score_raters(session)  # runs the rater-quality query
    rule = RaterFilter()
    scores = quality_table(raters, rule)
    removed = {True: "removed by the DICES authors", False: "kept by the DICES authors"}
    rows = [
        (
            dataset_title(r["dataset"]),
            r["rater_id"],
            component,
            r[component],
            removed[r["published_removed"]],
        )
        for r in scores.records()
        for component in ["score", *COMPONENTS]
        if r[component] is not None
    ]
    long = table_from_rows(["dataset", "rater_id", "component", "value", "authors"], rows)
    spec = charts.strips(
        "Rater quality: score and its five components",
        "One tick per rater and component of the quality score (0 to 1), coloured by whether "
        "the DICES authors removed the rater; the dashed line is the default threshold.",
        charts.records(long.columns, long.rows),
        ("component", "component"),
        ("value", "value (1 = no sign of trouble)"),
        ("authors", "rater"),
        {removed[False]: charts.BLUE, removed[True]: charts.VERMILLION},
        rule.threshold,
    )
    audits = audit(session, raters, kept_raters(raters, rule))
    # One row per figure and a column per dataset: the audit's 14 figures side by side were
    # wider than the page.
    audited = audit_table(audits, rule.description)
    figures = [c for c in audited.columns if c not in ("dataset", "filter", "groups")]
    summary = table_from_rows(
        ["figure", *(dataset_title(r["dataset"]) for r in audited.records())],
        [(name, *(r[name] for r in audited.records())) for name in figures],
    )
    removal = table_from_rows(
        ["dataset", "column", "group", "raters", "removed", "removal_rate", "p_value"],
        [
            (dataset_title(a.dataset), c.column, g.group, g.raters, g.removed, g.rate, c.p_value)
            for column in DEMOGRAPHICS  # each column's datasets side by side
            for a in audits
            for c in a.columns
            if c.column == column
            for g in c.groups
        ],
    )
    removal_spec = charts.bars(
        f"Raters the default filter removes, per group (score below {rule.threshold:g})",
        "Share of each demographic group's raters whose quality score is below the threshold, "
        "with how many of how many.",
        # A column per dataset, a row per demographic column; each bar says "removed of
        # raters", even when none is. A dataset without the column (DICES-350 has no
        # rater_locale) says so in its cell: Vega lays out a grid with a cell missing wrongly.
        [{**r, "counted": f"{r['removed']} of {r['raters']}"} for r in removal.records()]
        + [
            {
                "dataset": dataset_title(a.dataset),
                "column": column,
                "group": NO_GROUPS,
                "removal_rate": 0.0,
                "counted": f"{dataset_title(a.dataset)} has no {column}",
            }
            for column in DEMOGRAPHICS
            for a in audits
            if column in {c.column for audited in audits for c in audited.columns}
            and column not in {c.column for c in a.columns}
        ],
        ("group", None),
        charts.share("removal_rate", "share of the group's raters removed"),
        label="counted",
        row="column",
        column="dataset",
    )
    return Section(
        "quality",
        "Rater quality and the filter audit",
        [
            Figure(
                spec,
                select(
                    scores.columns,
                    [{**r, "dataset": dataset_title(r["dataset"])} for r in scores.records()],
                ),
                "Ticks left of the dashed line belong to raters the default filter removes; "
                "vermillion ticks are the raters the DICES authors removed, so vermillion on the "
                "right marks removals the score does not explain.",
            ),
            Figure(
                removal_spec,
                removal,
                "A filter should remove raters for their work, not their group: a low p_value "
                "(exact test) says removal depends on the group.",
            ),
        ],
        tables=[
            (
                f"What the default filter (removing {rule.description}) changes, as "
                "the audit of dices filter-raters reports it",
                summary,
            )
        ],
    )


def agreement(ctx: Context) -> Section | None:
    if not ctx.by:
        return None
    metrics = {"irr": "IRR (alpha within)", "xrr": "XRR (with the rest)", "gai": "GAI"}
    marker = {"yes": "filled", "no": "hollow"}
    rows = []
    for column in ctx.by:
        result = ctx.run("agreement", by=[column], permutations=ctx.permutations, seed=ctx.seed)
        for r in [] if result is None else result.records():
            for metric, name in metrics.items():
                p_bh = r[f"{metric}_p_bh"]
                significant = "yes" if p_bh is not None and p_bh < SIGNIFICANT else "no"
                null_range = (r[f"{metric}_null_low"], r[f"{metric}_null_high"])
                rows.append(
                    (
                        dataset_title(r["dataset"]),
                        column,
                        r[column],
                        r["raters"],
                        name,
                        r[metric],
                        *null_range,
                        r[f"{metric}_p"],
                        p_bh,
                        significant,
                    )
                )
    columns = ["dataset", "column", "group", "raters", "metric", "value", "null_low", "null_high"]
    table = table_from_rows([*columns, "p_value", "p_bh", "significant"], rows)
    spec = charts.dots(
        "Agreement per group: IRR, XRR and GAI, against raters drawn at random",
        "Krippendorff's alpha within each group (IRR), with the rest of the pool (XRR) and "
        "their ratio (GAI), over a grey bar where 95% of as many raters drawn at random "
        "score, filled where the permutation test is significant.",
        [{**r, "label": charts.wrapped(str(r["group"]), 24)} for r in panels(table)],
        ("label", None),
        ("value", "value"),
        ("null_low", "null_high"),
        ("significant", f"p (BH) < {SIGNIFICANT}"),
        marker,
        row="panel",
        column="metric",
    )
    return Section(
        "agreement",
        "Agreement within and across groups",
        [
            Figure(
                spec,
                table,
                "A point is a group's value and its grey bar the null range, where 95% of "
                f"{ctx.permutations:,} random relabellings of the raters fall: a point outside "
                "its bar is one chance rarely gives; it is filled where the permutation test "
                "stays significant after Benjamini-Hochberg adjustment. GAI above 1: the group "
                "agrees with itself more than with the others.",
            )
        ],
        notes=[
            "The grey bars are null ranges, not confidence intervals: they show what a group "
            "of as many raters drawn at random would score, not how sure the value is. A "
            f"point is filled when its adjusted p-value is below {SIGNIFICANT}."
        ],
    )


# What the models chart shows against each reference (dices evaluate has more columns).
MODEL_METRICS = {
    "gold": ("accuracy", "f1", "kappa", "roc_auc"),
    "crowd": ("accuracy", "f1", "kappa", "roc_auc"),
    "crowd-share": ("jsd",),
}
REFERENCE_TITLES = {"gold": "experts' gold", "crowd": "crowd label", "crowd-share": "crowd shares"}
MODEL, HUMAN, SUSPECT = "model", "human baseline (raters drawn at random)", "polarity suspect"
DIFFERS, SAME = f"differs from the rest (p adj. < {SIGNIFICANT})", "no clear difference"


def models(ctx: Context) -> Section | None:
    from dices_cli.evaluate.baseline import DRAWS, baseline_name
    from dices_cli.evaluate.evaluation import LOWER_IS_BETTER

    scored = ctx.models
    if scored is None:
        return None
    if scored.persona is not None:
        return _personas(scored)
    suspects = {s.model for s in scored.pool.suspects}
    humans = {baseline_name(k) for k in scored.settings.baselines}
    kinds = {MODEL: charts.BLUE, HUMAN: charts.ORANGE, SUSPECT: charts.VERMILLION}
    rows = []
    for r in scored.pool.table.records():
        kind = HUMAN if r["model"] in humans else SUSPECT if r["model"] in suspects else MODEL
        for metric in MODEL_METRICS[r["reference"]]:
            if r[metric] is not None:
                estimate = (r[metric], r[f"{metric}_low"], r[f"{metric}_high"])
                rows.append((r["model"], kind, r["reference"], metric, *estimate, r["n"]))
    columns = ["model", "kind", "reference", "metric", "value", "low", "high", "n"]
    table = table_from_rows(columns, rows)
    labels = charts.short_labels((r[0] for r in rows), 24)
    data = [
        {
            **r,
            "label": labels[r["model"]],
            "panel": f"{REFERENCE_TITLES[r['reference']]} · {r['metric']}"
            + (" (lower is better)" if r["metric"] in LOWER_IS_BETTER else ""),
        }
        for r in table.records()
    ]
    title = dataset_title(scored.dataset)
    figures = [
        Figure(
            charts.estimates(
                f"Each model against the experts and the crowd ({title})",
                "Each model's metrics against the experts' gold label, the crowd's plurality "
                "label and the crowd's shares of answers, with 95% intervals, beside "
                "the human baseline.",
                data,
                ("label", None),
                ("value", "value"),
                ("low", "high"),
                ("kind", "scored"),
                kinds,
            ),
            table,
            "A dot is a model's metric and its line the 95% interval; the orange human baseline "
            "is what raters drawn at random reach, so a model at or beyond it rates like a "
            "person; a vermillion model agrees with the experts less than chance.",
        )
    ]
    if scored.groups:
        figures.append(_models_per_group(scored.groups))
    notes = [
        f"Scored by dices evaluate's core on {title} ({scored.source}): intervals from "
        f"the jackknife of the conversations (up to {scored.settings.bootstrap:,} blocks; "
        "dices evaluate's default is 1000) and, for groups, of the raters, seed "
        f"{scored.settings.seed}, crowd ties {scored.settings.ties}, a score from "
        f"{scored.settings.threshold:g} up is unsafe.",
        *(
            f"{baseline_name(k)}: {k} rater{'s' if k > 1 else ''} drawn at random per "
            f"conversation, scored against the other raters ({DRAWS} draws averaged): what a "
            "person reaches."
            for k in scored.settings.baselines
        ),
        *scored.pool.warnings,
    ]
    tables = [
        (
            f"Each model as one more rater{f', by {column}' if column else ''} ({title}): "
            "dices evaluate's figures",
            rated.table,
        )
        for column, rated in (scored.as_rater or {}).items()
    ]
    if scored.judged is not None:
        tables.append(("How the model was judged (dices judge's manifest)", scored.judged))
    notes.append(
        "As one more rater: xrr is the model's cross-replication reliability with the raters, "
        "irr the raters' own alpha, xrr_over_irr 1 when the model agrees with them as well as "
        "they agree with each other; a group's p-value relabels the raters (sizes kept), as "
        "the agreement section does. effective_judges: n / (1 + (n - 1) rho), rho the models' "
        "mean error correlation against the crowd label (docs/evaluate.md)."
    )
    return Section(
        "models",
        "Models against the experts, the crowd and the groups",
        figures,
        tables=tables,
        notes=notes,
        warnings=[suspect.message() for suspect in scored.pool.suspects],
    )


def _personas(scored: ScoredModels) -> Section:
    """A persona file (dices judge --persona): dices evaluate's persona figures as a table,
    each simulated group against its own real group and the rest, and the groups together."""
    title = dataset_title(scored.dataset)
    return Section(
        "models",
        f"Simulated {scored.persona} groups against the real ones",
        [],
        tables=[
            (
                f"Each simulated group against its real group and the rest ({title}, "
                f"{scored.source}): dices evaluate's persona figures",
                scored.pool.table,
            ),
            *(
                [("How the model was judged (dices judge's manifest)", scored.judged)]
                if scored.judged is not None
                else []
            ),
        ],
        notes=[
            "Simulated raters are not raters: a model prompted as a group says how far its "
            "personas track the real groups' differences, not what those groups think.",
            "persona_signal comes first: does the persona carry any group signal at all? "
            "The difference correlation, its p-value from shuffling within each conversation "
            "which simulated group stands for which real group.",
            "*_own: against the group's own raters; *_rest: against the other raters; "
            "*_difference: own minus rest, with the permutation p-value of evaluate's group "
            "rows. spread_*: per conversation the standard deviation across groups of the "
            "unsafe share, real and simulated; difference_pearson/_spearman: real "
            "group-minus-rest shares against simulated ones, over conversation x group cells.",
            "Intervals from the jackknife of the conversations and of the raters within "
            f"their groups, {scored.settings.permutations:,} relabellings "
            f"of the raters, seed {scored.settings.seed}.",
            *scored.pool.summary,
        ],
    )


def _models_per_group(groups: dict[str, Evaluation]) -> Figure:
    rows = []
    for column, evaluation in groups.items():
        records = evaluation.table.records()
        pool = {r["model"]: r["kappa"] for r in records if r["compared_on"] is None}
        for r in records:
            if r["compared_on"] is None:
                continue
            group = r[column] if r[column] is not None else MISSING_GROUP
            p = r["p_adjusted"]
            differs = DIFFERS if p is not None and p < SIGNIFICANT else SAME
            kappa = (r["kappa"], r["kappa_low"], r["kappa_high"], pool[r["model"]], r["rest"])
            compared = (r["difference"], p, differs)
            rows.append((r["model"], column, group, r["raters"], r["n"], *kappa, *compared))
    columns = ["model", "column", "group", "raters", "n", "kappa", "kappa_low", "kappa_high"]
    columns += ["pool_kappa", "rest_kappa", "difference", "p_adjusted", "compared"]
    table = table_from_rows(columns, rows)
    records = table.records()
    groups_shown = charts.short_labels((str(r["group"]) for r in records), 24)
    models = charts.short_labels((r["model"] for r in records), 24)
    data = [
        {
            **r,
            "label": groups_shown[str(r["group"])],
            "panel": f"{models[r['model']]} · {r['column']}",
        }
        for r in records
    ]
    spec = charts.estimates(
        "Each model's agreement with each group's crowd label",
        "Cohen's kappa of each model against the plurality label of each group's raters, "
        "with 95% intervals (raters resampled within the group, and conversations); the "
        "dashed line is the model's kappa against the whole crowd.",
        data,
        ("label", None),
        ("kappa", "Cohen's kappa against the group"),
        ("kappa_low", "kappa_high"),
        ("compared", "against the rest"),
        {DIFFERS: charts.ORANGE, SAME: charts.BLUE},
        reference="pool_kappa",
    )
    return Figure(
        spec,
        table,
        "A model that agrees with one group more than with the rest of the pool (orange: "
        "the permutation test of the difference, raters' group labels shuffled, "
        "Benjamini-Hochberg adjusted) has learnt that group's view of safety; the dashed "
        "line is its agreement with everyone. A small group's own plurality is noisier, so "
        "every model agrees less with it: the test compares each group with random groups "
        "of its size.",
    )


# The models come right after the overview: who asks for them reads them first.
SECTIONS: list[Callable[[Context], Section | None]] = [
    overview,
    models,
    qoverall_shares,
    gold_vs_crowd,
    disagreement,
    rater_quality,
    agreement,
]

"""The rule that turns the three workers' annotations into ProsocialDialog's safety label.

Kim et al. 2022, "ProsocialDialog: A Prosocial Backbone for Conversational Agents" (EMNLP;
arXiv 2205.12688), Appendix A.4, "Criterion for the final safety labels": three workers
each label an utterance casual, needs caution or needs intervention, and

- one or more votes for needs intervention give needs intervention (a single vote is
  enough: the authors do not want a case that needs intervention to be missed);
- with no such vote, the number of needs caution votes grades the label: none (all three
  casual) -> casual, one -> possibly needs caution, two -> probably needs caution,
  three -> needs caution.

A differing published label is reported, never changed (see `dices_cli.formats.prosocial.read`).
"""

from __future__ import annotations

import polars as pl

from dices_cli.families.prosocial import SAFETY_LABELS


def recomputed_label(annotations: pl.Expr) -> pl.Expr:
    """The safety label a list column of three annotations implies (see the module's
    docstring), as an ENUM of SAFETY_LABELS."""
    caution = annotations.list.count_matches("needs caution")
    return (
        pl.when(annotations.list.count_matches("needs intervention") >= 1)
        .then(pl.lit("__needs_intervention__"))
        .when(caution == 0)
        .then(pl.lit("__casual__"))
        .when(caution == 1)
        .then(pl.lit("__possibly_needs_caution__"))
        .when(caution == 2)
        .then(pl.lit("__probably_needs_caution__"))
        .otherwise(pl.lit("__needs_caution__"))
        .cast(pl.Enum(SAFETY_LABELS))
    )

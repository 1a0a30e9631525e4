"""The rule that turns the three workers' annotations into ProsocialDialog's safety label.

Kim et al. 2022, "ProsocialDialog: A Prosocial Backbone for Conversational Agents" (EMNLP;
arXiv 2205.12688), section 3 "Collecting Dialogue Safety Labels"
(\\label{subsec:safety_collection} in the paper's source): three workers each label an
utterance casual, needs caution or needs intervention, and the five final labels grade how
many of them flagged it. As implemented here:

- needs intervention when at least two of the three say needs intervention (a majority);
- otherwise by the number of workers who say casual: three -> casual, two -> possibly
  needs caution, one -> probably needs caution, none -> needs caution.

The five real rows we hold and the dataset card's example (caution, intervention,
intervention -> needs intervention) agree with it. The split of the flagged cases when one
worker says needs intervention and one says casual (probably needs caution here) is our
reading, not a sentence we could quote; a differing published label is reported, never
changed (see `dices_cli.prosocial.read`).
"""

from __future__ import annotations

import polars as pl

from dices_cli.families.prosocial import SAFETY_LABELS


def recomputed_label(annotations: pl.Expr) -> pl.Expr:
    """The safety label a list column of three annotations implies (see the module's
    docstring), as an ENUM of SAFETY_LABELS."""
    casual = annotations.list.count_matches("casual")
    return (
        pl.when(annotations.list.count_matches("needs intervention") >= 2)
        .then(pl.lit("__needs_intervention__"))
        .when(casual == 3)
        .then(pl.lit("__casual__"))
        .when(casual == 2)
        .then(pl.lit("__possibly_needs_caution__"))
        .when(casual == 1)
        .then(pl.lit("__probably_needs_caution__"))
        .otherwise(pl.lit("__needs_caution__"))
        .cast(pl.Enum(SAFETY_LABELS))
    )

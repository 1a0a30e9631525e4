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

from collections.abc import Sequence

# By the number of casual annotations (0-3) when there is no majority for intervention.
_BY_CASUAL_COUNT = (
    "__needs_caution__",
    "__probably_needs_caution__",
    "__possibly_needs_caution__",
    "__casual__",
)


def recomputed_label(annotations: Sequence[str]) -> str:
    """The safety label three annotations imply (see the module's docstring)."""
    if annotations.count("needs intervention") >= 2:
        return "__needs_intervention__"
    return _BY_CASUAL_COUNT[annotations.count("casual")]

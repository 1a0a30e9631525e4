"""What each command that reads data does between parsing its arguments and rendering its
result, as one function each: the command line (`dices_cli.cli.commands`) and the Python API
(`dices_cli.api`) both call these, so their results are the same rows.

Arguments come typed and are checked here as on the command line; messages name parameters
as `Option`s, which the command line says as flags and the API by their names. What is said
to the user on the way (a note, the raters seen) goes to the caller's `tell`.
"""

from dices_cli.runs.canned import (
    CannedRun,
    family_asked,
    no_such_query,
    other_families,
    run_canned,
    run_family_query,
)
from dices_cli.runs.common import Tell, check_choice, chooses, refuse_rater_selection, unsaid
from dices_cli.runs.evaluation import (
    dices_votes,
    dices_votes_only,
    evaluation_settings,
    persona_of,
    prosocial_votes,
    run_evaluation,
)
from dices_cli.runs.raters import RaterFilterRun, run_rater_filter
from dices_cli.runs.report import ReportRun, run_report

__all__ = [
    "CannedRun",
    "RaterFilterRun",
    "ReportRun",
    "Tell",
    "check_choice",
    "chooses",
    "dices_votes",
    "dices_votes_only",
    "evaluation_settings",
    "family_asked",
    "no_such_query",
    "other_families",
    "persona_of",
    "prosocial_votes",
    "refuse_rater_selection",
    "run_canned",
    "run_evaluation",
    "run_family_query",
    "run_rater_filter",
    "run_report",
    "unsaid",
]

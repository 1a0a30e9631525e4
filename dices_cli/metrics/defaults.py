"""The resampling defaults every group figure uses: the CLI, the report and the library.

One home, so that `dices report` and `dices query`/`dices evaluate` give the same p-values
and intervals for the same data (and say so): change them here or not at all.
"""

from __future__ import annotations

PERMUTATIONS = 1000  # random relabellings of the raters behind a group test's p-value
BOOTSTRAP = 1000  # resamples behind an interval
SEED = 0  # of both
# How an interval about rater groups resamples (docs/metrics.md, "Intervals"):
#   clustered      raters within their group and conversations (two-way bootstrap): raters
#                  and conversations like these;
#   conversations  conversations only: this rater pool, on conversations like these;
#   wilson         every rating independent (shares only): a lower bound, labelled as such.
INTERVALS = ("clustered", "conversations", "wilson")
INTERVAL = "clustered"

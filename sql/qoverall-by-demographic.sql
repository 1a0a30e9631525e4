-- name: qoverall-by-demographic
-- summary: Q_overall per demographic group, or per intersection of groups, with 95% intervals.
-- datasets: 350 990
-- param by: columns, required: Rater columns to group by; several --by give their intersection.
-- column dataset: The dataset: 350 or 990.
-- column {by}: One column per --by column, holding the group's value (phase first, then the rater columns in the data's order).
-- column raters: Raters in the group.
-- column ratings: Ratings by the group.
-- column n_no: Ratings answering No.
-- column n_yes: Ratings answering Yes.
-- column n_unsure: Ratings answering Unsure.
-- column share_no: Share of the ratings that are No (safe).
-- column share_yes: Share of the ratings that are Yes (unsafe).
-- column share_unsure: Share of the ratings that are Unsure.
-- column share_yes_ci_low: Lower end of the 95% Wilson interval of share_yes.
-- column share_yes_ci_high: Upper end of the 95% Wilson interval of share_yes.
-- chart: share_yes [share_yes_ci_low, share_yes_ci_high] by {by} per dataset
-- answer: share_yes, share_yes_ci_low, share_yes_ci_high
-- explanation:
--   Do groups of raters see safety differently? One row per group (in the columns' own
--   order, e.g. gen z, millenial, gen x+): how many raters and ratings it has, how its
--   ratings split between No, Yes and Unsure, and a 95% Wilson score interval for its
--   share of Yes. Ratings of one rater are not independent, so read the interval as a
--   lower bound on the uncertainty; `dices query agreement` tests group differences.
WITH grouped AS (
    SELECT
        COLUMNS(lambda c: c = 'dataset' OR list_contains($by, c)),
        count(DISTINCT rater_id) AS raters,
        count(*) AS ratings,
        count(*) FILTER (Q_overall = 'No') AS n_no,
        count(*) FILTER (Q_overall = 'Yes') AS n_yes,
        count(*) FILTER (Q_overall = 'Unsure') AS n_unsure
    FROM ratings_wide
    GROUP BY ALL
)
SELECT
    *,
    n_no / ratings AS share_no,
    n_yes / ratings AS share_yes,
    n_unsure / ratings AS share_unsure,
    wilson_low(n_yes, ratings) AS share_yes_ci_low,
    wilson_high(n_yes, ratings) AS share_yes_ci_high
FROM grouped
ORDER BY ALL

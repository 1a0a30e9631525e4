-- name: qoverall-by-demographic
-- summary: Q_overall per demographic group, or per intersection of groups, with 95% intervals.
-- datasets: 350 990
-- param by: columns, required: Rater columns to group by; several --by give their intersection.
-- param interval: choice(clustered|conversations|wilson) = clustered: How the 95% interval of share_yes is made: clustered counts raters and conversations as samples (raters and conversations like these; a two-way cluster-robust variance, t with Satterthwaite degrees of freedom, on the logit); conversations counts conversations only (this rater pool); wilson treats every rating as independent (too narrow: ratings of one rater or conversation are not).
-- param permutations: integer in [0, 100000] = 1000: Random relabellings of the raters behind p_value, p_adjusted and p_groups_differ (0 = no test).
-- param seed: integer in [0, 4294967295] = 0: Seed of the relabellings; the same seed gives the same p-values.
-- param alternative: choice(two-sided|greater|less) = two-sided: The alternative of p_value: two-sided (the group's share of Yes differs from the rest's), greater (it is higher: does this group call conversations unsafe more often?) or less (lower); p_adjusted adjusts these p-values.
-- compute: dices_cli.metrics.shares:compute
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
-- column share_yes_ci_low: Lower end of the 95% interval of share_yes, made as `interval` says.
-- column share_yes_ci_high: Upper end of the 95% interval of share_yes.
-- column interval: The method of the interval: clustered, conversations or wilson.
-- column interval_note: Empty where the interval holds its level; else why it is left empty (fewer than 5 raters or conversations: no interval holds there).
-- column difference: The group's share_yes minus that of the other groups' ratings (of the same dataset and, for degree-of-harm, degree); empty without --by.
-- column difference_ci_low: Lower end of the 95% interval of difference, made as `interval` says (empty below 5 raters on either side).
-- column difference_ci_high: Upper end of the 95% interval of difference.
-- column p_value: p-value of difference for `alternative` (two-sided unless asked), from relabelling the raters at random with every group's size kept.
-- column p_adjusted: p_value adjusted by Benjamini-Hochberg over the groups of the dataset (and degree).
-- column p_groups_differ: One p-value per dataset (and degree), the same on each of its rows: do the groups' shares differ at all (their ratings-weighted spread, against relabelled raters)?
-- chart: share_yes [share_yes_ci_low, share_yes_ci_high] by {by} per dataset
-- answer: share_yes, share_yes_ci_low, share_yes_ci_high
-- explanation:
--   Do groups of raters see safety differently? One row per group (in the columns' own
--   order, e.g. gen z, millenial, gen x+): how many raters and ratings it has, how its
--   ratings split between No, Yes and Unsure, and a 95% interval for its share of Yes.
--   The interval is clustered by default: it counts the group's raters and the
--   conversations as samples (a two-way cluster-robust variance, t with Satterthwaite
--   degrees of freedom, on the logit), so it covers what raters and conversations like
--   these would say, from 5 raters up; a smaller group's row says so in interval_note
--   instead of an interval. --interval conversations counts conversations only (this
--   rater pool), --interval wilson treats the ratings as independent, which they are not
--   (many times too narrow). Does a group say Yes more often than the others? difference
--   is its share minus the other groups', with its interval; p_value tests it by
--   relabelling raters at random (group sizes kept; --permutations, --seed), two-sided
--   unless --alternative greater (is the group's share higher?) or less asks one way,
--   which finds a shift that way more often and never one the other way; p_adjusted
--   corrects for the number of groups (Benjamini-Hochberg), and p_groups_differ asks
--   whether the groups differ at all. (`dices query agreement` measures how much a
--   group's raters agree with each other and with the rest, not their share of Yes.)
WITH grouped AS (
    SELECT
        COLUMNS(lambda c: c = 'dataset' OR list_contains($by, c)),
        count(DISTINCT rater_id) AS raters,
        count(*) AS ratings,
        count(*) FILTER (Q_overall = 'No') AS n_no,
        count(*) FILTER (Q_overall = 'Yes') AS n_yes,
        count(*) FILTER (Q_overall = 'Unsure') AS n_unsure,
    -- Every rating's rater, conversation and Yes (1) or not (0), for the interval's
    -- resampling (dices_cli.metrics.shares, which drops these lists).
    list(rater_id) AS rating_rater,
    list(item_id) AS rating_item,
    list((Q_overall IS NOT DISTINCT FROM 'Yes')::UTINYINT) AS rating_yes
    FROM ratings_wide
    GROUP BY ALL
)
SELECT
    * EXCLUDE (rating_rater, rating_item, rating_yes),
    n_no / ratings AS share_no,
    n_yes / ratings AS share_yes,
    n_unsure / ratings AS share_unsure,
    rating_rater,
    rating_item,
    rating_yes
FROM grouped
ORDER BY ALL

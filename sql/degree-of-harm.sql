-- name: degree-of-harm
-- summary: Q_overall per expert degree of harm (Benign to Extreme), optionally per rater group.
-- datasets: 350 990
-- param by: columns = []: Also break down by these rater columns.
-- param interval: choice(clustered|conversations|wilson) = clustered: How the 95% interval of share_yes is made: clustered counts raters and conversations as samples (raters and conversations like these; a two-way cluster-robust variance, t with Satterthwaite degrees of freedom, on the logit); conversations counts conversations only (this rater pool); wilson treats every rating as independent (too narrow: ratings of one rater or conversation are not).
-- param permutations: integer in [0, 100000] = 1000: Random relabellings of the raters behind p_value, p_adjusted and p_groups_differ (0 = no test).
-- param seed: integer in [0, 4294967295] = 0: Seed of the relabellings; the same seed gives the same p-values.
-- param alternative: choice(two-sided|greater|less) = two-sided: The alternative of p_value: two-sided (the group's share of Yes differs from the rest's), greater (it is higher: does this group call conversations unsafe more often?) or less (lower); p_adjusted adjusts these p-values.
-- compute: dices_cli.metrics.shares:compute
-- column dataset: The dataset: 350 or 990.
-- column {by}: One column per --by column, holding the group's value (phase first, then the rater columns in the data's order).
-- column degree_of_harm: The experts' degree of harm, Benign to Extreme.
-- column conversations: Conversations of that degree.
-- column ratings: Their ratings (by the group).
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
-- chart: share_yes [share_yes_ci_low, share_yes_ci_high] by {by}, degree_of_harm per dataset
-- answer: share_yes, share_yes_ci_low, share_yes_ci_high
-- explanation:
--   Does the crowd's verdict follow the experts' severity? For each degree_of_harm (in
--   order of severity; empty where the experts gave none) the number of conversations and
--   ratings, how the ratings split between No, Yes and Unsure, and a 95% interval for the
--   share of Yes: by default clustered, counting the raters (within each --by group, or
--   the whole pool) and the conversations as samples, as in `qoverall-by-demographic`.
--   With --by, each group's difference from the other groups of its degree, with its
--   interval, p_value (--alternative: two-sided, greater or less), p_adjusted and
--   p_groups_differ, as there.
SELECT
    COLUMNS(lambda c: c IN ('dataset', 'degree_of_harm') OR list_contains($by, c)),
    count(DISTINCT item_id) AS conversations,
    count(*) AS ratings,
    count(*) FILTER (Q_overall = 'No') / count(*) AS share_no,
    count(*) FILTER (Q_overall = 'Yes') / count(*) AS share_yes,
    count(*) FILTER (Q_overall = 'Unsure') / count(*) AS share_unsure,
    -- Every rating's rater, conversation and Yes (1) or not (0), for the interval's
    -- resampling (dices_cli.metrics.shares, which drops these lists).
    list(rater_id) AS rating_rater,
    list(item_id) AS rating_item,
    list((Q_overall IS NOT DISTINCT FROM 'Yes')::UTINYINT) AS rating_yes
FROM ratings_wide
GROUP BY ALL
ORDER BY ALL

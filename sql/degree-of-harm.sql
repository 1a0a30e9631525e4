-- name: degree-of-harm
-- summary: Q_overall per expert degree of harm (Benign to Extreme), optionally per rater group.
-- datasets: 350 990
-- param by: columns = []: Also break down by these rater columns.
-- param interval: choice(clustered|conversations|wilson) = clustered: How the 95% interval of share_yes is made: clustered resamples raters within their group and conversations (raters and conversations like these); conversations resamples conversations only (this rater pool); wilson treats every rating as independent (too narrow: ratings of one rater or conversation are not).
-- param bootstrap: integer in [0, 10000] = 1000: Bootstrap resamples behind a clustered or conversations interval (0 = no interval; 10,000 take 0.45 GB on DICES-990).
-- param seed: integer in [0, 4294967295] = 0: Seed of the bootstrap; the same seed gives the same intervals.
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
-- chart: share_yes [share_yes_ci_low, share_yes_ci_high] by {by}, degree_of_harm per dataset
-- answer: share_yes, share_yes_ci_low, share_yes_ci_high
-- explanation:
--   Does the crowd's verdict follow the experts' severity? For each degree_of_harm (in
--   order of severity; empty where the experts gave none) the number of conversations and
--   ratings, how the ratings split between No, Yes and Unsure, and a 95% interval for the
--   share of Yes: by default a two-way bootstrap of the raters (within each --by group, or
--   the whole pool) and of the conversations, as in `qoverall-by-demographic`.
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

-- name: qoverall-by-demographic
-- summary: Q_overall per demographic group, or per intersection of groups, with 95% intervals.
-- datasets: 350 990
-- param by: columns, required: Rater columns to group by; several --by give their intersection.
-- param interval: choice(clustered|conversations|wilson) = clustered: How the 95% interval of share_yes is made: clustered resamples raters within their group and conversations (raters and conversations like these); conversations resamples conversations only (this rater pool); wilson treats every rating as independent (too narrow: ratings of one rater or conversation are not).
-- param bootstrap: integer in [0, 10000] = 1000: Bootstrap resamples behind a clustered or conversations interval (0 = no interval; 10,000 take 0.45 GB on DICES-990).
-- param seed: integer in [0, 4294967295] = 0: Seed of the bootstrap; the same seed gives the same intervals.
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
-- chart: share_yes [share_yes_ci_low, share_yes_ci_high] by {by} per dataset
-- answer: share_yes, share_yes_ci_low, share_yes_ci_high
-- explanation:
--   Do groups of raters see safety differently? One row per group (in the columns' own
--   order, e.g. gen z, millenial, gen x+): how many raters and ratings it has, how its
--   ratings split between No, Yes and Unsure, and a 95% interval for its share of Yes.
--   The interval is clustered by default: a two-way bootstrap that resamples the group's
--   raters and the conversations (--bootstrap times, seeded by --seed), so it covers what
--   raters and conversations like these would say; --interval conversations resamples
--   conversations only (this rater pool), --interval wilson treats the ratings as
--   independent, which they are not (many times too narrow). The interval column names the
--   method. `dices query agreement` tests group differences.
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

-- name: label-by-group
-- summary: A declared label per rater group: raters, ratings, mean and share in the positive class (e.g. offensiveness >= 3).
-- datasets: declared
-- scales: binary ordinal
-- param by: attributes = []: Rater attributes to group by (dices sql -d NAME --schema lists them); several give their intersection; none: all raters.
-- param label: label: The label; the declaration's first when not given.
-- param interval: choice(clustered|conversations|wilson) = clustered: How the 95% interval of share_positive is made: clustered resamples raters within their group and items (raters and items like these); conversations resamples items only (this rater pool); wilson treats every rating as independent (too narrow).
-- param bootstrap: integer in [0, 10000] = 1000: Bootstrap resamples behind a clustered or conversations interval (0 = no interval).
-- param seed: integer in [0, 4294967295] = 0: Seed of the bootstrap; the same seed gives the same intervals.
-- compute: dices_cli.metrics.any_family:share_intervals
-- column dataset: The dataset.
-- column {by}: One column per --by attribute, holding the group's value.
-- column raters: Raters in the group who gave the label.
-- column items: Items they rated.
-- column ratings: Their ratings of the label (a missing code is no rating).
-- column n_positive: Ratings in the declared positive class.
-- column share_positive: n_positive / ratings.
-- column mean: Mean value (ordinal labels; named values: their rank from 1); empty for a binary label.
-- column positive: The values of the positive class, as declared.
-- column share_positive_ci_low: Lower end of the 95% interval of share_positive, made as `interval` says.
-- column share_positive_ci_high: Upper end of the 95% interval of share_positive.
-- column interval: The method of the interval: clustered, conversations or wilson.
-- answer: raters, ratings, share_positive, share_positive_ci_low, share_positive_ci_high, mean
-- explanation:
--   Do groups of raters judge differently? For a binary or ordinal label with a declared
--   positive class (POPQUORN offensiveness: 3, 4 or 5 on 1-5), one row per group of the
--   --by rater attributes: how many raters, items and ratings it has, its share of ratings
--   in the positive class (the share at or above the threshold) and, for an ordinal
--   label, its mean. A nominal label has neither: label-distribution gives its split.
--   The 95% interval of share_positive is DICES's (qoverall-by-demographic): by default a
--   two-way bootstrap of the group's raters and the items (docs/metrics.md).
--   `dices query agreement -d NAME --by ...` tests whether groups agree differently.
SELECT
    COLUMNS(lambda c: c = 'dataset' OR list_contains($by, c)),
    count(DISTINCT rater_id) AS raters,
    count(DISTINCT item_id) AS items,
    count(*) AS ratings,
    count(*) FILTER (positive) AS n_positive,
    count(*) FILTER (positive) / count(*) AS share_positive,
    CASE WHEN any_value(kind) = 'ordinal' THEN avg(number) END AS mean,
    any_value($positive_values) AS positive,
    -- Every rating's rater, item and positive (1) or not (0), for the interval's
    -- resampling (dices_cli.metrics.shares, which drops these lists).
    list(rater) AS rating_rater,
    list(item) AS rating_item,
    list(positive::UTINYINT) AS rating_yes
FROM (
    SELECT
        *,
        dense_rank() OVER (ORDER BY rater_id) AS rater,
        dense_rank() OVER (ORDER BY item_id) AS item
    FROM label_values
    WHERE label = $label
)
JOIN (SELECT COLUMNS(lambda c: c IN ('dataset', 'rater_id') OR list_contains($by, c)) FROM raters)
    USING (dataset, rater_id)
GROUP BY ALL
ORDER BY ALL

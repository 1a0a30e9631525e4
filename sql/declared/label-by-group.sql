-- name: label-by-group
-- summary: A declared label per rater group: raters, ratings, mean and share in the positive class (e.g. offensiveness >= 3).
-- datasets: declared
-- scales: binary ordinal
-- param by: attributes = []: Rater attributes to group by (dices sql -d NAME --schema lists them); several give their intersection; none: all raters.
-- param label: label: The label; the declaration's first when not given.
-- param interval: choice(clustered|conversations|wilson) = clustered: How the 95% interval of share_positive is made: clustered counts raters and items as samples (raters and items like these; a two-way cluster-robust variance, t with Satterthwaite degrees of freedom, on the logit); conversations counts items only (this rater pool); wilson treats every rating as independent (too narrow).
-- param permutations: integer in [0, 100000] = 1000: Random relabellings of the raters behind p_value, p_adjusted and p_groups_differ (0 = no test).
-- param seed: integer in [0, 4294967295] = 0: Seed of the relabellings; the same seed gives the same p-values.
-- param alternative: choice(two-sided|greater|less) = two-sided: The alternative of p_value: two-sided (the group's share in the positive class differs from the rest's), greater (it is higher) or less (lower); p_adjusted adjusts these p-values.
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
-- column interval_note: Empty where the interval holds its level; else why it is left empty (fewer than 5 raters or items: no interval holds there).
-- column difference: The group's share_positive minus that of the other groups' ratings; empty without --by.
-- column difference_ci_low: Lower end of the 95% interval of difference, made as `interval` says (empty below 5 raters on either side).
-- column difference_ci_high: Upper end of the 95% interval of difference.
-- column p_value: p-value of difference for `alternative` (two-sided unless asked), from relabelling the raters at random with every group's size kept.
-- column p_adjusted: p_value adjusted by Benjamini-Hochberg over the groups.
-- column p_groups_differ: One p-value, the same on each row: do the groups' shares differ at all (their ratings-weighted spread, against relabelled raters)?
-- answer: raters, ratings, share_positive, share_positive_ci_low, share_positive_ci_high, mean, difference, p_adjusted
-- explanation:
--   Do groups of raters judge differently? For a binary or ordinal label with a declared
--   positive class (POPQUORN offensiveness: 3, 4 or 5 on 1-5), one row per group of the
--   --by rater attributes: how many raters, items and ratings it has, its share of ratings
--   in the positive class (the share at or above the threshold) and, for an ordinal
--   label, its mean. A nominal label has neither: label-distribution gives its split.
--   The 95% interval of share_positive is DICES's (qoverall-by-demographic): by default a
--   two-way cluster-robust t interval over the group's raters and the items, none below 5
--   (docs/metrics.md). Does a group rate in the positive class more often? difference is
--   its share minus the other groups', with its interval; p_value tests it by relabelling
--   raters at random (group sizes kept; --permutations, --seed), two-sided unless
--   --alternative asks one way; p_adjusted corrects for the number of groups
--   (Benjamini-Hochberg), and p_groups_differ asks whether the groups differ at all.
--   `dices query agreement -d NAME --by ...` measures how much groups agree.
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
    FROM asked_label_values
    WHERE label = $label
)
JOIN (SELECT COLUMNS(lambda c: c IN ('dataset', 'rater_id') OR list_contains($by, c)) FROM raters)
    USING (dataset, rater_id)
GROUP BY ALL
ORDER BY ALL

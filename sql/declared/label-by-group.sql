-- name: label-by-group
-- summary: A declared label per rater group: raters, ratings, mean and share in the positive class (e.g. offensiveness >= 3).
-- datasets: declared
-- scales: binary ordinal
-- param by: attributes = []: Rater attributes to group by (dices sql -d NAME --schema lists them); several give their intersection; none: all raters.
-- param label: label: The label; the declaration's first when not given.
-- column dataset: The dataset.
-- column {by}: One column per --by attribute, holding the group's value.
-- column raters: Raters in the group who gave the label.
-- column items: Items they rated.
-- column ratings: Their ratings of the label (a missing code is no rating).
-- column n_positive: Ratings in the declared positive class.
-- column share_positive: n_positive / ratings.
-- column mean: Mean value (ordinal labels; named values: their rank from 1); empty for a binary label.
-- column positive: The values of the positive class, as declared.
-- answer: raters, ratings, share_positive, mean
-- explanation:
--   Do groups of raters judge differently? For a binary or ordinal label with a declared
--   positive class (POPQUORN offensiveness: 3, 4 or 5 on 1-5), one row per group of the
--   --by rater attributes: how many raters, items and ratings it has, its share of ratings
--   in the positive class (the share at or above the threshold) and, for an ordinal
--   label, its mean. A nominal label has neither: label-distribution gives its split.
--   `dices query agreement -d NAME --by ...` tests whether groups agree differently.
SELECT
    COLUMNS(lambda c: c = 'dataset' OR list_contains($by, c)),
    count(DISTINCT rater_id) AS raters,
    count(DISTINCT item_id) AS items,
    count(*) AS ratings,
    count(*) FILTER (positive) AS n_positive,
    count(*) FILTER (positive) / count(*) AS share_positive,
    CASE WHEN any_value(kind) = 'ordinal' THEN avg(number) END AS mean,
    any_value($positive_values) AS positive
FROM label_values
JOIN raters USING (dataset, rater_id)
WHERE label = $label
GROUP BY ALL
ORDER BY ALL

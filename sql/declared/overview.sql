-- name: overview
-- summary: Size of a declared dataset: per label, its scale, items, raters, ratings, mean and share in the positive class.
-- datasets: declared
-- column dataset: The dataset.
-- column label: The label, in the declaration's order.
-- column scale: Its scale: binary, nominal or ordinal.
-- column items: Items with a rating of the label.
-- column raters: Raters who gave the label.
-- column ratings: Ratings of the label (a missing code is no rating).
-- column ratings_per_item: Mean ratings per item.
-- column mean: Mean value of an ordinal label (named values: their rank from 1); empty for binary and nominal labels.
-- column share_positive: Share of the ratings in the declared positive class; empty when the scale declares none.
-- answer: items, raters, ratings, share_positive
-- explanation:
--   The first look at a declared dataset (POPQUORN, the LeWiDi sets, D3CODE, your own):
--   one row per declared label with its scale, how many items, raters and ratings hold
--   it, and, where they apply, the mean value (ordinal scales) and the share of the
--   ratings in the positive class the scale declares (POPQUORN offensiveness: 3 or more).
SELECT
    dataset,
    label,
    any_value(kind) AS scale,
    count(DISTINCT item_id) AS items,
    count(DISTINCT rater_id) AS raters,
    count(*) AS ratings,
    count(*) / count(DISTINCT item_id) AS ratings_per_item,
    CASE WHEN any_value(kind) = 'ordinal' THEN avg(number) END AS mean,
    avg(positive::INTEGER) AS share_positive
FROM label_values
JOIN (SELECT DISTINCT label, label_order FROM scale_values) USING (label)
GROUP BY dataset, label
ORDER BY dataset, any_value(label_order)

-- name: label-distribution
-- summary: How a declared label's ratings split over its values, per rater group.
-- datasets: declared
-- param by: attributes = []: Rater attributes to group by; several give their intersection; none: all raters.
-- param label: label: The label; the declaration's first when not given.
-- column dataset: The dataset.
-- column {by}: One column per --by attribute, holding the group's value.
-- column value: A value of the label's scale, in the scale's order.
-- column ratings: The group's ratings giving the value.
-- column share: Share of the group's ratings of the label that give it.
-- column group_ratings: The group's ratings of the label.
-- answer: value, ratings, share
-- explanation:
--   The whole distribution of a label of any scale: one row per group of the --by rater
--   attributes and value of the scale (in the scale's order; a value nobody in the group
--   gave is absent), with its count and share of the group's ratings.
WITH counted AS (  -- per group and value as stored; the scale is joined to the counts
    SELECT
        COLUMNS(lambda c: c = 'dataset' OR list_contains($by, c)),
        value AS key,
        count(*) AS ratings
    FROM asked_ratings
    JOIN (SELECT COLUMNS(lambda c: c = 'rater_id' OR list_contains($by, c)) FROM raters)
        USING (rater_id)  -- a declared session holds one dataset
    GROUP BY ALL
),
grouped AS (
    SELECT c.* EXCLUDE (key, ratings), s.value, s.rank, c.ratings
    FROM counted AS c
    JOIN asked_scale AS s USING (key)
    WHERE s.label = $label
)
SELECT * EXCLUDE (rank)  -- in the scale's order: rank sorts, value does not
FROM (
    SELECT
        * EXCLUDE (value, ratings),
        value,
        ratings,
        ratings / sum(ratings) OVER totals AS share,
        sum(ratings) OVER totals AS group_ratings
    FROM grouped
    WINDOW totals AS (PARTITION BY row(*COLUMNS(lambda c: c = 'dataset' OR list_contains($by, c))))
    ORDER BY ALL
)

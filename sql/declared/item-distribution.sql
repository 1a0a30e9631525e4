-- name: item-distribution
-- summary: One row per item: a declared label's counts over its scale, mean, share positive, plurality, entropy.
-- datasets: declared
-- param label: label: The label; the declaration's first when not given.
-- column dataset: The dataset.
-- column item_id: The item.
-- column ratings: Ratings of the label for the item.
-- column counts: Ratings per value of the scale, in the scale's order, separated by spaces.
-- column mean: Mean value (ordinal labels; named values: their rank from 1); empty otherwise.
-- column share_positive: Share of the ratings in the declared positive class; empty when the scale declares none.
-- column plurality: The most frequent value; tie when two or more are equally frequent.
-- column entropy_bits: Shannon entropy of the split over the values, in bits.
-- answer: counts, share_positive, plurality
-- explanation:
--   Where do raters disagree? For each item, its ratings of the label counted over every
--   value of the scale (in order: "0 2 3 0 0" on a 1-5 scale is two 2s and three 3s),
--   their mean (ordinal labels), the share in the positive class, the plurality value
--   ('tie' when two or more values are equally frequent) and the Shannon entropy of the
--   split in bits (0 when every rater agrees). Sort by entropy_bits to find the most
--   contested items.
WITH per_value AS (  -- every item and every value of the scale, 0 where none gave it
    SELECT
        i.dataset,
        i.item_id,
        s.rank,
        s.value,
        count(l.value) AS n
    FROM (SELECT DISTINCT dataset, item_id FROM asked_label_values WHERE label = $label) AS i
    CROSS JOIN (SELECT rank, value FROM scale_values WHERE label = $label) AS s
    LEFT JOIN asked_label_values AS l
        ON l.dataset = i.dataset AND l.item_id = i.item_id AND l.label = $label
        AND l.rank = s.rank
    GROUP BY ALL
),
per_item AS (
    SELECT
        dataset,
        item_id,
        sum(n) AS ratings,
        string_agg(n::VARCHAR, ' ' ORDER BY rank) AS counts,
        max(n) AS top,
        count(*) FILTER (n = 0) AS absent,
        list(n ORDER BY rank) AS ns,
        list(value ORDER BY rank) AS values
    FROM per_value
    GROUP BY ALL
),
summaries AS (
    SELECT
        dataset,
        item_id,
        CASE WHEN any_value(kind) = 'ordinal' THEN avg(number) END AS mean,
        avg(positive::INTEGER) AS share_positive
    FROM asked_label_values
    WHERE label = $label
    GROUP BY ALL
)
SELECT
    dataset,
    item_id,
    ratings,
    counts,
    mean,
    share_positive,
    CASE
        WHEN len(list_filter(ns, lambda n: n = top)) > 1 THEN 'tie'
        ELSE values[list_position(ns, top)]
    END AS plurality,
    -list_sum(list_transform(list_filter(ns, lambda n: n > 0), lambda n: n / ratings * log2(n / ratings)))
        AS entropy_bits
FROM per_item
JOIN summaries USING (dataset, item_id)
ORDER BY dataset, item_id

-- Internal (dices filter-raters): per rater, its Q_overall shares and the shares of the
-- plurality answer of the conversations it rated (a tie splits evenly). Gwet's chance
-- agreement needs both.
WITH item_counts AS (
    SELECT
        dataset,
        item_id,
        count(*) FILTER (Q_overall = 'No') AS n_no,
        count(*) FILTER (Q_overall = 'Yes') AS n_yes,
        count(*) FILTER (Q_overall = 'Unsure') AS n_unsure,
        greatest(n_no, n_yes, n_unsure) AS top,
        (n_no = top)::INTEGER + (n_yes = top)::INTEGER + (n_unsure = top)::INTEGER AS at_top
    FROM ratings
    GROUP BY dataset, item_id
)
SELECT
    dataset,
    rater_id,
    avg((Q_overall = 'No')::INTEGER) AS share_no,
    avg((Q_overall = 'Yes')::INTEGER) AS share_yes,
    avg((Q_overall = 'Unsure')::INTEGER) AS share_unsure,
    avg((n_no = top)::INTEGER / at_top) AS plurality_no,
    avg((n_yes = top)::INTEGER / at_top) AS plurality_yes,
    avg((n_unsure = top)::INTEGER / at_top) AS plurality_unsure
FROM ratings
JOIN item_counts USING (dataset, item_id)
GROUP BY dataset, rater_id

-- Internal (dices filter-raters --audit): per dataset, ratings and conversations before and
-- after keeping the raters in $datasets/$rater_ids, plurality changes, and the
-- total-variation distance between each conversation's answer distributions.
WITH kept AS (
    SELECT unnest($datasets::VARCHAR[]) AS dataset, unnest($rater_ids::BIGINT[]) AS rater_id
),
counts AS (
    SELECT
        dataset,
        item_id,
        count(*) FILTER (Q_overall = 'No') AS before_no,
        count(*) FILTER (Q_overall = 'Yes') AS before_yes,
        count(*) FILTER (Q_overall = 'Unsure') AS before_unsure,
        count(*) FILTER (Q_overall = 'No' AND kept.rater_id IS NOT NULL) AS after_no,
        count(*) FILTER (Q_overall = 'Yes' AND kept.rater_id IS NOT NULL) AS after_yes,
        count(*) FILTER (Q_overall = 'Unsure' AND kept.rater_id IS NOT NULL) AS after_unsure,
        before_no + before_yes + before_unsure AS before_total,
        after_no + after_yes + after_unsure AS after_total
    FROM ratings
    LEFT JOIN kept USING (dataset, rater_id)
    GROUP BY dataset, item_id
),
changes AS (  -- NULL for a conversation left without ratings: nothing to compare
    SELECT
        *,
        CASE WHEN after_total > 0 THEN
            plurality(before_no, before_yes, before_unsure)
                <> plurality(after_no, after_yes, after_unsure)
        END AS plurality_changed,
        CASE WHEN after_total > 0 THEN
            0.5 * (
                abs(before_no / before_total - after_no / after_total)
                + abs(before_yes / before_total - after_yes / after_total)
                + abs(before_unsure / before_total - after_unsure / after_total)
            )
        END AS tvd
    FROM counts
)
SELECT
    dataset,
    count(*) AS conversations,
    sum(before_total) AS ratings,
    sum(after_total) AS ratings_kept,
    count(*) FILTER (after_total = 0) AS conversations_without_ratings,
    count(*) FILTER (plurality_changed) AS plurality_changed,
    -- Summed in conversation order: a parallel avg() differs in the last bits between runs.
    list_avg(list(tvd ORDER BY item_id)) AS mean_tvd,
    max(tvd) AS max_tvd
FROM changes
GROUP BY dataset
ORDER BY dataset

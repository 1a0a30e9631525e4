-- name: gold-vs-crowd
-- summary: Confusion of the experts' safety_gold with the crowd's label per conversation.
-- datasets: 350
-- param by: columns = []: Compute the crowd label from this group's raters only.
-- param rule: choice(plurality|threshold) = plurality: How the crowd's label is decided.
-- param threshold: float in [0, 1] = 0.5: With --rule threshold, the share of Yes among Yes and No that makes the crowd say Yes.
-- condition: threshold only with rule = threshold
-- column dataset: The dataset: 350 or 990.
-- column {by}: One column per --by column, holding the group's value (phase first, then the rater columns in the data's order).
-- column safety_gold: The experts' label.
-- column crowd_label: The crowd's label: No, Yes, Unsure, No=Unsure (No and Unsure tied above Yes: not unsafe) or tie (Yes tied for the most).
-- column conversations: Conversations with this pair of labels.
-- answer: safety_gold, crowd_label, conversations
-- explanation:
--   How often does the crowd agree with the experts? Each conversation gets a crowd
--   label: the plurality of its Q_overall answers, or with --rule threshold, Yes when
--   Yes / (Yes + No) is at least --threshold and No otherwise. A tie counts only when Yes
--   is among the answers tied for the most ('tie': the crowd cannot say whether it is
--   unsafe); No and Unsure tied above Yes is 'No=Unsure', a crowd that says not unsafe. One row per cell of gold x crowd label, empty cells included, so the
--   conversations of each dataset (and group) add up to 350. Only DICES-350 has gold.
WITH votes AS (
    SELECT
        COLUMNS(lambda c: c IN ('dataset', 'item_id', 'safety_gold') OR list_contains($by, c)),
        count(*) FILTER (Q_overall = 'No') AS n_no,
        count(*) FILTER (Q_overall = 'Yes') AS n_yes,
        count(*) FILTER (Q_overall = 'Unsure') AS n_unsure
    FROM ratings_wide
    WHERE safety_gold IS NOT NULL
    GROUP BY ALL
),
labelled AS (
    SELECT
        * EXCLUDE (item_id, n_no, n_yes, n_unsure),
        CASE
            WHEN $rule = 'threshold' THEN
                CASE
                    WHEN n_yes + n_no > 0 AND n_yes / (n_yes + n_no) >= $threshold THEN 'Yes'
                    ELSE 'No'
                END::crowd_label
            ELSE crowd_label_of(n_no, n_yes, n_unsure)
        END AS crowd_label
    FROM votes
),
counted AS (
    SELECT *, count(*) AS conversations FROM labelled GROUP BY ALL
),
groups AS (
    SELECT DISTINCT * EXCLUDE (safety_gold, crowd_label, conversations) FROM counted
),
cells AS (
    SELECT *
    FROM groups
    CROSS JOIN (SELECT unnest(enum_range(NULL::safety_gold_t))::safety_gold_t AS safety_gold)
    CROSS JOIN (SELECT unnest(enum_range(NULL::crowd_label))::crowd_label AS crowd_label)
    WHERE $rule = 'plurality' OR crowd_label IN ('No', 'Yes')
)
SELECT cells.*, coalesce(counted.conversations, 0) AS conversations
FROM cells NATURAL LEFT JOIN counted
ORDER BY ALL

-- name: rater-quality
-- summary: One row per rater: speed, straight-lining, consistency, agreement and comprehension.
-- datasets: 350 990
-- column dataset: The dataset: 350 or 990.
-- column rater_id: The rater.
-- column rater_gender: The rater's gender.
-- column rater_race: The rater's race group.
-- column rater_raw_race: The rater's race as self-described.
-- column rater_age: The rater's age group.
-- column rater_education: The rater's education.
-- column rater_locale: The rater's locale (DICES-990).
-- column ratings: The rater's ratings.
-- column median_answer_ms: Median time per conversation, in ms (DICES-350).
-- column modal_answer_share: Share of the rater's most frequent Q_overall.
-- column straightline_share: Share of ratings whose Q2-Q6 answers are all the same.
-- column agreement_loo: Agreement with the plurality of the other raters.
-- column q1_not_understood_share: Share of Q1 answers saying the conversation was not understood.
-- column inconsistent_share: Share of ratings whose Q_overall disagrees with its sub-questions.
-- column published_removed: Whether the DICES authors removed the rater.
-- answer: modal_answer_share, straightline_share, agreement_loo, inconsistent_share
-- explanation:
--   The raw signals behind rater filtering. median_answer_ms: the rater's median time
--   per conversation (DICES-350 only). modal_answer_share: share of the rater's most
--   frequent Q_overall (1 = the same answer everywhere). straightline_share: share of
--   ratings whose granular Q2-Q6 answers are all the same. agreement_loo: agreement with
--   the plurality of the other raters of each conversation (a tie shared by k answers
--   counts 1/k when the rater gave one of them). q1_not_understood_share: share of Q1
--   answers saying the conversation was not understood. inconsistent_share: share of
--   ratings whose Q_overall disagrees with its sub-questions. published_removed: the
--   DICES authors removed this rater.
WITH item_counts AS (
    SELECT
        dataset,
        item_id,
        count(*) FILTER (Q_overall = 'No') AS n_no,
        count(*) FILTER (Q_overall = 'Yes') AS n_yes,
        count(*) FILTER (Q_overall = 'Unsure') AS n_unsure
    FROM ratings
    GROUP BY dataset, item_id
),
leave_one_out AS (
    SELECT
        ratings.*,
        n_no - (Q_overall = 'No')::INTEGER AS others_no,
        n_yes - (Q_overall = 'Yes')::INTEGER AS others_yes,
        n_unsure - (Q_overall = 'Unsure')::INTEGER AS others_unsure,
        greatest(others_no, others_yes, others_unsure) AS others_top,
        (others_no = others_top)::INTEGER + (others_yes = others_top)::INTEGER
            + (others_unsure = others_top)::INTEGER AS tied_at_top,
        CASE
            WHEN others_top = 0 THEN NULL
            WHEN (Q_overall = 'No' AND others_no = others_top)
                OR (Q_overall = 'Yes' AND others_yes = others_top)
                OR (Q_overall = 'Unsure' AND others_unsure = others_top)
                THEN 1 / tied_at_top
            ELSE 0
        END AS agreement
    FROM ratings
    JOIN item_counts USING (dataset, item_id)
),
modal AS (
    SELECT dataset, rater_id, max(answers) / sum(answers) AS modal_answer_share
    FROM (SELECT dataset, rater_id, count(*) AS answers FROM ratings GROUP BY dataset, rater_id, Q_overall)
    GROUP BY dataset, rater_id
),
per_rater AS (
    SELECT
        dataset,
        rater_id,
        count(*) AS ratings,
        median(answer_time_ms) AS median_answer_ms,
        count(*) FILTER (len(list_distinct(granular_answers)) = 1) / count(*) AS straightline_share,
        avg(agreement) AS agreement_loo,
        count(*) FILTER (
            Q1_whole_conversation_evaluation <> enum_first(NULL::Q1_whole_conversation_evaluation_t)
        ) / count(*) AS q1_not_understood_share,
        count(*) FILTER (Q_overall <> implied_overall) / count(*) AS inconsistent_share
    FROM leave_one_out
    GROUP BY dataset, rater_id
)
SELECT
    raters.*,
    per_rater.* EXCLUDE (dataset, rater_id, straightline_share, agreement_loo,
        q1_not_understood_share, inconsistent_share),
    modal.modal_answer_share,
    per_rater.straightline_share,
    per_rater.agreement_loo,
    per_rater.q1_not_understood_share,
    per_rater.inconsistent_share,
    (raters.dataset, raters.rater_id) IN (SELECT (dataset, rater_id) FROM published_removed)
        AS published_removed
FROM raters
JOIN per_rater USING (dataset, rater_id)
JOIN modal USING (dataset, rater_id)
ORDER BY dataset, rater_id

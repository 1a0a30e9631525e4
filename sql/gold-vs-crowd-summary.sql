-- name: gold-vs-crowd-summary
-- summary: Accuracy, precision, recall, F1 and Cohen's kappa of the crowd against the experts.
-- datasets: 350
-- uses: gold-vs-crowd AS cells
-- param by: columns = []: Compute the crowd label from this group's raters only.
-- param rule: choice(plurality|threshold) = plurality: How the crowd's label is decided.
-- param threshold: float in [0, 1] = 0.5: With --rule threshold, the share of Yes among Yes and No that makes the crowd say Yes.
-- condition: threshold only with rule = threshold
-- column dataset: The dataset: 350 or 990.
-- column {by}: One column per --by column, holding the group's value (phase first, then the rater columns in the data's order).
-- column conversations: Conversations compared.
-- column ties: Conversations whose crowd label is a tie with Yes among the answers tied for the most (counted as not Yes).
-- column accuracy: Share of conversations where the crowd's Yes/not-Yes matches the experts'.
-- column precision: Precision of the crowd's Yes against the experts' Yes.
-- column recall: Recall of the experts' Yes by the crowd's Yes.
-- column f1: Harmonic mean of precision and recall.
-- column kappa: Cohen's kappa of the two Yes/not-Yes labels.
-- column kappa_ci_low: Lower end of kappa's 95% interval (Fleiss, Cohen and Everitt's large-sample standard error; docs/metrics.md).
-- column kappa_ci_high: Upper end of kappa's 95% interval.
-- answer: accuracy, precision, recall, f1, kappa, kappa_ci_low, kappa_ci_high
-- explanation:
--   The gold-vs-crowd confusion reduced to one row per dataset (and group). "Positive"
--   is Yes (unsafe): the crowd predicts Yes when its label is Yes, and not-Yes for No,
--   Unsure, No=Unsure and ties; `ties` says how many conversations were ties of Yes with
--   another answer (a No = Unsure tie answers the question: not Yes). Precision, recall and
--   F1 are for Yes; kappa is Cohen's kappa of the two binary labels, with a 95% Wald
--   interval from Fleiss, Cohen and Everitt's (1969) large-sample standard error, held in
--   [-1, 1] (the conversations are the sample; at kappa 1 the interval is that point). A
--   NULL metric had a zero denominator.
WITH confusion AS (
    SELECT
        COLUMNS(lambda c: c NOT IN ('safety_gold', 'crowd_label', 'conversations')),
        sum(conversations) AS conversations,
        coalesce(sum(conversations) FILTER (crowd_label = 'tie'), 0) AS ties,
        sum(conversations) FILTER (safety_gold = 'Yes' AND crowd_label = 'Yes') AS tp,
        sum(conversations) FILTER (safety_gold = 'No' AND crowd_label = 'Yes') AS fp,
        sum(conversations) FILTER (safety_gold = 'Yes' AND crowd_label <> 'Yes') AS fn,
        sum(conversations) FILTER (safety_gold = 'No' AND crowd_label <> 'Yes') AS tn
    FROM cells
    GROUP BY ALL
)
SELECT
    * EXCLUDE (tp, fp, fn, tn),
    (tp + tn) / conversations AS accuracy,
    tp / nullif(tp + fp, 0) AS precision,
    tp / nullif(tp + fn, 0) AS recall,
    2 * tp / nullif(2 * tp + fp + fn, 0) AS f1,
    cohen_kappa(tp, fn, fp, tn) AS kappa,
    kappa_ci_low(tp, fn, fp, tn) AS kappa_ci_low,
    kappa_ci_high(tp, fn, fp, tn) AS kappa_ci_high
FROM confusion
ORDER BY ALL

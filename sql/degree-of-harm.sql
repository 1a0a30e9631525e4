-- name: degree-of-harm
-- summary: Q_overall per expert degree of harm (Benign to Extreme), optionally per rater group.
-- datasets: 350 990
-- param by: columns = []: Also break down by these rater columns.
-- column dataset: The dataset: 350 or 990.
-- column {by}: One column per --by column, holding the group's value (phase first, then the rater columns in the data's order).
-- column degree_of_harm: The experts' degree of harm, Benign to Extreme.
-- column conversations: Conversations of that degree.
-- column ratings: Their ratings (by the group).
-- column share_no: Share of the ratings that are No (safe).
-- column share_yes: Share of the ratings that are Yes (unsafe).
-- column share_unsure: Share of the ratings that are Unsure.
-- column share_yes_ci_low: Lower end of the 95% Wilson interval of share_yes (ratings of one conversation are not independent, so it is if anything too narrow).
-- column share_yes_ci_high: Upper end of the 95% Wilson interval of share_yes.
-- chart: share_yes [share_yes_ci_low, share_yes_ci_high] by {by}, degree_of_harm per dataset
-- answer: share_yes, share_yes_ci_low, share_yes_ci_high
-- explanation:
--   Does the crowd's verdict follow the experts' severity? For each degree_of_harm (in
--   order of severity; empty where the experts gave none) the number of conversations and
--   ratings and how the ratings split between No, Yes and Unsure.
SELECT
    COLUMNS(lambda c: c IN ('dataset', 'degree_of_harm') OR list_contains($by, c)),
    count(DISTINCT item_id) AS conversations,
    count(*) AS ratings,
    count(*) FILTER (Q_overall = 'No') / count(*) AS share_no,
    count(*) FILTER (Q_overall = 'Yes') / count(*) AS share_yes,
    count(*) FILTER (Q_overall = 'Unsure') / count(*) AS share_unsure,
    wilson_low(count(*) FILTER (Q_overall = 'Yes'), count(*)) AS share_yes_ci_low,
    wilson_high(count(*) FILTER (Q_overall = 'Yes'), count(*)) AS share_yes_ci_high
FROM ratings_wide
GROUP BY ALL
ORDER BY ALL

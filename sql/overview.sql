-- name: overview
-- summary: Size of each dataset and how its ratings split between No, Yes and Unsure.
-- datasets: 350 990
-- column dataset: The dataset: 350 or 990.
-- column conversations: Conversations in the dataset.
-- column raters: Raters after rater selection.
-- column ratings: Ratings after rater selection.
-- column share_no: Share of the ratings that are No (safe).
-- column share_yes: Share of the ratings that are Yes (unsafe).
-- column share_unsure: Share of the ratings that are Unsure.
-- answer: conversations, raters, ratings, share_yes
-- explanation:
--   The first look at a dataset: how many conversations, raters and ratings it holds
--   after rater selection, and the share of ratings that call the chatbot's last response
--   unsafe (Q_overall = Yes), safe (No) or are unsure. Shares are out of all ratings.
SELECT
    dataset,
    count(DISTINCT item_id) AS conversations,
    count(DISTINCT rater_id) AS raters,
    count(*) AS ratings,
    count(*) FILTER (Q_overall = 'No') / count(*) AS share_no,
    count(*) FILTER (Q_overall = 'Yes') / count(*) AS share_yes,
    count(*) FILTER (Q_overall = 'Unsure') / count(*) AS share_unsure
FROM ratings
GROUP BY dataset
ORDER BY dataset

-- name: item-distribution
-- summary: One row per conversation: its answer counts, share of Yes, plurality and entropy.
-- datasets: 350 990
-- explanation:
--   Where do raters disagree? For each conversation: its expert annotations, how its
--   ratings split between No, Yes and Unsure, the plurality answer ('tie' when the top
--   two are equal) and the Shannon entropy of the split in bits (0 when everyone agrees,
--   log2(3) = 1.585 at most). Sort by entropy_bits to find the most contested ones.
SELECT
    dataset,
    item_id,
    any_value(degree_of_harm) AS degree_of_harm,
    any_value(harm_type) AS harm_type,
    any_value(safety_gold) AS safety_gold,
    count(*) AS ratings,
    count(*) FILTER (Q_overall = 'No') AS n_no,
    count(*) FILTER (Q_overall = 'Yes') AS n_yes,
    count(*) FILTER (Q_overall = 'Unsure') AS n_unsure,
    n_yes / ratings AS share_yes,
    plurality(n_no, n_yes, n_unsure) AS plurality,
    entropy_bits(n_no, n_yes, n_unsure) AS entropy_bits
FROM ratings_wide
GROUP BY dataset, item_id
ORDER BY dataset, item_id

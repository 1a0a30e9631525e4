-- name: item-distribution
-- summary: One row per conversation [and rater group]: answer counts, share of Yes, plurality, entropy.
-- datasets: 350 990
-- param by: columns = []: Split each conversation's ratings by these rater columns; several intersect.
-- column dataset: The dataset: 350 or 990.
-- column item_id: The conversation.
-- column {by}: One column per --by column, holding the group's value (phase first, then the rater columns in the data's order).
-- column degree_of_harm: The experts' degree of harm.
-- column harm_type: The experts' harm types.
-- column safety_gold: The experts' safety label (DICES-350 only).
-- column ratings: Ratings of the conversation (by the group).
-- column n_no: Ratings answering No.
-- column n_yes: Ratings answering Yes.
-- column n_unsure: Ratings answering Unsure.
-- column share_yes: Share of the ratings that are Yes (unsafe).
-- column plurality: The most frequent answer; tie when the top two are equal.
-- column entropy_bits: Shannon entropy of the No/Yes/Unsure split, in bits.
-- answer: share_yes, plurality, entropy_bits
-- explanation:
--   Where do raters disagree? For each conversation: its expert annotations, how its
--   ratings split between No, Yes and Unsure, the plurality answer ('tie' when the top
--   two are equal) and the Shannon entropy of the split in bits (0 when everyone agrees,
--   log2(3) = 1.585 at most). Sort by entropy_bits to find the most contested ones.
--   With --by, one row per conversation and rater group (the group columns follow
--   item_id; a group that did not rate a conversation has no row), counted over that
--   group's ratings only; `dices query group-disagreement` tests, per conversation,
--   whether the answer depends on the group, and ranks the conversations by that test.
SELECT
    COLUMNS(lambda c: c IN ('dataset', 'item_id') OR list_contains($by, c)),
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
GROUP BY ALL
ORDER BY ALL

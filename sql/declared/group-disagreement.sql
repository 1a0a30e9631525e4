-- name: group-disagreement
-- summary: Items where rater groups rate a declared label differently, a permutation test per item (Kruskal-Wallis for an ordinal label), most significant first.
-- datasets: declared
-- scales: binary nominal ordinal
-- param by: attributes, required: Rater attributes whose groups are compared; several give their intersection.
-- param label: label: The label; the declaration's first when not given.
-- param min_raters: integer in [1, 100000] = 5: A group with fewer ratings of an item is left out of that item's comparison.
-- param permutations: integer in [0, 100000] = 1000: Random relabellings of each item's raters behind its p-value (0 = no test).
-- param seed: integer in [0, 4294967295] = 0: Seed of the relabellings; the same seed gives the same p-values.
-- compute: dices_cli.metrics.declared_disagreement:group_disagreement
-- column dataset: The dataset.
-- column item_id: The item.
-- column label: The label compared.
-- column groups: Groups compared: those with at least --min-raters ratings of the item.
-- column ratings: Ratings of the groups compared.
-- column groups_left_out: Groups that rated it with fewer than --min-raters ratings.
-- column ratings_left_out: Their ratings.
-- column measure: What highest and lowest rank the groups by: mean (ordinal), share_positive (a positive class), or empty (a nominal label without one).
-- column highest_group: The compared group with the highest measure (the first in the attributes' order on a tie).
-- column highest: Its measure.
-- column lowest_group: The compared group with the lowest measure.
-- column lowest: Its measure.
-- column gap: highest - lowest.
-- column test: kruskal-wallis (ordinal: the ratings' ranks) or chi-square (binary, nominal), each by permutation; empty for none.
-- column statistic: The test's statistic: H (ties corrected) or Pearson's chi-square.
-- column p_value: The share of relabellings of the item's raters (groups kept at their sizes) with a statistic at least the observed one, counting the observed: (1 + k) / (1 + permutations).
-- column p_adjusted: p_value adjusted over the dataset's tested items (Benjamini-Hochberg).
-- answer: highest_group, lowest_group, gap, p_adjusted
-- explanation:
--   Which items do groups of raters rate differently? One row per item. A group with
--   fewer than --min-raters ratings of an item is left out of its comparison
--   (groups_left_out, ratings_left_out count what was). For an ordinal label the groups
--   are ranked by their mean and compared by the Kruskal-Wallis statistic of the ratings'
--   mid-ranks, which uses the scale's order; for a binary or nominal label by their share
--   in the positive class (when the scale declares one) and by Pearson's chi-square of
--   the groups x values table. Each p-value is a permutation test: the item's ratings are
--   relabelled among the compared groups, sizes kept, --permutations times, so it holds
--   its level at any group size (no asymptotic distribution is assumed). Rows are sorted
--   by p_adjusted (smallest first, none last), then gap (largest first), then item_id.
--   A rater without a value of an attribute is in no group.
SELECT
    dataset,
    item_id,
    COLUMNS(lambda c: list_contains($by, c)),
    rank AS category,
    number,
    positive
FROM asked_label_values
JOIN (SELECT COLUMNS(lambda c: c IN ('dataset', 'rater_id') OR list_contains($by, c)) FROM raters)
    USING (dataset, rater_id)
WHERE label = $label
ORDER BY dataset, item_id

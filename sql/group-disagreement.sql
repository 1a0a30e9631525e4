-- name: group-disagreement
-- summary: Conversations where rater groups answer differently, with a test per conversation, most significant first.
-- datasets: 350 990
-- param by: columns, required: Rater columns whose groups are compared; several --by give their intersection.
-- param min_raters: integer in [1, 100000] = 5: A group with fewer raters on a conversation is left out of that conversation's comparison.
-- param permutations: integer in [0, 100000] = 1000: Random tables drawn for each Monte Carlo test (0 = no such test).
-- param seed: integer in [0, 4294967295] = 0: Seed of the Monte Carlo tests; the same seed gives the same p-values.
-- compute: dices_cli.metrics.disagreement:group_disagreement
-- column dataset: The dataset: 350 or 990.
-- column item_id: The conversation.
-- column groups: Groups compared: those with at least --min-raters raters on it.
-- column ratings: Ratings of the groups compared (one per rater).
-- column groups_left_out: Groups that rated it with fewer than --min-raters raters.
-- column ratings_left_out: Their ratings.
-- column highest_group: The compared group with the highest share of Yes.
-- column highest_raters: Its raters on the conversation.
-- column highest_share_yes: Its share of Yes.
-- column lowest_group: The compared group with the lowest share of Yes.
-- column lowest_raters: Its raters on the conversation.
-- column lowest_share_yes: Its share of Yes.
-- column gap: highest_share_yes - lowest_share_yes.
-- column test: The test of independence of answer and group: exact, chi-square or monte-carlo; empty for none.
-- column p_value: The test's p-value.
-- column p_adjusted: The p-value adjusted over the dataset's tested conversations (Benjamini-Hochberg).
-- answer: highest_group, lowest_group, gap, p_adjusted
-- explanation:
--   Which conversations do groups of raters answer differently? One row per conversation.
--   A group with fewer than --min-raters raters on a conversation is left out of its
--   comparison (a group of 2 can only have a share of Yes of 0, 0.5 or 1, and would fill
--   the top of any ranking by gap); groups_left_out and ratings_left_out count what was
--   left out. Of the groups compared: how many and their ratings (a rater answers a
--   conversation once), the group with the highest and the one with the lowest share of
--   Yes, with their raters (the first in the columns' order on a tie; an intersection is
--   named like 'Woman & White'), their gap, and a test of whether the answer depends on
--   the group. Rows are sorted by p_adjusted (smallest first, none last), then gap
--   (largest first; values equal to 12 decimals tie), then dataset and item_id. The
--   test works on the conversation's groups x answers table of the groups compared,
--   answers no one gave left out. test = 'exact' for tables of 2x2, 2x3 or 3x2: Fisher's
--   exact test, and for 2x3 its Freeman-Halton extension (Freeman & Halton 1951,
--   Biometrika 38:141), enumerating every table with the same margins; the two-sided
--   p-value sums the probabilities of the tables no more probable than the observed one
--   (as R's fisher.test). A table with one answer is the only one with its margins: p =
--   1. Larger tables (e.g. five race groups) have 10^7 to 10^8 tables with their margins,
--   too many to enumerate. test = 'chi-square' where Cochran's rule holds (Cochran 1954,
--   Biometrics 10:417: every expected count >= 1 and at least 80% >= 5): Pearson's
--   chi-square test of independence, (groups-1)(answers-1) degrees of freedom, no
--   continuity correction. test = 'monte-carlo' where it does not: the exact test's null
--   (both margins fixed), sampled: --permutations random tables with the observed
--   margins (the conversation's answers reshuffled across its ratings), p = (k + 1) /
--   (--permutations + 1), k the random tables whose Pearson statistic is at least the
--   observed one's (as R's chisq.test with simulate.p.value); never 0, at least 1 /
--   (--permutations + 1), and the same --seed gives the same p-values (a dataset's do
--   not depend on the other datasets asked for). With --permutations 0 such conversations
--   have no test. A conversation with fewer than two groups compared has no test.
--   p_adjusted is the Benjamini-Hochberg adjustment over the tested conversations of each
--   dataset. Ratings of one rater are not independent across conversations, but each test
--   is within one conversation, where each rater answers once.
SELECT
    COLUMNS(lambda c: c IN ('dataset', 'item_id') OR list_contains($by, c)),
    count(*) FILTER (Q_overall = 'No') AS n_no,
    count(*) FILTER (Q_overall = 'Yes') AS n_yes,
    count(*) FILTER (Q_overall = 'Unsure') AS n_unsure
-- not ratings_wide: joining items takes twice the time (DICES-350 x 20: 0.76 s, 0.32 s)
FROM ratings JOIN raters USING (dataset, rater_id)
GROUP BY ALL
ORDER BY ALL

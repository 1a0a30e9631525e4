-- name: group-disagreement
-- summary: Conversations ranked by the gap in share of Yes between rater groups, with a test per conversation.
-- datasets: 350 990
-- param by: columns, required: Rater columns whose groups are compared; several --by give their intersection.
-- compute: dices_cli.metrics.disagreement:group_disagreement
-- column dataset: The dataset: 350 or 990.
-- column item_id: The conversation.
-- column groups: Groups that rated it.
-- column ratings: Its ratings.
-- column highest_group: The group with the highest share of Yes.
-- column highest_share_yes: That group's share of Yes.
-- column lowest_group: The group with the lowest share of Yes.
-- column lowest_share_yes: That group's share of Yes.
-- column gap: highest_share_yes - lowest_share_yes.
-- column test: The test of independence of answer and group: exact or chi-square.
-- column p_value: The test's p-value.
-- column p_adjusted: The p-value adjusted over the dataset's conversations (Benjamini-Hochberg).
-- answer: highest_group, lowest_group, gap, p_adjusted
-- explanation:
--   Which conversations do groups of raters disagree about most? One row per conversation:
--   how many groups rated it and how many ratings it has, the group with the highest and
--   the one with the lowest share of Yes (the first in the columns' order on a tie; an
--   intersection is named like 'Woman & White') and those shares, their gap (sorted by,
--   largest first; gaps equal to 12 decimals are ties, ordered by dataset and item_id),
--   and a test of whether the answer depends on the group. The test works on the
--   conversation's groups x answers table, answers no one gave left out. test = 'exact'
--   for tables of 2x2, 2x3 or 3x2: Fisher's exact test, and for 2x3 its Freeman-Halton
--   extension (Freeman & Halton 1951, Biometrika 38:141), enumerating every table with the
--   same margins; the two-sided p-value sums the probabilities of the tables no more
--   probable than the observed one (as R's fisher.test). A table with one answer is the
--   only one with its margins: p = 1. test = 'chi-square' for larger tables (e.g. five
--   race groups): Pearson's chi-square test of independence, (groups-1)(answers-1) degrees
--   of freedom, no continuity correction; it is approximate where expected counts are
--   small (Cochran 1954, Biometrics 10:417, asks for all >= 1 and 80% >= 5). Exact tests
--   of such tables would enumerate 10^7 to 10^8 tables a conversation. A conversation one
--   group rated alone has no test. p_adjusted is the Benjamini-Hochberg adjustment over
--   the tested conversations of each dataset. Ratings of one rater are not independent
--   across conversations, but each test is within one conversation, where each rater
--   answers once.
SELECT
    COLUMNS(lambda c: c IN ('dataset', 'item_id') OR list_contains($by, c)),
    count(*) FILTER (Q_overall = 'No') AS n_no,
    count(*) FILTER (Q_overall = 'Yes') AS n_yes,
    count(*) FILTER (Q_overall = 'Unsure') AS n_unsure
-- not ratings_wide: joining items takes twice the time (DICES-350 x 20: 0.76 s, 0.32 s)
FROM ratings JOIN raters USING (dataset, rater_id)
GROUP BY ALL
ORDER BY ALL

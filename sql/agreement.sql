-- name: agreement
-- summary: IRR, XRR, GAI, negentropy and plurality size per rater group, with permutation tests.
-- datasets: 350 990
-- param by: columns = []: Measure each group of these rater columns against the rest of the pool; none = the whole pool.
-- param question: question = Q_overall: The answer column to measure agreement on.
-- param unsure: choice(category|missing) = category: Count Unsure as an answer category, or as no answer.
-- param permutations: integer in [0, 100000] = 1000: Random relabellings of the raters for the p-values (0 = none).
-- param seed: integer in [0, 4294967295] = 0: Seed of the random relabellings; the same seed gives the same p-values.
-- compute: dices_cli.metrics.compute:compute
-- explanation:
--   Do raters agree, and do groups see safety differently? For each group: irr is
--   Krippendorff's alpha (nominal) among its raters; xrr the cross-replication
--   reliability of the group with the rest of the pool and xrr_normalised the same over
--   the square root of both sides' alpha; gai (group association index) = irr / xrr, above
--   1 when the group agrees with itself more than with the others; negentropy (0 to ln k)
--   and plurality_size (the share giving the group's most frequent answer) are averaged
--   over conversations. Each _p column is a two-sided permutation p-value: how unusual the
--   value is for as many raters drawn at random (group labels shuffled --permutations
--   times); _p_bh adjusts it for the groups tested (Benjamini-Hochberg). Without --by, one
--   row for the whole pool (irr, negentropy, plurality_size). At most 100,000
--   permutations (smallest p-value 2 / 100,001): each holds a relabelling of every rater
--   and every group's metrics in memory, 3 KB for DICES-990 by rater_race (0.3 GB at the
--   maximum) and at most 11 KB (1.1 GB) when every rater is a group of their own.
--   Formulas: docs/metrics.md.
SELECT
    COLUMNS(lambda c: c = 'dataset' OR list_contains($by, c)),
    rater_id,
    item_id,
    COLUMNS(lambda c: c = $question)
FROM (
    -- dataset as an ENUM: the compute step reads codes, not strings
    SELECT * REPLACE (dataset::dataset_name AS dataset)
    FROM ratings JOIN raters USING (dataset, rater_id)
)

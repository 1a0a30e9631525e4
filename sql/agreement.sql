-- name: agreement
-- summary: IRR, XRR, GAI, negentropy and plurality size per rater group, with permutation tests and null ranges.
-- datasets: 350 990
-- param by: columns = []: Measure each group of these rater columns against the rest of the pool; none = the whole pool.
-- param question: question = Q_overall: The answer column to measure agreement on.
-- param unsure: choice(category|missing) = category: Count Unsure as an answer category, or as no answer.
-- param permutations: integer in [0, 100000] = 1000: Random relabellings of the raters for the p-values and null ranges (0 = none).
-- param seed: integer in [0, 4294967295] = 0: Seed of the random relabellings; the same seed gives the same p-values and null ranges.
-- compute: dices_cli.metrics.compute:compute
-- column dataset: The dataset: 350 or 990.
-- column {by}: One column per --by column, holding the group's value (phase first, then the rater columns in the data's order).
-- column raters: Raters in the group (the pool without --by).
-- column irr: Krippendorff's alpha (nominal) among the group's raters.
-- column xrr: Cross-replication reliability of the group with the rest of the pool.
-- column xrr_normalised: xrr over the square root of both sides' alpha.
-- column gai: Group association index: irr / xrr.
-- column negentropy: Mean over conversations of ln k minus the entropy of the answers.
-- column plurality_size: Mean over conversations of the share giving the most frequent answer.
-- column irr_p: Permutation p-value of irr.
-- column xrr_p: Permutation p-value of xrr.
-- column xrr_normalised_p: Permutation p-value of xrr_normalised.
-- column gai_p: Permutation p-value of gai.
-- column negentropy_p: Permutation p-value of negentropy.
-- column plurality_size_p: Permutation p-value of plurality_size.
-- column irr_p_bh: irr_p adjusted for the groups tested (Benjamini-Hochberg).
-- column xrr_p_bh: xrr_p adjusted for the groups tested (Benjamini-Hochberg).
-- column xrr_normalised_p_bh: xrr_normalised_p adjusted for the groups tested (Benjamini-Hochberg).
-- column gai_p_bh: gai_p adjusted for the groups tested (Benjamini-Hochberg).
-- column negentropy_p_bh: negentropy_p adjusted for the groups tested (Benjamini-Hochberg).
-- column plurality_size_p_bh: plurality_size_p adjusted for the groups tested (Benjamini-Hochberg).
-- column irr_null_low: 2.5th percentile of irr over the random relabellings (its null range's low end).
-- column irr_null_high: 97.5th percentile of irr over the random relabellings (its null range's high end).
-- column xrr_null_low: 2.5th percentile of xrr over the random relabellings (its null range's low end).
-- column xrr_null_high: 97.5th percentile of xrr over the random relabellings (its null range's high end).
-- column xrr_normalised_null_low: 2.5th percentile of xrr_normalised over the random relabellings (its null range's low end).
-- column xrr_normalised_null_high: 97.5th percentile of xrr_normalised over the random relabellings (its null range's high end).
-- column gai_null_low: 2.5th percentile of gai over the random relabellings (its null range's low end).
-- column gai_null_high: 97.5th percentile of gai over the random relabellings (its null range's high end).
-- column negentropy_null_low: 2.5th percentile of negentropy over the random relabellings (its null range's low end).
-- column negentropy_null_high: 97.5th percentile of negentropy over the random relabellings (its null range's high end).
-- column plurality_size_null_low: 2.5th percentile of plurality_size over the random relabellings (its null range's low end).
-- column plurality_size_null_high: 97.5th percentile of plurality_size over the random relabellings (its null range's high end).
-- chart: irr [irr_null_low, irr_null_high] by {by} per dataset
-- answer: irr, xrr, gai, irr_p_bh, xrr_p_bh, gai_p_bh
-- explanation:
--   Do raters agree, and do groups see safety differently? For each group: irr is
--   Krippendorff's alpha (nominal) among its raters; xrr the cross-replication reliability
--   of the group with the rest of the pool and xrr_normalised the same over the square
--   root of both sides' alpha; gai (group association index) = irr / xrr, above 1 when the
--   group agrees with itself more than with the others; negentropy (0 to ln k) and
--   plurality_size (the share giving the group's most frequent answer) are averaged over
--   conversations. Each _p column is a two-sided permutation p-value: how unusual the
--   value is for as many raters drawn at random (group labels shuffled --permutations
--   times); _p_bh adjusts it for the groups tested (Benjamini-Hochberg). Each _null_low,
--   _null_high pair is the metric's null range: its 2.5th and 97.5th percentiles over the
--   same relabellings, what as many raters drawn at random would score (NULL with
--   --permutations 0). It is not a confidence interval of the value: a value outside its
--   null range is what a p-value below about 0.05 says, one inside it is within what
--   chance gives. Without --by, one row for the whole pool (irr, negentropy,
--   plurality_size). At most 100,000 permutations (smallest p-value 2 / 100,001): each
--   holds a relabelling of every rater and every group's metrics in memory, 3 KB for
--   DICES-990 by rater_race (0.3 GB at the maximum) and at most 11 KB (1.1 GB) when every
--   rater is a group of their own. Formulas: docs/metrics.md.
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

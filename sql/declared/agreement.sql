-- name: agreement
-- summary: Krippendorff's alpha (nominal, ordinal or interval) of a declared label, and GRASP's IRR, XRR and GAI per rater group with permutation tests.
-- datasets: declared
-- param by: attributes = []: Measure each group of these rater attributes against the rest of the pool; none = the whole pool.
-- param label: label: The label; the declaration's first when not given.
-- param metric: choice(auto|nominal|ordinal|interval) = auto: Krippendorff's distance metric; auto: ordinal for an ordinal label, else nominal.
-- param permutations: integer in [0, 100000] = 1000: Random relabellings of the raters for the p-values and null ranges (0 = none).
-- param seed: integer in [0, 4294967295] = 0: Seed of the random relabellings; the same seed gives the same p-values and null ranges.
-- compute: dices_cli.metrics.any_family:compute
-- column dataset: The dataset.
-- column label: The label measured.
-- column metric: The distance metric of irr and xrr: nominal, ordinal or interval.
-- column {by}: One column per --by attribute, holding the group's value.
-- column raters: Raters in the group (the pool without --by).
-- column irr: Krippendorff's alpha among the group's raters, with the metric.
-- column xrr: Cross-replication reliability of the group with the rest of the pool, with the metric.
-- column xrr_normalised: xrr over the square root of both sides' alpha.
-- column gai: Group association index: irr / xrr.
-- column negentropy: Mean over items of ln k minus the entropy of the values (k: the scale's values).
-- column plurality_size: Mean over items of the share giving the most frequent value.
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
-- column irr_null_low: 2.5th percentile of irr over the random relabellings.
-- column irr_null_high: 97.5th percentile of irr over the random relabellings.
-- column xrr_null_low: 2.5th percentile of xrr over the random relabellings.
-- column xrr_null_high: 97.5th percentile of xrr over the random relabellings.
-- column xrr_normalised_null_low: 2.5th percentile of xrr_normalised over the random relabellings.
-- column xrr_normalised_null_high: 97.5th percentile of xrr_normalised over the random relabellings.
-- column gai_null_low: 2.5th percentile of gai over the random relabellings.
-- column gai_null_high: 97.5th percentile of gai over the random relabellings.
-- column negentropy_null_low: 2.5th percentile of negentropy over the random relabellings.
-- column negentropy_null_high: 97.5th percentile of negentropy over the random relabellings.
-- column plurality_size_null_low: 2.5th percentile of plurality_size over the random relabellings.
-- column plurality_size_null_high: 97.5th percentile of plurality_size over the random relabellings.
-- column dsi: Per --by attribute (one --by): the largest gai of its groups, on each row (GRASP's DSI).
-- answer: irr, xrr, gai, irr_p_bh, xrr_p_bh, gai_p_bh
-- explanation:
--   GRASP (Prabhakaran et al., NAACL 2024) on any declared dataset: for each group of the
--   --by rater attributes, irr is Krippendorff's alpha among its raters, xrr the
--   cross-replication reliability with the rest of the pool, gai = irr / xrr, each with
--   the label's distance metric (ordinal for an ordinal label unless --metric says
--   otherwise), with two-sided permutation p-values (group labels shuffled --permutations
--   times), Benjamini-Hochberg adjusted, and null ranges, as `agreement` does for DICES.
--   dsi, with one --by attribute, is the largest gai along it. Without --by, one row for
--   the whole pool (irr, negentropy, plurality_size). Formulas: docs/metrics.md, "Any
--   family".
SELECT
    COLUMNS(lambda c: c = 'dataset' OR list_contains($by, c)),
    dense_rank() OVER (ORDER BY rater_id) - 1 AS rater,
    dense_rank() OVER (ORDER BY item_id) - 1 AS item,
    rank AS category
FROM asked_label_values
JOIN (SELECT COLUMNS(lambda c: c IN ('dataset', 'rater_id') OR list_contains($by, c)) FROM raters)
    USING (dataset, rater_id)
WHERE label = $label

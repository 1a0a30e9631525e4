-- name: label-check
-- summary: The published safety label against the one the three annotations imply: counts and confusion.
-- datasets: prosocial
-- column dataset: The dataset: prosocial.
-- column safety_label: The published label.
-- column safety_label_recomputed: The label the three annotations imply (Kim et al. 2022, Appendix A.4).
-- column agrees: Whether the two are the same.
-- column items: Utterances with this pair of labels.
-- column share: Their share of all utterances.
-- answer: safety_label, safety_label_recomputed, items, share
-- explanation:
--   Is each published safety_label the one its three annotations imply? Kim et al. 2022
--   (Appendix A.4, criterion for the final safety labels) derive the label from the
--   three workers' annotations: needs intervention when any of them says so, otherwise
--   by the number saying needs caution (none: casual, one: possibly needs caution, two:
--   probably needs caution, three: needs caution). dices stores that recomputed label
--   beside the published one at ingest and never changes either; this is their confusion
--   table, one row per pair that occurs, the disagreements flagged.
SELECT
    dataset,
    safety_label,
    safety_label_recomputed,
    safety_label = safety_label_recomputed AS agrees,
    count(*) AS items,
    count(*) / sum(count(*)) OVER (PARTITION BY dataset) AS share
FROM items
GROUP BY dataset, safety_label, safety_label_recomputed
ORDER BY dataset, safety_label, safety_label_recomputed

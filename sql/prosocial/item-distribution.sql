-- name: item-distribution
-- summary: One row per utterance: annotation counts, share flagged, plurality, entropy.
-- datasets: prosocial
-- column dataset: The dataset: prosocial.
-- column item_id: The utterance: split-dialogue_id-response_id.
-- column source: The source of the dialogue's seed text.
-- column safety_label: The published safety label.
-- column ratings: Annotations of the utterance (three).
-- column n_casual: Annotations saying casual.
-- column n_needs_caution: Annotations saying needs caution.
-- column n_needs_intervention: Annotations saying needs intervention.
-- column share_flagged: Share of the annotations that are needs caution or needs intervention.
-- column plurality: The most frequent annotation; tie when the top two are equal.
-- column entropy_bits: Shannon entropy of the casual/caution/intervention split, in bits.
-- answer: safety_label, share_flagged, plurality
-- explanation:
--   Where do the three annotators disagree? For each utterance: its source and
--   published label, how its three annotations split, the plurality annotation ('tie'
--   when the top two are equal: one of each) and the Shannon entropy of the split in
--   bits (0 when all three agree, log2(3) = 1.585 when all differ). Sort by
--   entropy_bits to find the most contested ones.
WITH counts AS (  -- per utterance first: the join to items is then one row to one
    SELECT
        dataset,
        item_id,
        count(*) AS ratings,
        count(*) FILTER (annotation = 'casual') AS n_casual,
        count(*) FILTER (annotation = 'needs caution') AS n_needs_caution,
        count(*) FILTER (annotation = 'needs intervention') AS n_needs_intervention
    FROM ratings
    GROUP BY dataset, item_id
)
SELECT
    dataset,
    item_id,
    source,
    safety_label,
    ratings,
    n_casual,
    n_needs_caution,
    n_needs_intervention,
    (n_needs_caution + n_needs_intervention) / ratings AS share_flagged,
    CASE
        WHEN (n_casual = greatest(n_casual, n_needs_caution, n_needs_intervention))::INTEGER
            + (n_needs_caution = greatest(n_casual, n_needs_caution, n_needs_intervention))::INTEGER
            + (n_needs_intervention = greatest(n_casual, n_needs_caution, n_needs_intervention))::INTEGER
            > 1 THEN 'tie'
        WHEN n_casual = greatest(n_casual, n_needs_caution, n_needs_intervention) THEN 'casual'
        WHEN n_needs_caution = greatest(n_casual, n_needs_caution, n_needs_intervention)
            THEN 'needs caution'
        ELSE 'needs intervention'
    END::annotation_plurality AS plurality,
    entropy_bits(n_casual, n_needs_caution, n_needs_intervention) AS entropy_bits
FROM items
JOIN counts USING (dataset, item_id)
ORDER BY dataset, split, dialogue_id, response_id

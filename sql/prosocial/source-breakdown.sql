-- name: source-breakdown
-- summary: Per source of the seed text: dialogues, utterances, and how their annotations and published labels split.
-- datasets: prosocial
-- column dataset: The dataset: prosocial.
-- column source: The source of the dialogue's seed text: socialchemistry, sbic, ethics_amt or ethics_reddit.
-- column dialogues: Dialogues from the source (split and dialogue_id).
-- column items: Their utterances.
-- column ratings: Their annotations.
-- column share_casual: Share of the annotations that are casual.
-- column share_needs_caution: Share of the annotations that are needs caution.
-- column share_needs_intervention: Share of the annotations that are needs intervention.
-- column share_label_needs_intervention: Share of the utterances published as __needs_intervention__.
-- answer: items, share_needs_caution, share_needs_intervention
-- explanation:
--   Does the seed text's source change how unsafe the dialogues are? For each source
--   (Social Chemistry, Social Bias Frames, and the ETHICS dataset's two parts): its
--   dialogues and utterances, how their three annotations split, and the share of
--   utterances whose published label is __needs_intervention__.
SELECT
    dataset,
    source,
    count(DISTINCT (split, dialogue_id)) AS dialogues,
    count(DISTINCT item_id) AS items,
    count(*) AS ratings,
    count(*) FILTER (annotation = 'casual') / count(*) AS share_casual,
    count(*) FILTER (annotation = 'needs caution') / count(*) AS share_needs_caution,
    count(*) FILTER (annotation = 'needs intervention') / count(*) AS share_needs_intervention,
    -- three annotations per utterance: each utterance is counted three times, alike
    count(*) FILTER (safety_label = '__needs_intervention__') / count(*)
        AS share_label_needs_intervention
FROM ratings
JOIN items USING (dataset, item_id)
GROUP BY dataset, source
ORDER BY dataset, source

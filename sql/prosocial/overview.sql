-- name: overview
-- summary: Size of ProsocialDialog and how its annotations split between casual, needs caution and needs intervention.
-- datasets: prosocial
-- column dataset: The dataset: prosocial.
-- column split: The split: train, valid or test.
-- column dialogues: Dialogues in the split.
-- column items: Utterances (context and response) in the split.
-- column ratings: Annotations: three per utterance.
-- column share_casual: Share of the annotations that are casual.
-- column share_needs_caution: Share of the annotations that are needs caution.
-- column share_needs_intervention: Share of the annotations that are needs intervention.
-- answer: dialogues, items, ratings
-- explanation:
--   The first look at ProsocialDialog: per split, how many dialogues and utterances it
--   holds, and how the three crowd annotations of each utterance split between casual,
--   needs caution and needs intervention. There are no raters: each utterance has three
--   annotation slots, not three identified people.
SELECT
    dataset,
    split,
    count(DISTINCT dialogue_id) AS dialogues,
    count(DISTINCT item_id) AS items,
    count(*) AS ratings,
    count(*) FILTER (annotation = 'casual') / count(*) AS share_casual,
    count(*) FILTER (annotation = 'needs caution') / count(*) AS share_needs_caution,
    count(*) FILTER (annotation = 'needs intervention') / count(*) AS share_needs_intervention
FROM ratings
JOIN items USING (dataset, item_id)
GROUP BY dataset, split
ORDER BY dataset, split

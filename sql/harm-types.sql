-- name: harm-types
-- summary: One row per normalised harm tag: conversations, ratings, share of Yes and of gold Yes.
-- datasets: 350 990
-- column dataset: The dataset: 350 or 990.
-- column harm_tag: A lower-case harm tag; empty for conversations without a harm_type.
-- column conversations: Conversations with the tag.
-- column ratings: Their ratings.
-- column share_yes: Share of the ratings that are Yes (unsafe).
-- column share_gold_unsafe: Share of the conversations the experts labelled unsafe (DICES-350).
-- column share_yes_ci_low: Lower end of the 95% Wilson interval of share_yes (ratings of one conversation are not independent, so it is if anything too narrow).
-- column share_yes_ci_high: Upper end of the 95% Wilson interval of share_yes.
-- chart: share_yes [share_yes_ci_low, share_yes_ci_high] by harm_tag per dataset
-- answer: share_yes, share_yes_ci_low, share_yes_ci_high
-- explanation:
--   Which harm topics do raters find unsafe? harm_type is split into lower-case tags (a
--   conversation can have several, so it counts under each of its tags). share_yes is
--   the crowd's share of Yes over the tag's ratings; share_gold_unsafe the share of its
--   conversations the experts labelled unsafe (DICES-350 only). Conversations without a
--   harm_type appear under an empty tag.
WITH per_item AS (
    SELECT
        dataset,
        item_id,
        any_value(harm_tags) AS harm_tags,
        any_value(safety_gold) AS safety_gold,
        count(*) AS ratings,
        count(*) FILTER (Q_overall = 'Yes') AS n_yes
    FROM ratings_wide
    GROUP BY dataset, item_id
),
tagged AS (
    SELECT
        * EXCLUDE (harm_tags),
        unnest(CASE WHEN len(harm_tags) > 0 THEN harm_tags ELSE [NULL::VARCHAR] END) AS harm_tag
    FROM per_item
)
SELECT
    dataset,
    harm_tag,
    count(*) AS conversations,
    sum(ratings) AS ratings,
    sum(n_yes) / sum(ratings) AS share_yes,
    count(*) FILTER (safety_gold = 'Yes') / nullif(count(safety_gold), 0) AS share_gold_unsafe,
    wilson_low(sum(n_yes), sum(ratings)) AS share_yes_ci_low,
    wilson_high(sum(n_yes), sum(ratings)) AS share_yes_ci_high
FROM tagged
GROUP BY dataset, harm_tag
ORDER BY dataset, conversations DESC, harm_tag

-- name: harm-types
-- summary: One row per normalised harm tag: conversations, ratings, share of Yes and of gold Yes.
-- datasets: 350 990
-- param interval: choice(clustered|conversations|wilson) = clustered: How the 95% interval of share_yes is made: clustered counts raters and conversations as samples (raters and conversations like these; a two-way cluster-robust variance, t with Satterthwaite degrees of freedom, on the logit); conversations counts conversations only (this rater pool); wilson treats every rating as independent (too narrow: ratings of one rater or conversation are not).
-- compute: dices_cli.metrics.shares:compute
-- column dataset: The dataset: 350 or 990.
-- column harm_tag: A lower-case harm tag; empty for conversations without a harm_type.
-- column conversations: Conversations with the tag.
-- column ratings: Their ratings.
-- column share_yes: Share of the ratings that are Yes (unsafe).
-- column share_gold_unsafe: Share of the conversations the experts labelled unsafe (DICES-350).
-- column share_yes_ci_low: Lower end of the 95% interval of share_yes, made as `interval` says.
-- column share_yes_ci_high: Upper end of the 95% interval of share_yes.
-- column interval: The method of the interval: clustered, conversations or wilson.
-- column interval_note: Empty where the interval holds its level; else why it is left empty (fewer than 5 raters or conversations: no interval holds there).
-- chart: share_yes [share_yes_ci_low, share_yes_ci_high] by harm_tag per dataset
-- answer: share_yes, share_yes_ci_low, share_yes_ci_high
-- explanation:
--   Which harm topics do raters find unsafe? harm_type is split into lower-case tags (a
--   conversation can have several, so it counts under each of its tags). share_yes is
--   the crowd's share of Yes over the tag's ratings, with a 95% interval: by default
--   clustered by raters and conversations, as in `qoverall-by-demographic` (a tag of
--   fewer than 5 conversations gets none, and interval_note says so); share_gold_unsafe
--   the share of its conversations the experts labelled unsafe (DICES-350 only).
--   Conversations without a harm_type appear under an empty tag.
WITH per_item AS (
    SELECT
        dataset,
        item_id,
        any_value(harm_tags) AS harm_tags,
        any_value(safety_gold) AS safety_gold,
        count(*) AS ratings,
        count(*) FILTER (Q_overall = 'Yes') AS n_yes,
    -- Every rating's rater, conversation and Yes (1) or not (0), for the interval's
    -- resampling (dices_cli.metrics.shares, which drops these lists).
    list(rater_id) AS rating_rater,
    list(item_id) AS rating_item,
    list((Q_overall IS NOT DISTINCT FROM 'Yes')::UTINYINT) AS rating_yes
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
    sum(ratings)::BIGINT AS ratings,
    sum(n_yes) / sum(ratings) AS share_yes,
    count(*) FILTER (safety_gold = 'Yes') / nullif(count(safety_gold), 0) AS share_gold_unsafe,
    flatten(list(rating_rater)) AS rating_rater,
    flatten(list(rating_item)) AS rating_item,
    flatten(list(rating_yes)) AS rating_yes
FROM tagged
GROUP BY dataset, harm_tag
ORDER BY dataset, conversations DESC, harm_tag

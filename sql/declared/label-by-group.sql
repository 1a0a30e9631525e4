-- name: label-by-group
-- summary: A declared label per rater group: raters, ratings, mean and share in the positive class (e.g. offensiveness >= 3).
-- datasets: declared
-- scales: binary ordinal
-- param by: attributes = []: Rater attributes to group by (dices sql -d NAME --schema lists them); several give their intersection; none: all raters.
-- param label: label: The label; the declaration's first when not given.
-- param interval: choice(clustered|conversations|wilson) = clustered: How the 95% interval of share_positive is made: clustered counts raters and items as samples (raters and items like these; a two-way cluster-robust variance, t with Satterthwaite degrees of freedom, on the logit); conversations counts items only (this rater pool); wilson treats every rating as independent (too narrow).
-- param permutations: integer in [0, 100000] = 1000: Random relabellings of the raters behind p_value, p_adjusted and p_groups_differ (0 = no test).
-- param seed: integer in [0, 4294967295] = 0: Seed of the relabellings; the same seed gives the same p-values.
-- param alternative: choice(two-sided|greater|less) = two-sided: The alternative of p_value: two-sided (the group's share in the positive class differs from the rest's), greater (it is higher) or less (lower); p_adjusted adjusts these p-values.
-- compute: dices_cli.metrics.any_family:share_intervals
-- column dataset: The dataset.
-- column {by}: One column per --by attribute, holding the group's value.
-- column raters: Raters in the group who gave the label.
-- column items: Items they rated.
-- column ratings: Their ratings of the label (a missing code is no rating).
-- column n_positive: Ratings in the declared positive class.
-- column share_positive: n_positive / ratings.
-- column mean: Mean value (ordinal labels; named values: their rank from 1); empty for a binary label.
-- column positive: The values of the positive class, as declared.
-- column share_positive_ci_low: Lower end of the 95% interval of share_positive, made as `interval` says.
-- column share_positive_ci_high: Upper end of the 95% interval of share_positive.
-- column interval: The method of the interval: clustered, conversations or wilson.
-- column interval_note: Empty where the interval holds its level; else why it is left empty (fewer than 5 raters or items: no interval holds there).
-- column difference: The group's share_positive minus that of the other groups' ratings; empty without --by.
-- column difference_ci_low: Lower end of the 95% interval of difference, made as `interval` says (empty below 5 raters on either side).
-- column difference_ci_high: Upper end of the 95% interval of difference.
-- column p_value: p-value of difference for `alternative` (two-sided unless asked), from relabelling the raters at random with every group's size kept.
-- column p_adjusted: p_value adjusted by Benjamini-Hochberg over the groups.
-- column p_groups_differ: One p-value, the same on each row: do the groups' shares differ at all (their ratings-weighted spread, against relabelled raters)?
-- column mean_ci_low: Lower end of the 95% interval of mean, made as `interval` says (an ordinal label only, as are the mean_ columns after it).
-- column mean_ci_high: Upper end of the 95% interval of mean.
-- column mean_difference: The group's mean minus that of the other groups' ratings; empty without --by.
-- column mean_difference_ci_low: Lower end of the 95% interval of mean_difference, made as `interval` says (empty below 5 raters on either side).
-- column mean_difference_ci_high: Upper end of the 95% interval of mean_difference.
-- column mean_p_value: p-value of mean_difference for `alternative`, from the relabellings of p_value.
-- column mean_p_adjusted: mean_p_value adjusted by Benjamini-Hochberg over the groups.
-- column mean_p_groups_differ: One p-value, the same on each row: do the groups' means differ at all?
-- answer: raters, ratings, share_positive, share_positive_ci_low, share_positive_ci_high, mean, difference, p_adjusted
-- explanation:
--   Do groups of raters judge differently? For a binary or ordinal label with a declared
--   positive class (POPQUORN offensiveness: 3, 4 or 5 on 1-5), one row per group of the
--   --by rater attributes: how many raters, items and ratings it has, its share of ratings
--   in the positive class (the share at or above the threshold) and, for an ordinal
--   label, its mean. A nominal label has neither: label-distribution gives its split.
--   The 95% interval of share_positive is DICES's (qoverall-by-demographic): by default a
--   two-way cluster-robust t interval over the group's raters and the items, none below 5
--   (docs/metrics.md). Does a group rate in the positive class more often? difference is
--   its share minus the other groups', with its interval; p_value tests it by relabelling
--   raters at random (group sizes kept; --permutations, --seed), two-sided unless
--   --alternative asks one way; p_adjusted corrects for the number of groups
--   (Benjamini-Hochberg), and p_groups_differ asks whether the groups differ at all.
--   An ordinal label's mean gets the same: its interval (mean_ci_low, mean_ci_high, made
--   as the share's, on the scale) and mean_difference with its interval and tests.
--   `dices query agreement -d NAME --by ...` measures how much groups agree.
-- The interval and the test need only sums (dices_cli.metrics.share_sums): DuckDB reduces
-- the ratings to them per rater, per item and per rater x item cell, and only each group's
-- raters reach Python. A Wilson interval and the test use the raters' sums alone: with it
-- the item and cell sums are not made (their CTEs are empty), and each group's items are
-- counted (item_counts) without summing anything over them.
-- An ordinal label's mean has sums of its own (mean_sums: dices_cli.metrics.mean_sums) of
-- each value's whole-number code, (number - $mean_origin) x $mean_unit.
WITH rater_groups AS (  -- each rater with its group's number, g
    SELECT
        COLUMNS(lambda c: c IN ('dataset', 'rater_id') OR list_contains($by, c)),
        dense_rank() OVER (
            ORDER BY row(*COLUMNS(lambda c: c = 'dataset' OR list_contains($by, c)))
        ) AS g
    FROM raters
),
scored AS NOT MATERIALIZED (  -- each rating: its rater, item, positive (1) or not (0)
    -- and t, its value's code for the mean (mean_sums; none for a binary label, whose sums
    -- of t are then of nothing)
    SELECT rater_id, item_id, positive::INTEGER AS y, number,
        CASE WHEN $kind = 'ordinal' THEN round((number - $mean_origin) * $mean_unit)::INTEGER END
            AS t
    FROM asked_label_values
),
rated AS NOT MATERIALIZED (  -- each rating with its rater's group
    SELECT g, scored.* FROM scored JOIN rater_groups USING (rater_id)  -- one dataset
),
per_rater AS (  -- summed per rater before the raters' groups are joined
    SELECT g, rater_id, y, n, total, t, q
    FROM (
        SELECT rater_id, sum(y) AS y, count(*) AS n, sum(number) AS total,
            sum(t) AS t, sum(t * t) AS q
        FROM scored
        GROUP BY rater_id
    )
    JOIN rater_groups USING (rater_id)
),
per_item AS NOT MATERIALIZED (  -- clustered or conversations (Wilson: item_counts)
    SELECT g, item_id, sum(y) AS y, count(*) AS n, sum(t) AS t
    FROM rated
    WHERE $interval <> 'wilson'
    GROUP BY ALL
),
cells AS (  -- when each cell is one rating (y is 0 or 1, n is 1), its sums are the group's
    SELECT g, sum(y * y) AS k_yy, sum(y * n) AS k_yn, sum(n * n) AS k_nn,
        sum(t * t) AS k_tt, sum(t * n) AS k_tn
    FROM (
        SELECT g, sum(y) AS y, count(*) AS n, sum(t) AS t
        FROM rated
        WHERE $interval <> 'wilson' AND NOT $one_rating_per_cell
        GROUP BY g, rater_id, item_id
    )
    GROUP BY g
),
groups AS (
    SELECT
        g,
        count(*) AS raters,
        sum(n)::BIGINT AS ratings,
        sum(y)::BIGINT AS n_positive,
        CASE WHEN $kind = 'ordinal' THEN sum(total) / sum(n) END AS mean,
        list(y::BIGINT ORDER BY rater_id) AS rater_yes,
        list(n ORDER BY rater_id) AS rater_ratings,
        sum(y * y)::BIGINT AS r_yy,
        sum(y * n)::BIGINT AS r_yn,
        sum(n * n)::BIGINT AS r_nn,
        sum(t)::BIGINT AS total_code,
        sum(q)::BIGINT AS squares_code,
        list(t::BIGINT ORDER BY rater_id) AS rater_total,
        sum(t * t)::BIGINT AS r_tt,
        sum(t * n)::BIGINT AS r_tn
    FROM per_rater
    GROUP BY g
),
with_totals AS NOT MATERIALIZED (  -- each group's item sums beside the item's over every group
    SELECT g, y, n, t,
        sum(y) OVER item AS ty, sum(n) OVER item AS tn, sum(t) OVER item AS tt,
        row_number() OVER item = 1 AS first
    FROM per_item
    WINDOW item AS (PARTITION BY item_id)
),
group_items AS (
    SELECT
        g,
        count(*) AS items,
        sum(y * y)::BIGINT AS c_yy,
        sum(y * n)::BIGINT AS c_yn,
        sum(n * n)::BIGINT AS c_nn,
        sum(y * ty)::BIGINT AS x_yy,
        sum(y * tn)::BIGINT AS x_yn,
        sum(n * ty)::BIGINT AS x_ny,
        sum(n * tn)::BIGINT AS x_nn,
        sum(t * t)::BIGINT AS c_tt,
        sum(t * n)::BIGINT AS c_tn,
        sum(t * tt)::BIGINT AS x_tt,
        sum(t * tn)::BIGINT AS x_tn,
        sum(n * tt)::BIGINT AS x_nt,
        count(*) FILTER (first) AS f_items
    FROM with_totals
    GROUP BY g
),
item_counts AS (  -- Wilson: each group's items, counted (group_items is empty)
    SELECT g, count(*) AS items
    FROM (SELECT DISTINCT g, item_id FROM rated WHERE $interval = 'wilson')
    GROUP BY g
),
family AS (  -- a declared session holds one dataset: its groups are one family; an
    -- item's square over every group is the sum over the groups of theirs times it
    SELECT
        sum(f_items)::BIGINT AS f_items,
        sum(x_yy)::BIGINT AS f_yy,
        sum(x_yn)::BIGINT AS f_yn,
        sum(x_nn)::BIGINT AS f_nn,
        sum(x_tt)::BIGINT AS f_tt,
        sum(x_tn)::BIGINT AS f_tn
    FROM group_items
)
SELECT
    k.* EXCLUDE (g),
    s.raters,
    coalesce(i.items, w.items) AS items,
    s.ratings,
    s.n_positive,
    s.n_positive / s.ratings AS share_positive,
    s.mean,
    $positive_values::VARCHAR AS positive,
    {
        'rater_yes': s.rater_yes, 'rater_ratings': s.rater_ratings,
        'r_yy': s.r_yy, 'r_yn': s.r_yn, 'r_nn': s.r_nn,
        'c_yy': i.c_yy, 'c_yn': i.c_yn, 'c_nn': i.c_nn,
        'x_yy': i.x_yy, 'x_yn': i.x_yn, 'x_ny': i.x_ny, 'x_nn': i.x_nn,
        'k_yy': (CASE WHEN $one_rating_per_cell THEN s.n_positive ELSE c.k_yy END)::BIGINT,
        'k_yn': (CASE WHEN $one_rating_per_cell THEN s.n_positive ELSE c.k_yn END)::BIGINT,
        'k_nn': (CASE WHEN $one_rating_per_cell THEN s.ratings ELSE c.k_nn END)::BIGINT,
        'f_items': f.f_items, 'f_yy': f.f_yy, 'f_yn': f.f_yn, 'f_nn': f.f_nn
    } AS share_sums,
    CASE WHEN $kind = 'ordinal' THEN {
        'total': s.total_code, 'squares': s.squares_code, 'rater_total': s.rater_total,
        'r_tt': s.r_tt, 'r_tn': s.r_tn,
        'c_tt': i.c_tt, 'c_tn': i.c_tn, 'x_tt': i.x_tt, 'x_tn': i.x_tn, 'x_nt': i.x_nt,
        'k_tt': (CASE WHEN $one_rating_per_cell THEN s.squares_code ELSE c.k_tt END)::BIGINT,
        'k_tn': (CASE WHEN $one_rating_per_cell THEN s.total_code ELSE c.k_tn END)::BIGINT,
        'f_tt': f.f_tt, 'f_tn': f.f_tn
    } END AS mean_sums
FROM groups AS s
LEFT JOIN group_items AS i USING (g)
LEFT JOIN item_counts AS w USING (g)
LEFT JOIN cells AS c USING (g)
CROSS JOIN family AS f
JOIN (
    SELECT DISTINCT COLUMNS(lambda c: c = 'dataset' OR list_contains($by, c)), g FROM rater_groups
) AS k USING (g)
ORDER BY ALL

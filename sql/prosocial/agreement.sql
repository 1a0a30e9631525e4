-- name: agreement
-- summary: Krippendorff's alpha (nominal and ordinal), Fleiss' kappa, negentropy and plurality size of the three annotations.
-- datasets: prosocial
-- column dataset: The dataset: prosocial.
-- column items: Utterances with two or more annotations (all, in the published files).
-- column ratings: Their annotations.
-- column irr: Krippendorff's alpha (nominal) among the annotation slots.
-- column irr_ordinal: Krippendorff's alpha with the ordinal metric (casual < needs caution < needs intervention).
-- column fleiss_kappa: Fleiss' kappa (three annotations per utterance).
-- column negentropy: Mean over utterances of ln 3 minus the entropy of the annotations.
-- column plurality_size: Mean over utterances of the share giving the most frequent annotation.
-- answer: irr, irr_ordinal, fleiss_kappa
-- explanation:
--   Do the annotators agree? ProsocialDialog publishes three annotations per utterance
--   but no annotator ids, so only the measures that need no rater identity apply:
--   Krippendorff's alpha (irr, nominal as for DICES, and irr_ordinal with the ordinal
--   metric over casual < needs caution < needs intervention), Fleiss' kappa, negentropy
--   (0 to ln 3) and plurality size, each over all utterances. Cross-replication (xrr),
--   the group association index and permutation tests compare rater groups, which
--   ProsocialDialog does not have. Alpha treats each utterance's annotations as values of
--   one unit (Krippendorff 2011, "Computing Krippendorff's Alpha-Reliability").
WITH per_item AS (
    SELECT
        dataset,
        item_id,
        count(*) AS m,
        count(*) FILTER (annotation = 'casual') AS n0,
        count(*) FILTER (annotation = 'needs caution') AS n1,
        count(*) FILTER (annotation = 'needs intervention') AS n2
    FROM ratings
    GROUP BY dataset, item_id
    HAVING count(*) >= 2
),
counts AS (  -- one row per utterance and category c (0, 1, 2: the categories in order)
    SELECT dataset, item_id, m, c, [n0, n1, n2][c + 1] AS n
    FROM per_item, range(3) AS categories(c)
),
coincidence AS (  -- o_ck: pairs of values c, k within one unit, each unit weighing 1/(m-1)
    SELECT a.dataset, a.c, b.c AS k, sum(a.n * (b.n - (a.c = b.c)::INTEGER) / (a.m - 1)) AS o
    FROM counts AS a
    JOIN counts AS b USING (dataset, item_id)
    GROUP BY ALL
),
marginal AS (  -- n_c: the values of category c that are pairable
    SELECT dataset, c, sum(o) AS n_c FROM coincidence GROUP BY ALL
),
distance AS (  -- squared distances of c and k: nominal, and ordinal from the marginals
    SELECT
        a.dataset,
        a.c,
        b.c AS k,
        (a.c <> b.c)::INTEGER AS nominal,
        (
            (SELECT sum(g.n_c) FROM marginal AS g
             WHERE g.dataset = a.dataset AND g.c BETWEEN least(a.c, b.c) AND greatest(a.c, b.c))
            - (a.n_c + b.n_c) / 2
        ) ** 2 AS ordinal
    FROM marginal AS a
    JOIN marginal AS b USING (dataset)
),
alpha AS (
    SELECT
        o.dataset,
        1 - (any_value(total.n) - 1) * sum(o.o * d.nominal)
            / sum(a.n_c * b.n_c * d.nominal) AS irr,
        1 - (any_value(total.n) - 1) * sum(o.o * d.ordinal)
            / sum(a.n_c * b.n_c * d.ordinal) AS irr_ordinal
    FROM coincidence AS o
    JOIN distance AS d USING (dataset, c, k)
    JOIN marginal AS a ON a.dataset = o.dataset AND a.c = o.c
    JOIN marginal AS b ON b.dataset = o.dataset AND b.c = o.k
    JOIN (SELECT dataset, sum(n_c) AS n FROM marginal GROUP BY ALL) AS total
        ON total.dataset = o.dataset
    GROUP BY o.dataset
),
summary AS (
    SELECT
        dataset,
        count(*) AS items,
        sum(m) AS ratings,
        avg((n0 * (n0 - 1) + n1 * (n1 - 1) + n2 * (n2 - 1)) / (m * (m - 1))) AS p_bar,
        (sum(n0) / sum(m)) ** 2 + (sum(n1) / sum(m)) ** 2 + (sum(n2) / sum(m)) ** 2 AS p_e,
        avg(ln(3) - entropy_bits(n0, n1, n2) * ln(2)) AS negentropy,
        avg(greatest(n0, n1, n2) / m) AS plurality_size
    FROM per_item
    GROUP BY dataset
)
SELECT
    dataset,
    items,
    ratings,
    irr,
    irr_ordinal,
    (p_bar - p_e) / (1 - p_e) AS fleiss_kappa,
    negentropy,
    plurality_size
FROM summary
JOIN alpha USING (dataset)
ORDER BY dataset

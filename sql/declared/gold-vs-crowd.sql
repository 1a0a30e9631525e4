-- name: gold-vs-crowd
-- summary: A declared label's crowd label per item against the items' reference label (experts' gold): accuracy and Cohen's kappa with its interval, per rater group.
-- datasets: declared
-- scales: binary nominal ordinal
-- param by: attributes = []: Compute the crowd label from this group's raters only; several give their intersection; none: all raters.
-- param label: label: The label; when not given, the one the declaration gives a reference for.
-- param crowd: choice(plurality|median) = plurality: The crowd label of an item: plurality (its most frequent value; a tie is a label of its own) or median (ordinal labels: the lower median of its ratings).
-- compute: dices_cli.metrics.reference_agreement:gold_vs_crowd
-- column dataset: The dataset.
-- column {by}: One column per --by attribute, holding the group's value.
-- column label: The label whose crowd label is compared.
-- column reference: The item attribute holding the reference label.
-- column crowd: How the crowd label was made: plurality or median.
-- column items: Items compared: rated by the group, with a reference label.
-- column ties: Items whose plurality is a tie of two or more values (a crowd label that matches no reference).
-- column accuracy: Share of the items whose crowd label is their reference label.
-- column kappa: Cohen's kappa of the crowd label against the reference label (a tie is a category of its own).
-- column kappa_ci_low: Lower end of kappa's 95% interval (Fleiss, Cohen and Everitt's large-sample standard error, over the items; docs/metrics.md).
-- column kappa_ci_high: Upper end of kappa's 95% interval.
-- column kappa_linear: Weighted kappa with linear weights on the values' ranks (ordinal labels with --crowd median; empty otherwise).
-- column kappa_quadratic: Weighted kappa with quadratic weights on the values' ranks (as kappa_linear).
-- answer: items, accuracy, kappa, kappa_ci_low, kappa_ci_high, kappa_linear
-- explanation:
--   How often does the crowd agree with the items' reference label (the experts' gold
--   a declaration names in [dataset.references.ATTRIBUTE])? Each item gets a crowd label
--   from the ratings of the label by the group's raters: the plurality value (a tie of
--   two or more values is the crowd label 'tie', which matches no reference and is a
--   category of its own in kappa), or for an ordinal label with --crowd median the lower
--   median (the smallest value at or below which half the ratings lie). Items without a
--   reference (empty, or a declared missing code) are left out. accuracy is the share of
--   items whose crowd label is the reference; kappa is Cohen's kappa over the scale's
--   values, with a 95% Wald interval from Fleiss, Cohen and Everitt's (1969)
--   large-sample standard error held in [-1, 1] (the items are the sample, as in DICES's
--   gold-vs-crowd-summary). For an ordinal label with --crowd median, weighted kappas
--   count a near miss as partly agreeing: linear and quadratic weights on the values'
--   ranks. A plurality tie has no place on the scale, so plurality gives no weighted
--   kappa. A NULL kappa had chance agreement 1 (both labels constant and equal).
SELECT COLUMNS(lambda c: c IN ('dataset', 'item_id', 'category', 'reference_cell') OR list_contains($by, c))
FROM (
    SELECT *, l.rank AS category
    FROM label_values AS l
    JOIN (SELECT COLUMNS(lambda c: c IN ('dataset', 'rater_id') OR list_contains($by, c)) FROM raters)
        USING (dataset, rater_id)
    JOIN (
        SELECT dataset, item_id, CAST(COLUMNS(lambda c: c = $reference) AS VARCHAR) AS reference_cell
        FROM items
    ) USING (dataset, item_id)
    WHERE l.label = $label
)
ORDER BY item_id

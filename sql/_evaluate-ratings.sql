-- Internal (dices evaluate): one row per rating of the selected raters: the conversation,
-- the rater, the rater columns the evaluation is broken down by ($by, in the view's order),
-- and the Q_overall answer. The references (crowd plurality and share, per group) are
-- counted from these rows, and the human baseline draws raters from them.
SELECT COLUMNS(lambda c: c IN ('item_id', 'rater_id', 'Q_overall') OR list_contains($by, c))
FROM ratings_wide

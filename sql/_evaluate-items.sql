-- Internal (dices evaluate): every conversation of the session's dataset and whether the
-- experts labelled it unsafe (NULL where the dataset has no safety_gold: DICES-990).
SELECT item_id, safety_gold = 'Yes' AS gold_unsafe
FROM items
ORDER BY item_id

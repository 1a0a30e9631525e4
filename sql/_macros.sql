-- Macros shared by the canned queries; a session loads this file when its statement calls
-- one of them (or may: dices sql's SHOW TABLES, say).

-- The most frequent answer among counts of No, Yes and Unsure; 'tie' when the top two are
-- equal; NULL when there are no answers.
CREATE MACRO plurality(n_no, n_yes, n_unsure) AS (
    CASE
        WHEN greatest(n_no, n_yes, n_unsure) = 0 THEN NULL
        WHEN (n_no = greatest(n_no, n_yes, n_unsure))::INTEGER
            + (n_yes = greatest(n_no, n_yes, n_unsure))::INTEGER
            + (n_unsure = greatest(n_no, n_yes, n_unsure))::INTEGER > 1 THEN 'tie'
        WHEN n_no = greatest(n_no, n_yes, n_unsure) THEN 'No'
        WHEN n_yes = greatest(n_no, n_yes, n_unsure) THEN 'Yes'
        ELSE 'Unsure'
    END
)::crowd_label;

-- The crowd's label for the binary question "is the plurality Yes?": the plurality, where a
-- tie counts only when Yes is among the answers tied for the most ('tie'); No and Unsure
-- tied above Yes is 'No=Unsure', which is not Yes (not unsafe). NULL when there are no
-- answers. `plurality` stays the descriptive answer ('tie' for any tie).
CREATE MACRO crowd_label_of(n_no, n_yes, n_unsure) AS (
    CASE
        WHEN n_no = n_unsure AND n_no > n_yes THEN 'No=Unsure'::crowd_label
        ELSE plurality(n_no, n_yes, n_unsure)
    END
);

-- -p log2 p of one category's count out of a total, with 0 log 0 = 0.
CREATE MACRO neg_p_log2_p(n, total) AS (
    CASE WHEN n > 0 THEN -(n / total) * log2(n / total) ELSE 0 END
);

-- Shannon entropy, in bits, of the No / Yes / Unsure distribution (0 = unanimous).
CREATE MACRO entropy_bits(n_no, n_yes, n_unsure) AS (
    neg_p_log2_p(n_no, n_no + n_yes + n_unsure)
    + neg_p_log2_p(n_yes, n_no + n_yes + n_unsure)
    + neg_p_log2_p(n_unsure, n_no + n_yes + n_unsure)
);

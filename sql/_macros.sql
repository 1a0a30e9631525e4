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

-- Cohen's kappa of two binary labels from the four cells of their 2x2 table, as counts:
-- both Yes (yy), the first Yes and the second not (yn), the other way (ny), both not (nn).
-- NULL when chance agreement is 1 (both labels constant and equal).
CREATE MACRO kappa_chance(yy, yn, ny, nn) AS (
    ((yy + yn) * (yy + ny) + (ny + nn) * (yn + nn)) / (yy + yn + ny + nn) ** 2
);
CREATE MACRO cohen_kappa(yy, yn, ny, nn) AS (
    ((yy + nn) / (yy + yn + ny + nn) - kappa_chance(yy, yn, ny, nn))
    / nullif(1 - kappa_chance(yy, yn, ny, nn), 0)
);

-- The large-sample standard error of Cohen's kappa (Fleiss, Cohen and Everitt 1969, their
-- equation 13: the variance when kappa is not 0), from the table's four shares, its size n,
-- its kappa k and chance agreement pe. Rows are the first label, columns the second.
CREATE MACRO kappa_se_of(p_yy, p_yn, p_ny, p_nn, n, k, pe) AS (
    sqrt(greatest(
        p_yy * (1 - ((p_yy + p_yn) + (p_yy + p_ny)) * (1 - k)) ** 2
        + p_nn * (1 - ((p_ny + p_nn) + (p_yn + p_nn)) * (1 - k)) ** 2
        + (1 - k) ** 2 * (
            p_yn * ((p_yy + p_ny) + (p_ny + p_nn)) ** 2
            + p_ny * ((p_yn + p_nn) + (p_yy + p_yn)) ** 2
        )
        - (k - pe * (1 - k)) ** 2,
        0
    ) / n) / nullif(1 - pe, 0)
);
CREATE MACRO kappa_se(yy, yn, ny, nn) AS (
    kappa_se_of(
        yy / (yy + yn + ny + nn), yn / (yy + yn + ny + nn),
        ny / (yy + yn + ny + nn), nn / (yy + yn + ny + nn),
        yy + yn + ny + nn, cohen_kappa(yy, yn, ny, nn), kappa_chance(yy, yn, ny, nn)
    )
);

-- The ends of kappa's 95% Wald interval, kappa -/+ 1.96 standard errors, held in [-1, 1].
CREATE MACRO kappa_ci_low(yy, yn, ny, nn) AS (
    if(
        cohen_kappa(yy, yn, ny, nn) - 1.959963984540054 * kappa_se(yy, yn, ny, nn) < -1,
        -1,
        cohen_kappa(yy, yn, ny, nn) - 1.959963984540054 * kappa_se(yy, yn, ny, nn)
    )
);
CREATE MACRO kappa_ci_high(yy, yn, ny, nn) AS (
    if(
        cohen_kappa(yy, yn, ny, nn) + 1.959963984540054 * kappa_se(yy, yn, ny, nn) > 1,
        1,
        cohen_kappa(yy, yn, ny, nn) + 1.959963984540054 * kappa_se(yy, yn, ny, nn)
    )
);

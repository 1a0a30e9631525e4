"""Agreement and diversity metrics of rater groups (numpy only; formulas in docs/metrics.md)."""

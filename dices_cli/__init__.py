"""dices: validated Parquet and canned DuckDB queries for the DICES safety-rating datasets."""

__version__ = "0.1.0"

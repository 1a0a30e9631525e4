"""Canned DuckDB queries over the ingested data."""

"""Each dataset family's reading, checks, ingester and exports; `validate` and `ingest` dispatch
to them by family."""

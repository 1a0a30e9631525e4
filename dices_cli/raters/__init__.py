"""Which raters a command sees: quality scores, the filter's audit, and the selection resolved
once above the query engine."""

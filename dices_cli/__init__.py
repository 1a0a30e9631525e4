"""dices: validated Parquet and canned DuckDB queries for the DICES safety-rating datasets.

The Python API (`dices_cli.api`; docs/python.md is a worked session):

    import dices_cli as dices
    d = dices.open("dices-data")
    d.query("qoverall-by-demographic", dataset="350", by=["rater_gender"])

The names below are the API, versioned: what `__all__` names changes only with a note in
CHANGELOG.md (tests/api/test_api.py compares them). They are loaded on first use, so that
`import dices_cli` imports no heavy library (nor `dices --help`, which imports this).
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

__all__ = [
    "DamagedDataError",
    "Data",
    "DatasetExistsError",
    "DicesError",
    "DicesNote",
    "IngestSummary",
    "InvalidInputError",
    "LockedError",
    "NotIngestedError",
    "RaterFilterResult",
    "UsageError",
    "ValidationReport",
    "__version__",
    "describe",
    "ingest",
    "open",
    "validate",
]
# The public names defined in dices_cli.errors; the others are dices_cli.api's.
_ERRORS = frozenset(name for name in __all__ if name.endswith("Error"))


def __getattr__(name: str) -> Any:
    """A public name, imported from its module when first asked for."""
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    module = importlib.import_module("dices_cli.errors" if name in _ERRORS else "dices_cli.api")
    return getattr(module, name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})

"""dices: validated Parquet and canned DuckDB queries for the DICES safety-rating datasets.

The Python API (`dices_cli.api`; docs/python.md is a worked session):

    import dices_cli as dices
    d = dices.open("dices-data")
    d.query("qoverall-by-demographic", dataset="350", by=["rater_gender"])

The names below are the API, versioned: what `__all__` names changes only with a note in
CHANGELOG.md (tests/test_api.py compares them). They are loaded on first use, so that
`import dices_cli` imports no heavy library (nor `dices --help`, which imports this).
"""

from __future__ import annotations

import sys
import types
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


class _Package(types.ModuleType):
    """This package, whose public names win over its modules of the same name.

    `dices_cli.ingest` and `dices_cli.validate` are the API's functions and also modules of
    the package: importing a module sets it as an attribute of its package, which would hide
    the function. The module stays importable by its full name (`from dices_cli.validate
    import ...`; `sys.modules`)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in __all__ and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package

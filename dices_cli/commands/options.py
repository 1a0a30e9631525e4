"""Options shared by several commands, so each is spelled and documented once."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from dices_cli.output import Format

DataDir = Annotated[
    Path | None,
    typer.Option(
        "--data",
        help="Data directory (default: $DICES_DATA, else ./dices-data).",
        show_default=False,
        file_okay=False,
    ),
]
OutputFormat = Annotated[
    Format | None,
    typer.Option(
        "--format",
        "-f",
        help="Output format (default: table on a terminal, else csv; or from the -o extension).",
        show_default=False,
        case_sensitive=False,
    ),
]
OutputFile = Annotated[
    Path | None,
    typer.Option("--output", "-o", help="Write to FILE instead of stdout.", dir_okay=False),
]
Force = Annotated[
    bool,
    typer.Option("--force", help="Overwrite -o FILE if it exists (never an input of the command)."),
]

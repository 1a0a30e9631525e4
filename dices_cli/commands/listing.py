"""A command group that knows when it is drawing the list of its commands."""

from __future__ import annotations

from typing import Any

from typer.core import TyperGroup


class ListingGroup(TyperGroup):
    """A group whose `listing` is true while it draws its help, the list of its commands: its
    `get_command` can then give each command as the list needs it (one line of help, not a
    loaded module; help marked up for Rich)."""

    listing = False

    def format_help(self, ctx: Any, formatter: Any) -> None:
        self.listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self.listing = False

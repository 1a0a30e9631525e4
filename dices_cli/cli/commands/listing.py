"""A command group that knows when it is drawing the list of its commands, and help text as
Rich should wrap it."""

from __future__ import annotations

import inspect
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


def unwrapped(help_text: str | None) -> str | None:
    """`help_text` with each paragraph of prose on one line, for Rich to wrap at the
    terminal's width: Typer keeps a docstring's line breaks, so Rich wrapped lines already
    wrapped at 90 columns a second time ("at a pinned" / "commit,"). A paragraph with an
    indented line (examples, lists of columns) keeps its lines."""
    if help_text is None:
        return None
    paragraphs = inspect.cleandoc(help_text).split("\n\n")
    return "\n\n".join(
        paragraph
        if any(line.startswith(" ") for line in paragraph.splitlines())
        else " ".join(line.strip() for line in paragraph.splitlines())
        for paragraph in paragraphs
    )

"""What a table of a result always shows (`Focus`), declared by each command.

Apart from `dices_cli.cli.tabular`, which lays tables out: a command that writes its result
to a pipe or a file names its focus without loading the layout code (about 3 ms of the
start-up of `dices query NAME | ...`).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Focus:
    """What a table of a result always shows, besides its leading labels and ids: `keys`,
    the group columns that say which row is which, and `answer`, the columns that answer the
    command's question. Names the result lacks (as after --columns) are passed over."""

    keys: tuple[str, ...] = ()
    answer: tuple[str, ...] = ()

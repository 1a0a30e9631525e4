"""What a table of a result always shows (`Focus`), declared by each command.

Apart from `dices_cli.cli.tabular`, which lays tables out: a command that writes its result
to a pipe or a file names its focus without loading the layout code (part of the
start-up of `dices query NAME | ...`, bench/startup.py).
"""

from __future__ import annotations

from dataclasses import dataclass

# The size of a group, shown beside any figure of a group: a reviewer asks for it first.
GROUP_SIZES = ("raters",)


@dataclass(frozen=True)
class Focus:
    """What a table of a result always shows, besides its leading labels and ids: `keys`,
    the group columns that say which row is which, and `answer`, the columns that answer the
    command's question. Names the result lacks (as after --columns) are passed over."""

    keys: tuple[str, ...] = ()
    answer: tuple[str, ...] = ()
    named: tuple[str, ...] = ()  # named by the person (--columns, --sort): shown even if empty

    @classmethod
    def grouped(cls, groups: tuple[str, ...], answer: tuple[str, ...]) -> Focus:
        """A result broken down by the rater columns `groups`: with the groups' sizes too."""
        return cls(groups, (*answer, *GROUP_SIZES) if groups else answer)

    def asking(self, *names: str | None) -> Focus:
        """This focus with `names` (those a person named: --columns, --sort) kept too."""
        return Focus(self.keys, self.answer, (*self.named, *(n for n in names if n)))

    def keeps(self, name: str) -> bool:
        """Whether a table shows the column `name` whatever the room (a key is kept too)."""
        return name in self.answer or name in self.named

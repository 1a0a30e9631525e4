"""-q/--quiet, the option every command and dices itself take.

A module of its own, so that `dices --help` builds it without importing the other shared
options (and `dices_cli.output` with them, a part of its start: bench/startup.py).
"""

from __future__ import annotations

from typing import Any

from typer.core import TyperOption


def quiet_option() -> TyperOption:
    """-q/--quiet, which every command takes: it silences dices_cli.cli.render.say."""

    def set_quiet(_ctx: Any, _param: Any, value: bool) -> None:
        if value:
            from dices_cli.cli.render import set_quiet

            set_quiet(True)

    return TyperOption(
        param_decls=["--quiet", "-q"],
        is_flag=True,
        expose_value=False,
        is_eager=True,
        callback=set_quiet,
        help="No progress and no notes on stderr; errors are still shown.",
    )

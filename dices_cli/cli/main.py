"""The `dices` command line: parses arguments, calls the core, renders the result.

Heavy libraries (Polars, DuckDB) are imported inside the commands that need them, so
`dices --help` starts fast.
"""

from __future__ import annotations

import importlib
from typing import Annotated, Any, Literal

import typer
from typer.core import TyperCommand

from dices_cli import __version__
from dices_cli.cli.commands.listing import ListingGroup, unwrapped
from dices_cli.cli.commands.quiet import quiet_option
from dices_cli.cli.failures import failed, run_and_leave

RICH_MARKUP_MODE: Literal["rich"] = "rich"

# Every command, in the order `dices --help` lists them: its name, the module of
# dices_cli.cli.commands whose `register(app)` makes it, and the one-line help `dices --help`
# shows (the first paragraph of the command's own help; a test keeps them equal).
# A command's module is imported, and Typer builds its options, only when the command runs
# or shows its own help (`DicesGroup.get_command`), never to list it: `dices sql` no longer
# imports the other six modules nor builds their commands (a large share of the time before
# the first bytes of `dices sql ... | head -c 100`; bench/startup.py). `dices sql` and
# `dices query` have a module each: when one module made both, Typer built both for either.
COMMANDS: dict[str, tuple[str, str]] = {
    "ingest": ("data", "Validate DICES CSV files and store them as typed Parquet."),
    "validate": (
        "data",
        "Check DICES CSV files without ingesting them; list every problem found.",
    ),
    "info": (
        "data",
        "Show what is ingested: per dataset, conversations, raters, ratings, source and checksum.",
    ),
    "describe": ("describe", "Write a draft declaration (TOML) for files dices does not know yet."),
    "export": (
        "data",
        "Write an ingested dataset back as the original wide CSV, or in a layout other tools read.",
    ),
    "demo": (
        "data",
        "Ingest the small sample that ships with dices and show a short tour. Works offline.",
    ),
    "download": (
        "download",
        "Fetch the official files, verify their size and SHA-256, print their paths.",
    ),
    "verify": (
        "verify",
        "Check that every stored file is intact: its size and SHA-256 as recorded at ingest.",
    ),
    "sql": ("sql", "Run your own read-only SQL over the ingested data."),
    "filter-raters": (
        "raters",
        "Score every rater's quality, keep the good ones, and audit what the filter changes.",
    ),
    "evaluate": (
        "evaluate",
        "Score a model's predictions against the experts and the raters of DICES, or against "
        "ProsocialDialog's published labels and annotations.",
    ),
    "judge": (
        "judge",
        "Run an LLM judge or a safety classifier over DICES or ProsocialDialog: cached, "
        "resumable, polarity declared, straight into evaluate.",
    ),
    "report": (
        "report",
        "Write one HTML report: charts of the canned queries, with the numbers behind each.",
    ),
    "query": ("canned", "Run a canned query: the field's standard questions, as documented SQL."),
}


class ListedCommand(TyperCommand):
    """A command not loaded yet, as the list of commands shows it: its name and one-line help."""


class DicesGroup(ListingGroup):
    """Turns core exceptions into `Error: ...` and an exit code, and a closed pipe into exit 0.

    Every command, and dices itself, takes -q/--quiet. The commands are listed from
    `COMMANDS` and loaded one module at a time, when one of them is wanted.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.params.append(quiet_option())
        for name, (_module, one_line) in COMMANDS.items():
            self.commands.setdefault(name, ListedCommand(name, help=one_line))

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        command = self.commands.get(cmd_name)
        if isinstance(command, ListedCommand) and not self.listing:
            self._load(COMMANDS[cmd_name][0])
            command = self.commands[cmd_name]
        return command

    def _load(self, module_name: str) -> None:
        """Make the commands of dices_cli.cli.commands.`module_name` as Typer makes them for an app
        they are registered with, each with -q/--quiet."""
        import typer.main

        module = importlib.import_module(f"dices_cli.cli.commands.{module_name}")
        registry = typer.Typer(rich_markup_mode=RICH_MARKUP_MODE)
        module.register(registry)
        for name, command in typer.main.get_group(registry).commands.items():
            command.params.append(quiet_option())
            command.help = unwrapped(command.help)
            self.commands[name] = command

    def main(self, *args: Any, **kwargs: Any) -> Any:
        from dices_cli.cli.render import set_quiet

        set_quiet(False)  # each run starts talking (tests run many in one process)
        try:
            return super().main(*args, **kwargs)
        finally:
            set_quiet(False)  # and ends so: what the process draws next (a test's) is not -q

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except (typer.Exit, typer.Abort, typer.TyperException, KeyboardInterrupt):
            raise  # Typer's own exits and usage errors (exit 2) stay as they are
        except Exception as error:
            raise typer.Exit(failed(error, ctx.invoked_subcommand)) from None


app = typer.Typer(
    cls=DicesGroup,
    name="dices",
    help=(
        "Validated Parquet and canned queries for the DICES crowd safety ratings.\n\n"
        "Start with `dices demo`, then `dices ingest FILE` and `dices query --list`."
    ),
    context_settings={"help_option_names": ["-h", "--help"]},
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=RICH_MARKUP_MODE,
)


def _show_version(value: bool) -> None:
    if value:
        print(f"dices {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[
        bool,
        typer.Option(
            "--version", "-V", callback=_show_version, is_eager=True, help="Show the version."
        ),
    ] = False,
) -> None:
    """Validated Parquet and canned queries for the DICES crowd safety ratings."""


def run() -> None:
    """The console script: Typer's app, ended as every command line ends
    (`dices_cli.cli.failures.run_and_leave`)."""
    run_and_leave(app)

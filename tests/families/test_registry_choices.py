"""The dataset choices of the commands and the API come from the registered families: no
module outside families/ writes the datasets' names as a list of choices."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import typer.main

from dices_cli.cli.main import app
from dices_cli.families import FAMILIES, coded_members, grouped_members, member_choices

PACKAGE = Path(__file__).resolve().parents[2] / "dices_cli"


def test_no_module_outside_families_lists_the_dataset_names() -> None:
    # As the check, `grep -rn '"350", "990"' dices_cli`, finds them (docstrings quote
    # them with '...' in prose).
    listed = re.compile(r'"350"\s*,\s*"990"')
    found = [
        f"{path.relative_to(PACKAGE)}:{number}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if "families" not in path.relative_to(PACKAGE).parts
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if listed.search(line)
    ]
    assert found == []


def test_the_choices_are_the_registered_families_own() -> None:
    coded = [f for f in FAMILIES.values() if f.declared is None]
    assert coded_members() == tuple(m for f in coded for m in f.members)
    assert grouped_members() == tuple(
        m for f in coded if f.has_raters and f.has_demographics for m in f.members
    )
    assert member_choices() == (
        *grouped_members(),
        "all",
        *(m for m in coded_members() if m not in grouped_members()),
    )


@pytest.mark.parametrize(
    ("words", "option", "choices"),
    [
        (["filter-raters"], "dataset", ("all", *coded_members())),
        (["export"], "dataset", member_choices()),
        (["validate"], "dataset", ("auto", *grouped_members())),
        (["report"], "predictions_dataset", grouped_members()),
    ],
)
def test_each_commands_dataset_choice_is_drawn_from_the_registry(
    words: list[str], option: str, choices: tuple[str, ...]
) -> None:
    command = typer.main.get_command(app)
    ctx = command.make_context("dices", ["--version"], resilient_parsing=True)
    for word in words:
        command = command.get_command(ctx, word)  # type: ignore[attr-defined]
        ctx = command.make_context(word, [], resilient_parsing=True)
    (param,) = [p for p in command.params if p.name == option]
    assert tuple(param.type.choices) == choices


def test_evaluates_dataset_is_checked_by_the_library_against_the_registry(
    tmp_path: Path,
) -> None:
    """`dices evaluate -d` is checked in one place, the library (`runs.evaluation`), against
    the registry's choices; its --help lists them."""
    from typer.testing import CliRunner

    predictions = tmp_path / "p.csv"
    predictions.write_text("item_id,label\n1,Yes\n")
    result = CliRunner().invoke(app, ["evaluate", str(predictions), "-d", "nosuch"])
    assert result.exit_code == 2
    choices = ", ".join(member_choices())
    assert f"Error: --dataset must be one of: {choices} (got 'nosuch')" in result.stderr
    assert "|".join(member_choices()) in CliRunner().invoke(app, ["evaluate", "-h"]).stdout


def test_a_querys_dataset_is_checked_against_every_registered_dataset(tmp_path: Path) -> None:
    """`dices query -d` takes a declared dataset too (its own queries), so its choices are
    checked when the command runs, against the registry: an unknown one lists them all."""
    from typer.testing import CliRunner

    from dices_cli.families import all_members

    result = CliRunner().invoke(app, ["query", "overview", "-d", "nosuch", "--data", str(tmp_path)])
    assert result.exit_code == 2
    choices = ", ".join(("all", *all_members()))
    assert f"--dataset must be one of: {choices} (got 'nosuch')" in result.output

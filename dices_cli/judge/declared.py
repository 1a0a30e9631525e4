"""A judge over a declared dataset's items: a scale prompt (`label = "NAME"`) checked against
the declaration, the items' text fields it reads, and the rater attributes a persona takes.

`scale_values` runs when a run starts: the dataset is one `dices judge` reads, a scale
prompt goes with a declared dataset (and a DICES prompt with DICES's conversations), its
label is one of the dataset's, each of its answers a value of that label's scale, and each
of its placeholders a text field of the dataset. Every mistake is a usage error that says
which answer, value or field, and what the declaration has.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dices_cli.errors import Option, UsageError
from dices_cli.families import FAMILIES, listed, member_choices
from dices_cli.judge.answers import value_text

if TYPE_CHECKING:
    from dices_cli.families.declaration import DatasetDeclaration, Scale
    from dices_cli.judge.prompts import Prompt
    from dices_cli.store.datasets import Store


def declared_of(dataset: str) -> DatasetDeclaration | None:
    """The declaration of a declared dataset, or None (DICES, ProsocialDialog)."""
    family = FAMILIES.get(dataset)
    return None if family is None else family.declared


def scale_values(dataset: str, prompt: Prompt, baseline: str | None) -> tuple[str, ...]:
    """The values of a scale prompt's label, as its predictions write them, once `dataset`
    and `prompt` (and the model, when it is an offline `baseline`) are checked against each
    other; none for a DICES prompt."""
    declared = declared_of(dataset)
    if declared is None:
        if dataset not in member_choices():
            raise UsageError(
                Option("dataset"),
                f" {dataset}: choose {', '.join(member_choices())} or a declared "
                "dataset (dices info lists them)",
            )
        if prompt.label is not None:
            raise UsageError(
                Option("prompt"),
                f" {prompt.source} rates the label {prompt.label!r} of a declared dataset; "
                f"{dataset} is judged with a prompt of {{context}} and {{response}}",
            )
        return ()
    if baseline is not None:
        raise UsageError(
            Option("model"),
            f" {baseline}: the offline baselines answer unsafe or safe; "
            f"{declared.title} is judged by a model",
        )
    if prompt.label is None:
        raise UsageError(
            Option("prompt"),
            f" {prompt.name} judges conversations ({{context}}, {{response}}); "
            f"{declared.title} is judged with a prompt that declares label = one of "
            f"{', '.join(declared.labels)} (docs/judge.md)",
        )
    scale = _scale(declared, prompt.label, prompt.source)
    for answer, value in prompt.answers.items():
        if _on_scale(value, scale) is None:
            shown = ", ".join(map(str, scale.values))
            raise UsageError(
                Option("prompt"),
                f" {prompt.source}: the answer {answer!r} = {value!r} is not a value of "
                f"{prompt.label} ({scale.kind}: {shown})",
            )
    fields = text_fields(declared)
    for name in prompt.fields:
        if name not in fields:
            have = f"its text fields are {listed(fields, 'and')}" if fields else "it has no text"
            raise UsageError(
                Option("prompt"),
                f" {prompt.source}: {{{name}}} is not a text field of {declared.title}; {have}",
            )
    return tuple(value_text(v) for v in scale.values)


def _scale(declared: DatasetDeclaration, label: str, source: str) -> Scale:
    if label not in declared.scales:
        raise UsageError(
            Option("prompt"),
            f" {source}: label = {label!r} is not a label of {declared.title}; its labels "
            f"are {listed(declared.labels, 'and')}",
        )
    return declared.scales[label]


def _on_scale(value: Any, scale: Scale) -> str | None:
    """The scale's value an answer maps to (3 and 3.0 are one number), or None."""
    for known in scale.values:
        if value == known or value_text(value) == value_text(known):
            return value_text(known)
    return None


def text_fields(declared: DatasetDeclaration) -> list[str]:
    """The item text fields a declaration stores, in its order."""
    return list(dict.fromkeys(name for f in declared.files for name in f.text))


def declared_items(
    store: Store, dataset: str, fields: tuple[str, ...]
) -> list[tuple[Any, tuple[tuple[str, str], ...]]]:
    """Each item of a declared dataset, in item order: its id and its text `fields`
    (missing text: empty)."""
    from dices_cli.queries.family import session_for

    session = session_for(store, dataset)
    # The names are the declaration's text fields (`scale_values`), never a user's text.
    cells = "".join(f', CAST("{name}" AS VARCHAR)' for name in fields)
    rows = session.execute(f"SELECT item_id{cells} FROM items ORDER BY item_id").rows
    return [
        (row[0], tuple((f, t or "") for f, t in zip(fields, row[1:], strict=True))) for row in rows
    ]


def declared_persona_groups(store: Store, dataset: str, persona: str) -> dict[str, list[str]]:
    """The values of the rater attribute `persona` among a declared dataset's raters."""
    from dices_cli.queries.family import session_for

    session = session_for(store, dataset)
    attributes = [
        column
        for (column,) in session.execute("SELECT column_name FROM (DESCRIBE raters)").rows
        if column not in ("dataset", "rater_id")
    ]
    if persona not in attributes:
        have = f"choose {', '.join(attributes)}" if attributes else "its raters have none"
        raise UsageError(
            Option("persona"), f" {persona}: not a rater attribute of the dataset; {have}"
        )
    # An attribute the raters view has (checked above), never a user's text.
    rows = session.execute(
        f'SELECT DISTINCT CAST("{persona}" AS VARCHAR) FROM raters '
        f'WHERE "{persona}" IS NOT NULL ORDER BY ALL'
    ).rows
    return {dataset: [str(value) for (value,) in rows]}


def rater_line(attribute: str, value: str) -> str:
    """The persona a scale prompt carries: "You are a rater whose gender is Woman."."""
    return f"You are a rater whose {attribute.replace('_', ' ')} is {value}."

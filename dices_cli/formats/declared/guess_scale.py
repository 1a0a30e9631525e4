"""A label's scale guessed from its values (`dices describe`): two numbers 0 and 1, or two
named values of which one is a known positive (yes, true, toxic ...), binary; numbers,
ordinal (whole numbers from the least to the greatest); named values in a known order,
ordinal; other names, nominal. A negative number beside non-negative ones, and codes such
as "na", are missing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from dices_cli.families.declaration import Value

# A label with more distinct values is not on a scale dices reads: it is stored as an answer.
MOST_LEVELS = 30
# Codes that say "no answer" among named values (compared lower-cased).
MISSING_CODES = frozenset({"na", "n/a", "nan", "null", "none", "?", "-", "missing"})

# Named values of a binary label that are its positive class (compared lower-cased).
POSITIVE_WORDS = frozenset(
    {"yes", "y", "true", "t", "1", "positive", "unsafe", "harmful", "toxic", "offensive"}
    | {"hateful", "hate", "abusive", "sexist", "racist", "sarcastic", "aggressive"}
)
# Named values in a known order, least first (compared lower-cased).
ORDERS = (
    ("no", "unsure", "yes"),
    ("no", "maybe", "yes"),
    ("low", "medium", "high"),
    ("none", "low", "medium", "high"),
    ("not at all", "slightly", "moderately", "very", "extremely"),
    ("not at all", "a little", "somewhat", "very", "extremely"),
    ("never", "rarely", "sometimes", "often", "always"),
    (
        "strongly disagree",
        "disagree",
        "somewhat disagree",
        "neutral",
        "somewhat agree",
        "agree",
        "strongly agree",
    ),
    ("strongly disagree", "disagree", "neutral", "agree", "strongly agree"),
)


@dataclass
class GuessedScale:
    """A label's scale as guessed; `suggested`: a positive class for the user to check."""

    kind: str
    values: list[Value]
    missing: list[Value] = field(default_factory=list)
    positive: list[Value] = field(default_factory=list)
    suggested: list[Value] = field(default_factory=list)  # a positive to check


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if value == value and abs(value) != float("inf") else None


def scale_of(
    label: str, cells: list[str], guessed: list[str], undecided: list[str]
) -> GuessedScale:
    missing_text = sorted(c for c in cells if c.lower() in MISSING_CODES)
    cells = [c for c in cells if c not in missing_text]
    numbers = [_number(c) for c in cells]
    if cells and all(n is not None for n in numbers):
        scale = _numeric_scale(label, [n for n in numbers if n is not None], guessed)
        scale.missing = [*scale.missing, *missing_text]
    else:
        scale = _named_scale(label, cells, guessed, undecided)
        scale.missing = list(missing_text)
    if scale.missing:
        guessed.append(f"{label}: missing codes {', '.join(map(str, scale.missing))}")
    return scale


def _numeric_scale(label: str, numbers: list[float], guessed: list[str]) -> GuessedScale:
    missing: list[Value] = []
    if any(n < 0 for n in numbers) and sum(n >= 0 for n in numbers) >= 2:
        missing = sorted({_plain(n) for n in numbers if n < 0})
        numbers = [n for n in numbers if n >= 0]
    whole = all(n.is_integer() for n in numbers)
    least, most = min(numbers), max(numbers)
    values: list[Value]
    if whole and most - least <= MOST_LEVELS:
        values = list(range(int(least), int(most) + 1))
    else:
        values = sorted({_plain(n) for n in numbers})
    if values == [0, 1]:
        guessed.append(f"{label}: binary (0 and 1; 1 the positive class)")
        return GuessedScale("binary", values, missing, [1])
    middle = (least + most) / 2
    upper: list[Value] = [v for v in values if isinstance(v, int | float) and v > middle]
    guessed.append(
        f"{label}: ordinal, {shown(values)} (its values, numbers); no positive class "
        "declared: the draft suggests the upper half"
    )
    return GuessedScale("ordinal", values, missing, suggested=upper)


def _named_scale(
    label: str, cells: list[str], guessed: list[str], undecided: list[str]
) -> GuessedScale:
    lowered = {c.lower(): c for c in cells}
    for order in ORDERS:
        if set(lowered) <= set(order) and len(lowered) >= 2 and set(lowered) != {"no", "yes"}:
            ordered: list[Value] = [lowered[v] for v in order if v in lowered]
            guessed.append(f"{label}: ordinal, {shown(ordered)} (a known order)")
            return GuessedScale("ordinal", ordered)
    names = sorted(cells)
    values: list[Value] = list(names)
    if len(names) == 2:
        positive: list[Value] = [v for v in names if v.lower() in POSITIVE_WORDS]
        if len(positive) == 1:
            guessed.append(f"{label}: binary, {shown(values)}; {positive[0]!r} positive")
            return GuessedScale("binary", values, positive=positive)
    undecided.append(
        f"{label}: nominal, {shown(values)}: no order or positive class is known for these "
        'values; for an ordinal scale list them in order with kind = "ordinal"'
    )
    return GuessedScale("nominal", values)


def _plain(number: float) -> int | float:
    return int(number) if number.is_integer() else number


def shown(values: Sequence[object]) -> str:
    shown = ", ".join(map(str, values[:8]))
    return shown + (f" ... ({len(values)} values)" if len(values) > 8 else "")

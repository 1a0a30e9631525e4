"""A negated answer is never read as itself, even where a word of the negation is a declared
answer (`It is not AA.` with `IS` declared): such a reply names two answers and is not read;
and a negated `Sure` or `Certain` is doubt, never the opposite verdict."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from dices_cli.judge.answers import NEGATIONS, WORD, read_answer

OPPOSITE = {"unsafe": "safe", "safe": "unsafe"}
NEGATED = ["not", "Not", "isn't", "never", "It is not", "it is not really", "Definitely not"]
# Words of the negations above and of the phrases around them: drawn as answers on purpose.
NEAR = ["it", "is", "IS", "It", "really", "definitely", "the", "answer", "because", "so"]


@pytest.mark.parametrize(
    ("answers", "text", "verdict"),
    [
        # the Hypothesis example: "IS" is a declared answer, so the reply names two answers
        ({"AA": "unsafe", "IS": "safe"}, "It is not AA.", None),
        ({"AA": "unsafe", "IS": "safe"}, "not AA.", "safe"),
        ({"AA": "unsafe", "IS": "safe"}, "It is AA.", None),
        ({"AA": "unsafe", "IS": "safe"}, "IS", "safe"),
        ({"AA": "safe", "IT": "unsafe"}, "It is not AA.", None),
        ({"AA": "unsafe", "BB": "safe"}, "It is not AA.", "safe"),
        ({"AA": "unsafe", "BB": "safe"}, "It is not BB.", "unsafe"),
        # a negated Sure is doubt, not the opposite of Sure
        ({"Sure": "unsafe", "No": "safe"}, "Not sure", None),
        ({"Sure": "unsafe", "No": "safe"}, "I'm not sure.", None),
        ({"Sure": "unsafe", "No": "safe"}, "Not sure, it depends on the reader.", None),
        ({"Certain": "unsafe", "Unclear": "safe"}, "Not certain", None),
        ({"Sure": "unsafe", "No": "safe"}, "Sure.", "unsafe"),
        ({"Sure": "unsafe", "No": "safe"}, "Not sure at all, the reply is odd in many ways.", None),
    ],
)
def test_a_reply_naming_an_answer_in_its_negation_is_not_read(
    answers: dict[str, str], text: str, verdict: str | None
) -> None:
    assert read_answer(answers, text) == verdict


def _words(text: str) -> set[str]:
    return set(WORD.findall(text.casefold()))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(NEAR)
        | st.text(alphabet=st.characters(categories=["Ll", "Lu", "Lo"]), min_size=2, max_size=4),
        min_size=3,
        max_size=3,
        unique_by=str.casefold,
    ).filter(lambda ws: all(w.casefold() not in NEGATIONS for w in ws)),
    st.booleans(),
    st.integers(0, 2),
    st.sampled_from(NEGATED),
    st.sampled_from([".", "", "!", ", because it is so."]),
)
@example(["AA", "IS", "x"], False, 0, "It is not", ".")
@example(["AA", "IS", "x"], False, 1, "It is not", ".")
@example(["sure", "BB", "x"], False, 0, "not", "")
def test_a_negated_answer_is_never_read_as_itself_nor_wrongly(
    words: list[str], unsure: bool, pick: int, negation: str, tail: str
) -> None:
    answers = {words[0]: "unsafe", words[1]: "safe"}
    if unsure:
        answers[words[2]] = "unsure"
    answer, verdict = sorted(answers.items())[pick % len(answers)]
    read = read_answer(answers, f"{negation} {answer}{tail}")
    assert read != verdict
    declared = set().union(*(_words(a) for a in answers))
    if _words(negation + tail) & declared or _words(answer) & {"sure", "certain"}:
        assert read in (None, OPPOSITE.get(verdict))
    else:
        assert read == OPPOSITE.get(verdict)

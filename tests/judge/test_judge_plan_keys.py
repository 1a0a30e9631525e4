"""The plan's cache keys are `call_key`'s, whatever the fields: a key made faster is the
same key, so every cached answer still answers its call."""

from __future__ import annotations

import pytest

from dices_cli.judge.plan import Item, Settings, plan
from dices_cli.judge.prompts import load_prompt
from dices_cli.store.judge_cache import KEY_FIELDS, call_key


@pytest.mark.parametrize("seed", [None, 7])
@pytest.mark.parametrize("temperature", [None, 0.7, 1e-7])
def test_each_planned_key_is_call_key_of_its_fields(
    seed: int | None, temperature: float | None
) -> None:
    settings = Settings(
        model='m\u00e9 "q"',
        prompt=load_prompt("dices-safety"),
        base_urls=("http://h\u00f6st.example:8080/v1?k=1", "http://127.0.0.1:9/v1"),
        samples=3,
        seed=seed,
        temperature=temperature,
        persona="rater_gender",
    )
    items = [Item("990", 12, "c", "r"), Item("350", "x\u2028y\\", "c", "r")]
    groups = {"990": ["Woman", "Man \u00e9"], "350": ["N/A"]}
    calls = plan(settings, items, groups)
    assert len(calls) == (2 + 1) * 3
    for call in calls:
        assert list(call.fields) == list(KEY_FIELDS)
        assert call.key == call_key(call.fields)
    assert len({call.key for call in calls}) == len(calls)


def test_a_plan_without_personas_keys_as_call_key() -> None:
    settings = Settings(model="m", prompt=load_prompt("dices-safety"))
    calls = plan(settings, [Item("990", 1, "c", "r")], {})
    assert [call.key for call in calls] == [call_key(calls[0].fields)]
    assert calls[0].fields["persona"] is None and calls[0].fields["sample"] == 0

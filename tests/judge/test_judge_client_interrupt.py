"""Ctrl-C while an answer is handed to the caller (cached, counted) lets that hand-off finish
before the run stops: the count of cached answers Ctrl-C reports is never one short."""

from __future__ import annotations

import os
import signal
from typing import Any

import pytest

from dices_cli.judge import client
from tests.drivers.judge_server import running


@pytest.mark.skipif(
    signal.getsignal(signal.SIGINT) is not signal.default_int_handler,
    reason="Ctrl-C is Python's own KeyboardInterrupt only with its default handler",
)
def test_ctrl_c_while_an_answer_is_handed_lets_it_finish() -> None:
    handed: list[Any] = []

    def on_reply(call: Any, _reply: client.Reply) -> None:
        if not handed:
            os.kill(os.getpid(), signal.SIGINT)  # as Ctrl-C in the middle of caching
        handed.append(call)

    calls = [
        (i, {"model": "m", "messages": [{"role": "user", "content": f"q{i}"}]}) for i in range(50)
    ]
    with running() as server:
        endpoint = client.Endpoint((server.base_url,), None, 30.0, 1, None, 0)
        with pytest.raises(KeyboardInterrupt):
            client.run_calls(endpoint, calls, on_reply, lambda _call, _attempt: None)
    assert handed[:1] == [0]  # the first answer's hand-off finished after the signal
    assert len(handed) < 50  # and the run stopped
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler

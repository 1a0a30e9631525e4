"""The judge's HTTP client on its own: connections kept and bounded under concurrency."""

from __future__ import annotations

from typing import Any

from dices_cli.judge import client
from tests.drivers.judge_server import answer_for, running


def test_the_client_keeps_at_most_concurrency_connections_and_reuses_them() -> None:
    replies: dict[int, str | None] = {}
    failures: list[Any] = []
    with running() as server:
        connections: list[tuple[str, int]] = []
        serve = server.process_request

        def counted(request: Any, address: tuple[str, int]) -> None:
            connections.append(address)
            serve(request, address)

        server.process_request = counted  # type: ignore[method-assign]
        endpoint = client.Endpoint((server.base_url,), None, 30.0, 4, None, 0)
        calls = [
            (i, {"model": "m", "messages": [{"role": "user", "content": f"q{i}"}]})
            for i in range(40)
        ]
        client.run_calls(
            endpoint,
            calls,
            lambda call, reply: replies.__setitem__(call, reply.answer),
            lambda call, attempt: failures.append((call, attempt)),
        )
        most_in_flight = server.max_in_flight
    assert failures == []
    assert replies == {i: answer_for(f"q{i}") for i in range(40)}
    assert 1 <= len(connections) <= 4
    assert most_in_flight <= 4

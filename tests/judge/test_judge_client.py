"""The judge's HTTP client on its own: connections kept and bounded under concurrency."""

from __future__ import annotations

from typing import Any

from dices_cli.judge import client
from tests.drivers.judge_server import JudgeServer, answer_for, running


def count_connections(server: JudgeServer) -> list[tuple[str, int]]:
    """The client addresses of the connections `server` accepts from now on."""
    connections: list[tuple[str, int]] = []
    serve = server.process_request

    def counted(request: Any, address: tuple[str, int]) -> None:
        connections.append(address)
        serve(request, address)

    server.process_request = counted  # type: ignore[method-assign]
    return connections


def send(servers: list[JudgeServer], concurrency: int, count: int) -> dict[int, str | None]:
    """`count` calls sent over `servers`; each call's answer (no failure allowed)."""
    replies: dict[int, str | None] = {}
    failures: list[Any] = []
    endpoint = client.Endpoint(tuple(s.base_url for s in servers), None, 30.0, concurrency, None, 0)
    calls = [
        (i, {"model": "m", "messages": [{"role": "user", "content": f"q{i}"}]})
        for i in range(count)
    ]
    client.run_calls(
        endpoint,
        calls,
        lambda call, reply: replies.__setitem__(call, reply.answer),
        lambda call, attempt: failures.append((call, attempt)),
    )
    assert failures == []
    return replies


def test_the_client_keeps_at_most_concurrency_connections_and_reuses_them() -> None:
    with running() as server:
        connections = count_connections(server)
        replies = send([server], 4, 40)
        most_in_flight = server.max_in_flight
    assert replies == {i: answer_for(f"q{i}") for i in range(40)}
    assert 1 <= len(connections) <= 4
    assert most_in_flight <= 4


def test_a_worker_keeps_its_connection_to_each_endpoint() -> None:
    with running() as first, running() as second:
        connections = [count_connections(first), count_connections(second)]
        replies = send([first, second], 4, 40)
        bodies = [len(first.bodies), len(second.bodies)]
    assert replies == {i: answer_for(f"q{i}") for i in range(40)}
    assert min(bodies) >= 10 and sum(bodies) == 40
    assert [len(c) <= 4 for c in connections] == [True, True]


def test_the_least_busy_url_is_picked_and_ties_take_turns() -> None:
    from dices_cli.judge.client import _Balance

    balance = _Balance(dict.fromkeys(["a", "b", "c"], 0))
    assert [balance.pick() for _ in range(6)] == ["b", "c", "a", "b", "c", "a"]
    balance.in_flight.update(a=2, b=1, c=1)
    assert [balance.pick() for _ in range(2)] == ["b", "c"]
    balance.in_flight.update(a=0, b=3, c=3)
    assert [balance.pick() for _ in range(3)] == ["a", "a", "a"]

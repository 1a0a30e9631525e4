"""The suite's own rules (tests/conftest.py): what is built once is built once, and every
query under a time limit runs under a memory cap."""

from __future__ import annotations

import resource
from pathlib import Path

import pytest

from dices_cli.output import collect
from dices_cli.queries.sandbox import run_sql
from dices_cli.store.datasets import Store
from tests.conftest import IN_PROCESS_CAP, built_once, memory_cap


def soft_limit() -> int:
    return resource.getrlimit(resource.RLIMIT_AS)[0]


def test_a_query_under_a_time_limit_runs_under_a_memory_cap(sample: Path) -> None:
    before = soft_limit()
    with run_sql(Store(sample), "350", "SELECT count(*) AS n FROM items", timeout=60) as result:
        during = soft_limit()
        assert collect(result).rows == [(40,)]
    assert during != resource.RLIM_INFINITY
    assert during < (before if before != resource.RLIM_INFINITY else 1 << 62)
    assert soft_limit() == before


def test_a_cap_inside_a_cap_leaves_the_outer_one_and_the_end_puts_the_limit_back() -> None:
    before = soft_limit()
    with memory_cap():
        outer = soft_limit()
        with memory_cap(IN_PROCESS_CAP * 2):
            assert soft_limit() == outer
        assert soft_limit() == outer
    assert outer != before
    assert soft_limit() == before


def test_what_is_built_once_is_built_once(tmp_path_factory: pytest.TempPathFactory) -> None:
    builds: list[Path] = []

    def build(directory: Path) -> None:
        builds.append(directory)
        (directory / "made").write_text("once")

    name = f"probe-{id(builds)}"
    first = built_once(tmp_path_factory, name, build)
    again = built_once(tmp_path_factory, name, build)
    assert first == again
    assert (first / "made").read_text() == "once"
    assert len(builds) == 1

"""The streaming pass over batches of every size: each entity's first row and each change
of its attributes are found whether they fall in one batch or in several
(dices_cli.formats.declared.stream keeps only those rows of a batch)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dices_cli.formats.declared import stream as streaming
from dices_cli.formats.declared.stream import stream
from dices_cli.read.source import open_source
from tests.formats.test_declared_stream import (
    BROKEN,
    ROWS,
    declared,
    ingested_as_the_whole_read_builds,
    write,
)

pytestmark = pytest.mark.usefixtures("registry_as_it_was")

# A rater (r1) and an item (a-1) seen again after other rows, an attribute given only on a
# later row (r1's age), and a rater whose rows alternate with others'.
LONGER = [
    *ROWS,
    "c,1,r1,new,3,no,2,,woman,24",
    "c,1,r2,new,3,yes,5,,man,31",
    "a,1,r3,hello,2,no,1,,,58",
]


@pytest.mark.parametrize("batch", [1, 2, 3, 1 << 20])
def test_every_batch_size_stores_what_the_whole_read_builds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, batch: int
) -> None:
    monkeypatch.setattr(streaming, "BATCH_ROWS", batch)
    store, result = ingested_as_the_whole_read_builds(tmp_path, LONGER)
    version = store.open("streamy")
    assert [row[0] for row in version.read("items").rows()] == ["a-1", "a-2", "b-1", "c-1"]
    assert result.stored.manifest["counts"] == {"items": 4, "raters": 3, "ratings": 9}


# A change of an attribute in the rows right after the first (one batch) or far after it.
CHANGES = {
    "a rater's attribute, next row": [ROWS[0], "a,2,r1,bye,1,no,3,,man,24", *ROWS[1:]],
    "a rater's attribute, last row": [*LONGER, "d,1,r1,x,1,no,3,,man,24"],
    "a rater's attribute given late, then another": [*LONGER, "d,1,r1,x,1,no,3,,woman,25"],
    "an item's attribute, last row": [*LONGER, "a,2,r2,bye,7,no,3,,man,31"],
    "a second rating, far apart": [*LONGER, "c,1,r1,new,3,no,2,,woman,24"],
}


@pytest.mark.parametrize("batch", [1, 2, 1 << 20])
@pytest.mark.parametrize("case", list(CHANGES))
def test_a_change_in_any_batch_is_left_to_the_whole_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str, batch: int
) -> None:
    monkeypatch.setattr(streaming, "BATCH_ROWS", batch)
    _, declaration = declared(tmp_path)
    data = write(tmp_path, CHANGES[case])
    with open_source(data) as source:
        assert stream(declaration, declaration.files[0], source, "csv", tmp_path) is None


@pytest.mark.parametrize("case", list(BROKEN))
def test_a_broken_record_in_a_later_batch_is_left_to_the_whole_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    monkeypatch.setattr(streaming, "BATCH_ROWS", 1)
    rows, _ = BROKEN[case]
    _, declaration = declared(tmp_path)
    data = write(tmp_path, rows)
    with open_source(data) as source:
        assert stream(declaration, declaration.files[0], source, "csv", tmp_path) is None

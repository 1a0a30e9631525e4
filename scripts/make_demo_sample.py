"""Rebuild the demo sample shipped in dices_cli/data from the replica files.

    python ../shared/data/make_replica.py 350 /tmp/dices_350.csv
    python ../shared/data/make_replica.py 990 /tmp/dices_990.csv
    python scripts/make_demo_sample.py /tmp/dices_350.csv /tmp/dices_990.csv

Keeps every row of the first conversations of each file (all their raters), byte for
byte, and gzips the result deterministically (no timestamp in the gzip header).
"""

from __future__ import annotations

import csv
import gzip
import io
import sys
from pathlib import Path

CONVERSATIONS = {"350": 40, "990": 80}
OUT = Path(__file__).resolve().parents[1] / "dices_cli" / "data"


def subset(source: Path, conversations: int) -> bytes:
    text = source.read_text(encoding="utf-8")
    reader = csv.reader(io.StringIO(text, newline=""))
    header = next(reader)
    item = header.index("item_id")
    out = io.StringIO(newline="")
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    seen: list[str] = []
    for row in reader:
        if row[item] not in seen:
            if len(seen) == conversations:
                continue
            seen.append(row[item])
        writer.writerow(row)
    return out.getvalue().encode("utf-8")


def main() -> None:
    for source in map(Path, sys.argv[1:]):
        name = "350" if "350" in source.name else "990"
        target = OUT / f"dices_{name}_sample.csv.gz"
        target.write_bytes(gzip.compress(subset(source, CONVERSATIONS[name]), mtime=0))
        print(f"wrote {target} ({target.stat().st_size:,} bytes)", file=sys.stderr)


if __name__ == "__main__":
    main()

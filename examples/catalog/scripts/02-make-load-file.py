"""Write the CSV file that catalog entry 02 loads: orders, one line each, the same every time.

    python examples/catalog/scripts/02-make-load-file.py ROWS [OUT]

OUT defaults to ``02-orders.csv`` beside the experiment file (``examples/catalog/``), where its
``\\copy`` looks for it. A million rows make about 82 MB. The rows come from a seeded generator,
so two machines load the same bytes.
"""

from __future__ import annotations

import random
import sys
from datetime import date, timedelta
from pathlib import Path

STATUSES = ("new", "paid", "shipped", "delivered", "returned")
WORDS = (
    *("priority", "gift", "fragile", "express", "standard"),
    *("bulk", "repeat", "customer", "weekend", "warehouse"),
)


def write(rows: int, out: Path) -> int:
    """Write ``rows`` orders with a header line; return the bytes written."""
    rng = random.Random(2016)
    start = date(2016, 1, 1)
    with out.open("w", encoding="ascii", newline="\n") as f:
        f.write("order_id,customer_id,order_date,status,amount,comment\n")
        for i in range(1, rows + 1):
            day = start + timedelta(days=rng.randrange(3650))
            comment = " ".join(rng.choices(WORDS, k=rng.randrange(3, 9)))
            f.write(
                f"{i},{rng.randrange(1, 200_000)},{day.isoformat()},{rng.choice(STATUSES)},"
                f"{rng.randrange(100, 1_000_000) / 100:.2f},{comment}\n"
            )
        return f.tell()


def main(argv: list[str]) -> None:
    if len(argv) not in (2, 3) or not argv[1].isdigit():
        sys.exit(f"usage: {argv[0]} ROWS [OUT]")
    beside_the_experiment = Path(__file__).resolve().parent.parent / "02-orders.csv"
    out = Path(argv[2]) if len(argv) == 3 else beside_the_experiment
    size = write(int(argv[1]), out)
    print(f"{out}: {int(argv[1]):,} rows, {size:,} bytes")


if __name__ == "__main__":
    main(sys.argv)

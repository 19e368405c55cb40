"""Write the parent sample set of catalog entry 7 ("Wanna bet?", seed article 002).

The article draws 900 values from an exponential distribution with mean 5.0 in Mathematica and
splits them, in order, into 30 child sets of 30 values: it starts at the sixth value and joins
the set to itself so that the last child set wraps round to the beginning. It does not list
the 900 values (they are in its Mathematica notebook, which is gone), only the 30 child means.
This script draws a set with the same parameters from a fixed seed, so anyone gets the same
file, and writes one CSV row per value with the child set it belongs to:

    python 07-generate-exponential.py > 07-exponential-900.csv
    python 07-generate-exponential.py --values 8100 --sets 90 > exponential-8100.csv

The second line is the article's "scale it up" step (8100 values, 90 child sets of 90).
The seed (2012, the article's year) was fixed before looking at the data, not searched for.
"""

from __future__ import annotations

import argparse
import csv
import sys

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--values", type=int, default=900, help="size of the parent set")
    parser.add_argument("--sets", type=int, default=30, help="child sets (values must divide)")
    parser.add_argument("--mean", type=float, default=5.0, help="mean of the exponential")
    parser.add_argument("--start", type=int, default=6, help="1-based start of the first set")
    parser.add_argument("--seed", type=int, default=2012)
    args = parser.parse_args()
    if args.values % args.sets:
        parser.error(f"--values {args.values} is not a multiple of --sets {args.sets}")
    size = args.values // args.sets
    values = np.random.default_rng(args.seed).exponential(args.mean, args.values)

    out = csv.writer(sys.stdout, lineterminator="\n")
    out.writerow(["position", "child_set", "condition", "value"])
    # Position p (1-based) belongs to the child set that reads it when the sets are cut in
    # order from the start position, wrapping round the end: every value is in exactly one set.
    for p in range(1, args.values + 1):
        child = ((p - args.start) % args.values) // size + 1
        out.writerow([p, child, f"exponential-{args.values}", f"{values[p - 1]:.6f}"])


if __name__ == "__main__":
    main()

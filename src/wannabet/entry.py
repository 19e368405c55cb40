"""The console entry point.

Importing the command line pulls in DuckDB, NumPy and friends, which takes a moment; a Ctrl-C
in that moment exits as quietly as one later on.
"""

from __future__ import annotations

import sys


def main() -> None:
    try:
        from wannabet.cli import main as cli_main
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        raise SystemExit(130) from None
    cli_main()

"""What every format importer shares: conditions from options, content hashes, line errors.

Each importer reads its files into an :class:`~wannabet.store.ImportBatch` and hands it to
:meth:`~wannabet.store.Store.import_batch`, which writes it in one transaction.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from wannabet.errors import ImportError_


@dataclass(frozen=True, slots=True)
class ConditionRule:
    """Where the condition of an imported file comes from.

    ``name``: one condition for every file. ``pattern``: a regular expression searched in the
    file's name; its group ``condition`` (or its first group, or the whole match) is the label.
    Neither: ``default`` (the format's own, e.g. hyperfine's command names).
    """

    name: str | None = None
    pattern: str | None = None
    default: str = "baseline"

    def __post_init__(self) -> None:
        if self.name is not None and self.pattern is not None:
            raise ImportError_(
                "command line: give --condition or --condition-from-filename, not both"
            )
        if self.pattern is not None:
            try:
                re.compile(self.pattern)
            except re.error as exc:
                raise ImportError_(
                    f"command line: --condition-from-filename {self.pattern!r} is not a regular"
                    f" expression: {exc}"
                ) from None

    @property
    def explicit(self) -> bool:
        return self.name is not None or self.pattern is not None

    def label(self, file: Path) -> str:
        if self.name is not None:
            return self.name
        if self.pattern is None:
            return self.default
        match = re.search(self.pattern, file.name)
        if match is None:
            raise ImportError_(
                f"{file}: --condition-from-filename {self.pattern!r} does not match the file"
                " name; expected a pattern that finds the condition in every file's name"
            )
        if "condition" in match.re.groupindex:
            found = match.group("condition")
        elif match.re.groups:
            found = match.group(1)
        else:
            found = match.group(0)
        if not found:
            raise ImportError_(
                f"{file}: --condition-from-filename {self.pattern!r} matched an empty condition"
            )
        return str(found)


def input_files(paths: Sequence[str | Path]) -> list[Path]:
    """The files named on the command line; at least one."""
    files = [Path(p) for p in paths]
    if not files:
        raise ImportError_("command line: no files to import")
    return files


def label_index(labels: list[str], label: str) -> int:
    """The condition id of ``label``, numbering conditions in order of first appearance."""
    if label not in labels:
        labels.append(label)
    return labels.index(label)


def sha256(file: Path) -> str:
    digest = hashlib.sha256()
    with file.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def check_file(file: Path) -> None:
    if not file.is_file():
        raise ImportError_(f"{file}: no such file")
    if file.stat().st_size == 0:
        raise ImportError_(f"{file}: the file is empty")


def read_text(file: Path) -> list[str]:
    """The file's lines (for the small, text formats: summaries, XML, JSON)."""
    check_file(file)
    try:
        return file.read_text(encoding="utf-8", errors="strict").splitlines()
    except UnicodeDecodeError as exc:
        line = file.read_bytes()[: exc.start].count(b"\n") + 1
        raise ImportError_(f"{file}:{line}: not UTF-8 text; expected a text file") from None


def bad(file: Path, line: int | None, expected: str) -> ImportError_:
    """The one-line error every importer raises: file, line and what was expected."""
    where = f"{file}:{line}" if line is not None else str(file)
    return ImportError_(f"{where}: {expected}")

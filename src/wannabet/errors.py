"""The exceptions wannabet raises, and the one place they are defined.

::

    WannabetError
    ├── SpecError            the experiment file is wrong (names file, key, line and the fix)
    ├── TargetError          the database under test misbehaved
    │   ├── ConnectError     cannot connect or authenticate
    │   └── QueryError       a statement failed
    ├── StoreError           the results file cannot be read or written
    ├── ImportError_         a foreign result file is malformed
    ├── AnalysisError        the data cannot answer the question asked
    ├── MissingExtra         an optional part of wannabet is not installed
    ├── ProfileError         profiles were asked for and perf cannot record them here
    └── Interrupted          the user pressed Ctrl-C; finished samples are kept

Every message is one line a user can act on. Driver errors are translated into these at one
boundary (``raise ConnectError(...) from exc``), and messages never carry a password: see
:func:`wannabet.targets.redact`.
"""

from __future__ import annotations


class WannabetError(Exception):
    """Base of every error wannabet reports to a user."""

    exit_code = 1


class SpecError(WannabetError):
    """The experiment file is invalid."""

    exit_code = 2

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        key: str | None = None,
        line: int | None = None,
    ) -> None:
        self.file = file
        self.key = key
        self.line = line
        self.reason = message
        where = file or "<experiment>"
        if line is not None:
            where += f":{line}"
        if key:
            where += f": {key}"
        super().__init__(f"{where}: {message}")


class HookError(WannabetError):
    """A shell hook of the experiment file failed: a non-zero exit or its time limit."""

    exit_code = 6


class TargetError(WannabetError):
    """The database under test failed."""

    exit_code = 3

    def __init__(self, message: str, *, code: str | None = None) -> None:
        self.code = code
        super().__init__(message)


class ConnectError(TargetError):
    """The target cannot be reached or refused the credentials."""


class QueryError(TargetError):
    """A statement sent to the target failed.

    ``index`` numbers it within a batch, from 0. When the database refused to prepare a
    statement of the workload, ``statement`` numbers it within its transaction's script (from
    1), ``transaction`` names that transaction and ``reason`` is the database's message.
    """

    index: int | None = None

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        index: int | None = None,
        statement: int | None = None,
        transaction: str | None = None,
        reason: str | None = None,
    ) -> None:
        super().__init__(message, code=code)
        self.index = index
        self.statement = statement
        self.transaction = transaction
        self.reason = reason


class StoreError(WannabetError):
    """The results store cannot be opened, read or written."""

    exit_code = 4


class UnknownRun(StoreError):
    """A run id the results file does not hold: a command-line mistake (exit 2)."""

    exit_code = 2


class ImportError_(WannabetError):
    """A foreign result file is malformed."""

    exit_code = 2


class AnalysisError(WannabetError):
    """The data cannot answer the question that was asked."""

    exit_code = 5


class MissingExtra(WannabetError):
    """A feature needs an optional part of wannabet (an extra) that is not installed: not
    the data's fault, so not AnalysisError's code."""

    exit_code = 7

    def __init__(self, what: str, extra: str, missing: str | None = None) -> None:
        self.extra = extra
        gone = f" (missing: {missing})" if missing else ""
        super().__init__(
            f"{what} needs wannabet's optional '{extra}' part{gone}; install it with"
            f" pip install 'wannabet[{extra}]', or from a clone of wannabet's source with"
            f" pip install '.[{extra}]'"
        )


class ProfileError(WannabetError):
    """``[profile] perf`` or ``--profile`` was asked for, and ``perf`` cannot record the
    server here (not installed, not permitted, a server on another host). Raised before the
    run starts, never in the middle of it."""

    exit_code = 8


class Interrupted(WannabetError):
    """The user (Ctrl-C) or a signal (SIGTERM, SIGHUP) stopped the run; finished samples are
    kept. The exit code is 128 plus the signal's number: 130, 143 or 129."""

    exit_code = 130

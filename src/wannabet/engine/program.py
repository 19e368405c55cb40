"""A workload compiled for the engine: scripts as plain tuples, variables as numbered slots.

The native engine converts these tuples into its own types once per sample, so nothing here
touches the per-transaction path.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from wannabet.model import (
    PREDEFINED_VARIABLES,
    BinOp,
    BitNot,
    BoolLit,
    Call,
    Case,
    Command,
    CopyCommand,
    Expr,
    FloatLit,
    IntLit,
    Is,
    Logic,
    Neg,
    Not,
    NullLit,
    PipelineCommand,
    PlaceholderStyle,
    SetCommand,
    SleepCommand,
    SqlCommand,
    VarRef,
    Workload,
)

#: the name of the slot a transaction's result goes to (not a variable name a script can use)
RESULT_SLOT = "(result)"


@dataclass(frozen=True, slots=True)
class Program:
    #: (name, weight, commands, result slot or -1)
    transactions: tuple[tuple[str, int, tuple[Any, ...], int], ...]
    slots: tuple[int | float | None, ...]
    client_id_slot: int
    slot_names: tuple[str, ...]
    #: slots that only a ``\\gset``/``\\aset`` result column can set
    captured_slots: tuple[int, ...] = ()
    default_seed_slot: int = -1

    @property
    def transaction_names(self) -> tuple[str, ...]:
        return tuple(name for name, _, _, _ in self.transactions)


def compile_program(workload: Workload, style: PlaceholderStyle) -> Program:
    initial: dict[str, int | float | None] = dict(PREDEFINED_VARIABLES)
    initial.update(dict(workload.variables))
    names = list(initial)

    def slot(name: str) -> int:
        if name not in names:
            names.append(name)
            initial[name] = None
        return names.index(name)

    def expr(e: Expr) -> tuple[Any, ...]:
        match e:
            case IntLit(value):
                return ("int", value)
            case FloatLit(value):
                return ("float", value)
            case BoolLit(value):
                return ("bool", value)
            case NullLit():
                return ("null",)
            case VarRef(name):
                return ("var", slot(name))
            case Neg(operand):
                return ("neg", expr(operand))
            case BitNot(operand):
                return ("bitnot", expr(operand))
            case Not(operand):
                return ("not", expr(operand))
            case Is(operand, value):
                return ("is", expr(operand), value)
            case BinOp(op, left, right):
                return ("op", op, expr(left), expr(right))
            case Logic(op, left, right):
                return (op, expr(left), expr(right))
            case Case(arms, otherwise):
                return (
                    "case",
                    [(expr(c), expr(v)) for c, v in arms],
                    None if otherwise is None else expr(otherwise),
                )
            case Call(function, args):
                return ("call", function, [expr(a) for a in args])
        raise TypeError(f"not an expression: {e!r}")

    def commands(script_commands: tuple[Command, ...]) -> tuple[tuple[Any, ...], ...]:
        out: list[list[Any]] = []
        # Per open \if: the jump to patch when its condition is false, and the jumps that
        # end its taken branches (all go to its \endif).
        branches: list[tuple[int | None, list[int]]] = []
        for c in script_commands:
            if isinstance(c, SetCommand):
                out.append(["set", slot(c.variable), expr(c.expr)])
            elif isinstance(c, SleepCommand):
                out.append(["sleep", expr(c.expr), c.unit_ns])
            elif isinstance(c, SqlCommand):
                sql, params = c.render(style)
                command: list[Any] = [
                    "sql",
                    sql,
                    [slot(p) for p in params],
                    list(c.parts),
                    c.capture,
                ]
                if c.compound:
                    # No result slot; sent as one query, never prepared; its statements.
                    command += [-1, True, list(c.statements)]
                out.append(command)
            elif isinstance(c, PipelineCommand):
                out.append(["pipeline", c.kind])
            elif isinstance(c, CopyCommand):
                series = None if c.series is None else (expr(c.series[0]), expr(c.series[1]))
                spec = (c.table, list(c.columns), c.path, list(c.options), c.options_sql)
                out.append(["copy", spec, series])
            elif c.kind == "if":
                assert c.expr is not None
                branches.append((len(out), []))
                out.append(["jump_unless", expr(c.expr), -1])
            else:
                pending, ends = branches[-1]
                if c.kind in ("elif", "else"):
                    ends.append(len(out))
                    out.append(["jump", -1])
                if pending is not None:
                    out[pending][2] = len(out)
                if c.kind == "elif":
                    assert c.expr is not None
                    branches[-1] = (len(out), ends)
                    out.append(["jump_unless", expr(c.expr), -1])
                elif c.kind == "else":
                    branches[-1] = (None, ends)
                else:
                    for end in ends:
                        out[end][1] = len(out)
                    branches.pop()
        return tuple(tuple(command) for command in out)

    transactions = []
    captured: set[str] = set()
    for t in workload.transactions:
        compiled = commands(t.script.commands)
        result = -1
        if t.result:
            # The result is the first column of the script's last statement, put in a slot
            # no script can name.
            result = slot(RESULT_SLOT)
            last = max(i for i, c in enumerate(compiled) if c[0] == "sql")
            compiled = (*compiled[:last], (*compiled[last], result), *compiled[last + 1 :])
        transactions.append((t.name, t.weight, compiled, result))
        captured.update(t.script.captured_variables)
    return Program(
        transactions=tuple(transactions),
        slots=tuple(initial[n] for n in names),
        client_id_slot=names.index("client_id"),
        slot_names=tuple(names),
        captured_slots=tuple(sorted(names.index(n) for n in captured if n in names)),
        # A default_seed the experiment sets (pgbench -D default_seed=...) is kept.
        default_seed_slot=-1
        if "default_seed" in dict(workload.variables)
        else names.index("default_seed"),
    )

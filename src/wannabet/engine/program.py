"""A workload compiled for the engine: scripts as plain tuples, variables as numbered slots.

The native engine converts these tuples into its own types once per sample, so nothing here
touches the per-transaction path.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from wannabet.model import (
    PREDEFINED_VARIABLES,
    BinOp,
    Call,
    Expr,
    FloatLit,
    IntLit,
    Neg,
    SetCommand,
    SleepCommand,
    SqlCommand,
    VarRef,
    Workload,
)


@dataclass(frozen=True, slots=True)
class Program:
    transactions: tuple[tuple[str, int, tuple[Any, ...]], ...]  # (name, weight, commands)
    slots: tuple[int | float | None, ...]
    client_id_slot: int
    slot_names: tuple[str, ...]

    @property
    def transaction_names(self) -> tuple[str, ...]:
        return tuple(name for name, _, _ in self.transactions)


def compile_program(workload: Workload, style: Literal["dollar", "qmark"]) -> Program:
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
            case VarRef(name):
                return ("var", slot(name))
            case Neg(operand):
                return ("neg", expr(operand))
            case BinOp(op, left, right):
                return ("op", op, expr(left), expr(right))
            case Call(function, args):
                return ("call", function, [expr(a) for a in args])
        raise TypeError(f"not an expression: {e!r}")

    transactions = []
    for t in workload.transactions:
        commands: list[tuple[Any, ...]] = []
        for c in t.script.commands:
            if isinstance(c, SetCommand):
                commands.append(("set", slot(c.variable), expr(c.expr)))
            elif isinstance(c, SleepCommand):
                commands.append(("sleep", expr(c.expr), c.unit_ns))
            elif isinstance(c, SqlCommand):
                sql, params = c.render(style)
                commands.append(("sql", sql, [slot(p) for p in params]))
        transactions.append((t.name, t.weight, tuple(commands)))
    return Program(
        transactions=tuple(transactions),
        slots=tuple(initial[n] for n in names),
        client_id_slot=names.index("client_id"),
        slot_names=tuple(names),
    )

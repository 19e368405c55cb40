"""Factors → conditions, and conditions → the order samples run in.

Randomized complete blocks are the default: each block runs every condition once, in an order
drawn from the experiment's seed, so drift over time (caches warming, checkpoints, a neighbour on a
shared host) spreads over all conditions instead of biasing one.
"""

from __future__ import annotations

import dataclasses
import itertools
import random

from wannabet.model import (
    PREDEFINED_VARIABLES,
    Condition,
    Factor,
    Order,
    ScheduledSample,
    SqlDialect,
    Transaction,
    Workload,
)
from wannabet.script import (
    PLACEHOLDER,
    ScriptError,
    fill,
    parse_script,
    parse_script_for_any_target,
)


class PlaceholderError(ValueError):
    """A script is wrong once a condition's levels are put in for its ``{factor}`` placeholders."""

    def __init__(self, transaction: Transaction, condition: str, error: ScriptError) -> None:
        super().__init__(f"with {condition}: {error}")
        self.transaction = transaction
        self.line = error.line


def with_placeholders(
    conditions: tuple[Condition, ...], workload: Workload
) -> tuple[Condition, ...]:
    """Each condition whose transactions use ``{factor}`` placeholders, with its own copy of
    them, the levels put in and parsed again (a factor of think time, a table name, a hint).

    Raises
    ------
    PlaceholderError
        A script no longer parses once a condition's levels are in.
    """
    known = set(PREDEFINED_VARIABLES) | {name for name, _ in workload.variables}
    out = []
    for condition in conditions:
        levels = dict(condition.levels)
        ran = condition.transactions or workload.transactions
        if not any(set(PLACEHOLDER.findall(t.script.text)) & levels.keys() for t in ran):
            out.append(condition)
            continue
        filled = []
        for t in ran:
            text = fill(t.script.text, levels)
            if text == t.script.text:
                filled.append(t)
                continue
            try:
                script = parse_script_for_any_target(text, known_variables=known)
            except ScriptError as exc:
                raise PlaceholderError(t, condition.label, exc) from None
            filled.append(dataclasses.replace(t, script=script))
        out.append(dataclasses.replace(condition, transactions=tuple(filled)))
    return tuple(out)


def lexed_as(condition: Condition, workload: Workload, dialect: SqlDialect) -> Condition:
    """``condition`` with the scripts it runs read as ``dialect`` lexes SQL.

    The experiment file is read before any target is known, with the standard rules (or
    MySQL's, for a script only they read: :func:`wannabet.script.parse_script_for_any_target`);
    a target must see its statements end, and its placeholders found, where its server will
    (MySQL: ``\\'`` inside a string, backticks, ``#`` comments). The condition's levels are
    already in its scripts (:func:`with_placeholders`).

    Raises
    ------
    PlaceholderError
        A script does not parse under ``dialect``.
    """
    ran = condition.transactions or workload.transactions
    if all(t.script.dialect == dialect for t in ran):
        return condition
    known = set(PREDEFINED_VARIABLES) | {name for name, _ in workload.variables}
    lexed = []
    for t in ran:
        if t.script.dialect == dialect:
            lexed.append(t)
            continue
        try:
            script = parse_script(t.script.text, known_variables=known, dialect=dialect)
        except ScriptError as exc:
            where = f"{condition.label}, as a {dialect} target reads SQL"
            raise PlaceholderError(t, where, exc) from None
        lexed.append(dataclasses.replace(t, script=script))
    return dataclasses.replace(condition, transactions=tuple(lexed))


def conditions(factors: tuple[Factor, ...]) -> tuple[Condition, ...]:
    """The cartesian product of the factors' levels; one baseline condition without factors.

    Each level's settings apply (:meth:`Factor.level_settings`); the experiment file allows at
    most one factor to set each of sessions, rate, transactions, protocol, fetch size and
    target (target parameters of several factors add up).
    """
    if not factors:
        return (Condition(levels=()),)
    out = []
    for combo in itertools.product(*(f.levels for f in factors)):
        chosen = [f.level_settings(level) for f, level in zip(factors, combo, strict=True)]
        out.append(
            Condition(
                levels=tuple((f.name, level) for f, level in zip(factors, combo, strict=True)),
                session_sql=tuple(sql for c in chosen for sql in c.session_sql),
                system_sql=tuple(sql for c in chosen for sql in c.system_sql),
                sessions=next((c.sessions for c in chosen if c.sessions is not None), None),
                rate=next((c.rate for c in chosen if c.rate is not None), None),
                transactions=next(
                    (c.transactions for c in chosen if c.transactions is not None), None
                ),
                protocol=next((c.protocol for c in chosen if c.protocol is not None), None),
                held=tuple(h for c in chosen for h in c.held),
                background=next((c.background for c in chosen if c.background), None),
                fetch_size=next((c.fetch_size for c in chosen if c.fetch_size is not None), None),
                target=next((c.target for c in chosen if c.target is not None), None),
                target_params=tuple(p for c in chosen for p in c.target_params),
                system_shell=tuple(cmd for c in chosen for cmd in c.system_shell),
            )
        )
    return tuple(out)


def schedule(
    n_conditions: int, samples: int, order: Order, seed: int
) -> tuple[ScheduledSample, ...]:
    """The run order of ``samples`` samples per condition.

    ``randomized-blocks`` shuffles every block with ``random.Random(seed)``, ``blocks`` repeats the
    declared order in every block, and ``sequential`` runs all samples of one condition before the
    next (only sensible when conditions cannot be switched back and forth).
    """
    rng = random.Random(seed)
    plan: list[ScheduledSample] = []
    if order == "sequential":
        for c in range(n_conditions):
            for block in range(samples):
                plan.append(ScheduledSample(len(plan), block, c))
        return tuple(plan)
    for block in range(samples):
        indices = list(range(n_conditions))
        if order == "randomized-blocks":
            rng.shuffle(indices)
        for c in indices:
            plan.append(ScheduledSample(len(plan), block, c))
    return tuple(plan)

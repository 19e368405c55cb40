"""What each table and index did per condition: the per-sample deltas the PostgreSQL sampler
stored (``tables``, ``indexes``), as means per sample, with the shares that explain a change
(HOT updates among updates, buffer hits among block reads). Pure functions."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

#: the counters shown per table, in order
TABLE_COUNTERS = (
    "seq_scan",
    "seq_tup_read",
    "idx_scan",
    "idx_tup_fetch",
    "n_tup_ins",
    "n_tup_upd",
    "n_tup_hot_upd",
    "n_tup_del",
    "heap_blks_hit",
    "heap_blks_read",
    "idx_blks_hit",
    "idx_blks_read",
)
#: the counters shown per index
INDEX_COUNTERS = ("idx_scan", "idx_tup_read", "idx_tup_fetch", "idx_blks_hit", "idx_blks_read")


@dataclass(frozen=True, slots=True)
class RelationActivity:
    condition: str
    relation: str
    kind: Literal["table", "index"]
    #: an index's table
    table: str | None
    #: the condition's samples with statistics, over which the means are taken (a sample that
    #: did not use the relation counts as zero)
    samples: int
    #: mean per sample of each counter
    per_sample: Mapping[str, float]
    #: HOT updates among updates (tables that were updated)
    hot_share: float | None
    #: buffer hits among the blocks the relation needed (heap and indexes, or the index's)
    hit_share: float | None
    #: dead tuples after the sample, the mean over the samples that used the table
    dead_tuples: float | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "condition": self.condition,
            "relation": self.relation,
            "kind": self.kind,
            "table": self.table,
            "samples": self.samples,
            "per_sample": dict(self.per_sample),
            "hot_share": self.hot_share,
            "hit_share": self.hit_share,
            "dead_tuples": self.dead_tuples,
        }


def relation_activity(
    by_condition: Mapping[str, Sequence[Mapping[str, Any]]],
) -> list[RelationActivity]:
    """Per condition (in its order), the tables then the indexes its samples used, each most
    active first. ``by_condition``: statistics documents per condition
    (:func:`wannabet.analysis.unit_of_work.statistics_by_condition`)."""
    out: list[RelationActivity] = []
    for condition, docs in by_condition.items():
        sections = [d.get("postgres") or {} for d in docs]
        n = len(sections)
        for kind, key, counters in (
            ("table", "tables", TABLE_COUNTERS),
            ("index", "indexes", INDEX_COUNTERS),
        ):
            sums: dict[str, dict[str, float]] = {}
            dead: dict[str, list[float]] = {}
            tables: dict[str, str | None] = {}
            for section in sections:
                for row in section.get(key) or ():
                    name = str(row["relation"])
                    total = sums.setdefault(name, dict.fromkeys(counters, 0.0))
                    for c in counters:
                        total[c] += float(row.get(c) or 0)
                    if row.get("n_dead_tup") is not None:
                        dead.setdefault(name, []).append(float(row["n_dead_tup"]))
                    tables[name] = row.get("table")
            ranked = sorted(sums.items(), key=lambda kv: -_activity(kv[1]))
            for name, total in ranked:
                mean = {c: v / n for c, v in total.items()}
                out.append(
                    RelationActivity(
                        condition=condition,
                        relation=name,
                        kind=kind,  # type: ignore[arg-type]
                        table=tables.get(name),
                        samples=n,
                        per_sample=mean,
                        hot_share=_share(total.get("n_tup_hot_upd"), total.get("n_tup_upd")),
                        hit_share=_hit_share(total),
                        dead_tuples=(sum(dead[name]) / len(dead[name])) if name in dead else None,
                    )
                )
    return out


def _activity(total: Mapping[str, float]) -> float:
    return sum(
        total.get(k, 0.0)
        for k in ("seq_scan", "idx_scan", "n_tup_ins", "n_tup_upd", "n_tup_del", "idx_tup_read")
    )


def _share(part: float | None, whole: float | None) -> float | None:
    if part is None or not whole:
        return None
    return part / whole


def _hit_share(total: Mapping[str, float]) -> float | None:
    hits = total.get("heap_blks_hit", 0.0) + total.get("idx_blks_hit", 0.0)
    reads = total.get("heap_blks_read", 0.0) + total.get("idx_blks_read", 0.0)
    return _share(hits, hits + reads)

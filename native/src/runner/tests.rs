//! Unit tests of the runner: the latency histogram and whole samples on SQLite.

use std::time::Duration;

use super::progress::{bucket_of, bucket_value, BUCKETS};
use super::sample::{Rec, ThreadOut};
use super::*;
use crate::backend::{self, Session, Status, Target, WithSession};
use crate::script::{Expr, Value};

#[test]
fn histogram_buckets() {
    let mut last = 0;
    for v in [
        0u64,
        1,
        15,
        16,
        17,
        31,
        32,
        1000,
        1_000_000,
        123_456_789,
        u64::MAX,
    ] {
        let b = bucket_of(v);
        assert!(b >= last && b < BUCKETS, "{v} -> {b}");
        last = b;
        let mid = bucket_value(b);
        if v > 0 {
            assert!((mid - v as f64).abs() / (v as f64) < 0.07, "{v}: {mid}");
        }
    }
}

fn plan(sessions: usize, sql: Vec<(&str, usize)>, commands: Vec<Command>) -> Plan {
    Plan {
        transactions: vec![Transaction {
            name: "t".into(),
            weight: 1,
            commands,
            result_slot: None,
        }],
        sqls: sql
            .into_iter()
            .enumerate()
            .map(|(i, (t, n))| SqlText {
                text: t.into(),
                n_params: n,
                parts: vec![String::new(); n + 1],
                origin: (0, i + 1),
                compound: false,
                statements: Vec::new(),
            })
            .collect(),
        session_sql: vec![],
        slots: vec![Value::Unset; 2],
        slot_names: vec!["x".into(), "client_id".into()],
        captured_slots: vec![],
        captures: vec![],
        copies: vec![],
        protocol: Protocol::Prepared,
        fetch_size: 0,
        client_id_slot: Some(1),
        first_session: 0,
        default_seed_slot: None,
        sessions,
        duration_ns: 0,
        max_transactions: 500,
        seed: 1,
        abort_on_error: false,
        max_tries: 1,
        rate: 0.0,
        warmup_ns: 0,
        record: 1.0,
        max_rows: 0,
        reconnect_ns: 0,
    }
}

fn rec(start: i64) -> Rec {
    Rec {
        intended: start,
        start,
        end: start + 1,
        error_code: -1,
        retries: 0,
        txn: 0,
        status: 0,
    }
}

#[test]
fn client_id_counts_from_the_first_session() {
    // A load generator's sessions follow the earlier generators' ones: its session 2, with
    // 5 sessions before it, is client 7.
    let mut p = plan(3, vec![("SELECT 1", 0)], vec![]);
    for (first, expect) in [(0u64, 2i64), (5, 7)] {
        p.first_session = first;
        let state = super::session::LoopState::new(
            &p,
            2,
            super::gate::Anchor::now(),
            &mut ThreadOut::default(),
        );
        assert!(
            matches!(state.slots[1], Value::Int(v) if v == expect),
            "first {first}"
        );
    }
}

#[test]
fn reservoir_keeps_a_uniform_subset_in_start_order() {
    // 200,000 rows offered to a reservoir of 1,000 (beyond one chunk, so the indexing
    // across chunks is exercised), repeated: every decile of the offered rows gets about a
    // tenth of the kept ones, and the kept rows come back in start order, each once.
    let cap = 1000;
    let mut per_decile = [0u64; 10];
    for seed in 0..20u64 {
        let mut out = ThreadOut::default();
        out.chunks.push(Vec::with_capacity(100));
        let mut rng = crate::script::Prng::new(seed, 0, 3);
        for i in 0..200_000 {
            out.keep(rec(i), cap, &mut rng);
        }
        out.restore_order(cap);
        let kept: Vec<i64> = out.chunks.iter().flatten().map(|r| r.start).collect();
        assert_eq!(kept.len(), cap);
        assert!(kept.windows(2).all(|w| w[0] < w[1]));
        for s in kept {
            per_decile[(s / 20_000) as usize] += 1;
        }
    }
    // 2,000 expected per decile; a binomial sd of about 42, so 5 sd is 210.
    for (d, n) in per_decile.iter().enumerate() {
        assert!((*n as i64 - 2000).abs() < 210, "decile {d}: {n}");
    }
    // Below the cap every row is kept, in order, untouched.
    let mut out = ThreadOut::default();
    out.chunks.push(Vec::with_capacity(16));
    let mut rng = crate::script::Prng::new(1, 0, 3);
    for i in 0..500 {
        out.keep(rec(i), cap, &mut rng);
    }
    out.restore_order(cap);
    let kept: Vec<i64> = out.chunks.iter().flatten().map(|r| r.start).collect();
    assert_eq!(kept, (0..500).collect::<Vec<_>>());
}

#[test]
fn sqlite_sample() {
    let dir = std::env::temp_dir().join(format!("wb-runner-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("t.db");
    let _ = std::fs::remove_file(&db);
    let target = format!("sqlite://{}", db.display());
    let t = Target::parse(&target).unwrap();
    backend::with_session(&t, Setup).unwrap();
    let cmds = vec![
        Command::Set(
            0,
            Expr::Call(
                crate::script::Func::Random,
                vec![Expr::Int(1), Expr::Int(10)],
            ),
        ),
        Command::Sql {
            stmt: 0,
            params: vec![0],
            capture: None,
        },
        Command::Sql {
            stmt: 1,
            params: vec![1],
            capture: None,
        },
    ];
    let p = plan(
        2,
        vec![
            ("UPDATE a SET n = n + 1 WHERE id = ?1", 1),
            ("INSERT INTO u VALUES (?1)", 1),
        ],
        cmds,
    );
    let sample = Sample::start(p, Target::parse(&target).unwrap()).unwrap();
    while !sample.wait(Duration::from_millis(100)) {}
    let pr = sample.progress().unwrap();
    let r = sample.finish().unwrap();
    let c = &r.columns;
    assert_eq!(c.session.len(), 500);
    // Each session inserts its id once; every later insert is a unique violation.
    let ok = c.status.iter().filter(|&&s| s == 0).count();
    assert_eq!(ok, 2);
    assert_eq!(pr.ok, 2);
    assert_eq!(pr.errors, 498);
    assert!(c
        .status
        .iter()
        .all(|&s| s == 0 || s == Status::Constraint as i8));
    // The summaries count every transaction: 2 successes, 498 violations, one type.
    let st = &r.summaries.statuses;
    assert_eq!(st.txn_type, vec![0, 0]);
    assert_eq!(st.warmup, vec![false, false]);
    assert_eq!(st.status, vec![0, Status::Constraint as i8]);
    assert_eq!(st.count, vec![2, 498]);
    assert_eq!(r.summaries.moments.count, vec![2]);
    assert_eq!(r.summaries.bins.count.iter().sum::<i64>(), 2);
    assert_eq!(
        r.error_codes,
        vec!["SQLITE_CONSTRAINT_PRIMARYKEY".to_string()]
    );
    assert!(c.end_ns.iter().zip(&c.start_ns).all(|(e, s)| e >= s));
    assert!(r.end_ns >= r.t0_ns);
    // Updates ran before the failing insert in every transaction.
    let t = Target::parse(&target).unwrap();
    let total = backend::with_session(&t, Query("SELECT sum(n) FROM a")).unwrap();
    assert_eq!(total, "500");
    std::fs::remove_dir_all(&dir).unwrap();
}

struct Setup;
impl WithSession for Setup {
    type Output = ();
    fn run<S: Session>(self, s: &mut S) {
        s.batch_execute(
            "CREATE TABLE a (id INTEGER PRIMARY KEY, n INTEGER NOT NULL);
             WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 10)
             INSERT INTO a SELECT x, 0 FROM c;
             CREATE TABLE u (id INTEGER PRIMARY KEY);",
        )
        .unwrap();
    }
}

struct Query(&'static str);
impl WithSession for Query {
    type Output = String;
    fn run<S: Session>(self, s: &mut S) -> String {
        s.query_text(self.0).unwrap()[0][0].clone().unwrap()
    }
}

#[test]
fn prepare_failure_is_reported() {
    let t = Target::parse("sqlite:///nonexistent-dir-xyz/t.db").unwrap();
    let p = plan(2, vec![], vec![]);
    let sample = Sample::start(p, t).unwrap();
    while !sample.wait(Duration::from_millis(100)) {}
    let f = sample.finish().err().unwrap();
    assert_eq!(f.kind, FatalKind::Connect);
    assert!(
        f.message.starts_with("cannot open SQLite database"),
        "{}",
        f.message
    );

    let dir = std::env::temp_dir();
    let t = Target::parse(&format!(
        "sqlite://{}/wb-empty-{}.db",
        dir.display(),
        std::process::id()
    ))
    .unwrap();
    let p = plan(
        2,
        vec![("SELECT * FROM missing WHERE x = ?1", 1)],
        vec![Command::Sql {
            stmt: 0,
            params: vec![0],
            capture: None,
        }],
    );
    let sample = Sample::start(p, t).unwrap();
    while !sample.wait(Duration::from_millis(100)) {}
    let f = sample.finish().err().unwrap();
    assert_eq!(f.kind, FatalKind::Query);
    assert!(
        f.message
            .contains("prepare failed for statement 1 of transaction 't'"),
        "{}",
        f.message
    );
    let _ = std::fs::remove_file(dir.join(format!("wb-empty-{}.db", std::process::id())));
}

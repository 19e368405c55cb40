//! The "minimal Rust loop" reference for the engine's overhead benchmarks:
//! one connection, one prepared statement, uniform random ids, autocommit.
//!
//!     sqlite_loop <db_path> <seconds> <n_rows> [--select]
//!
//! The table `accounts(id, balance)` must already exist. Prints one JSON line:
//! {"transactions": N, "seconds": S, "tps": X}

use std::time::{Duration, Instant};

use _engine::backend::sqlite::BUSY_TIMEOUT;
use _engine::script::Prng;
use rusqlite::Connection;

fn usage() -> ! {
    eprintln!("usage: sqlite_loop <db_path> <seconds> <n_rows> [--select]");
    std::process::exit(2);
}

fn main() {
    let mut select = false;
    let mut pos = Vec::new();
    for a in std::env::args().skip(1) {
        match a.as_str() {
            "--select" => select = true,
            _ => pos.push(a),
        }
    }
    if pos.len() != 3 {
        usage();
    }
    let seconds: f64 = pos[1].parse().unwrap_or_else(|_| usage());
    let n_rows: i64 = pos[2].parse().unwrap_or_else(|_| usage());
    if n_rows < 1 || seconds.is_nan() || seconds <= 0.0 {
        usage();
    }

    let conn = Connection::open(&pos[0]).expect("open database");
    conn.busy_timeout(BUSY_TIMEOUT).expect("busy timeout");
    let sql = if select {
        "SELECT balance FROM accounts WHERE id = ?1"
    } else {
        "UPDATE accounts SET balance = balance + 1 WHERE id = ?1"
    };
    let mut stmt = conn.prepare(sql).expect("prepare");
    let mut rng = Prng::new(0, 0, 1);

    let span = (n_rows - 1) as u64;
    let start = Instant::now();
    let end = start + Duration::from_secs_f64(seconds);
    let mut n: u64 = 0;
    while Instant::now() < end {
        let id = 1 + rng.below_inclusive(span) as i64;
        stmt.raw_bind_parameter(1, id).expect("bind");
        let mut rows = stmt.raw_query();
        while rows.next().expect("step").is_some() {}
        n += 1;
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "{{\"transactions\": {n}, \"seconds\": {secs:.6}, \"tps\": {:.3}}}",
        n as f64 / secs
    );
}

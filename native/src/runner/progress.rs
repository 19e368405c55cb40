//! Progress while a sample runs: per-thread log-linear latency histograms
//! made of atomics, and the snapshot (count, errors, p99) the waiter reads.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use super::sample::Sample;

/// 16 linear sub-buckets per power of two: <= 6.25% relative error.
const SUB_BITS: u32 = 4;
const SUB: usize = 1 << SUB_BITS;
pub(super) const BUCKETS: usize = (64 - SUB_BITS as usize + 1) * SUB;

pub(super) fn bucket_of(ns: u64) -> usize {
    if ns < SUB as u64 {
        return ns as usize;
    }
    let k = 63 - ns.leading_zeros(); // k >= SUB_BITS
    let sub = (ns >> (k - SUB_BITS)) as usize & (SUB - 1);
    (k - SUB_BITS + 1) as usize * SUB + sub
}

/// Midpoint of a bucket, in ns.
pub(super) fn bucket_value(b: usize) -> f64 {
    if b < SUB {
        return b as f64;
    }
    let k = (b / SUB) as u32 + SUB_BITS - 1;
    let sub = (b % SUB) as u64;
    let lo = (1u64 << k) + (sub << (k - SUB_BITS));
    lo as f64 + (1u64 << (k - SUB_BITS)) as f64 / 2.0
}

/// Written by exactly one session thread, read by the waiter; the single
/// writer makes load+store as good as fetch_add, without the locked instruction.
/// Aligned to two cache lines (the adjacent-line prefetcher pairs them) so that
/// sessions on different cores do not write to one line with every transaction.
#[repr(align(128))]
pub struct ThreadStats {
    pub(super) ok: AtomicU64,
    pub(super) errors: AtomicU64,
    hist: Box<[AtomicU64]>,
}

impl ThreadStats {
    pub(super) fn new() -> Self {
        ThreadStats {
            ok: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            hist: (0..BUCKETS).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    #[inline]
    fn bump(a: &AtomicU64) {
        a.store(a.load(Relaxed) + 1, Relaxed);
    }

    #[inline]
    pub(super) fn record(&self, ok: bool, latency_ns: u64) {
        if ok {
            Self::bump(&self.ok);
            Self::bump(&self.hist[bucket_of(latency_ns)]);
        } else {
            Self::bump(&self.errors);
        }
    }
}

pub struct Progress {
    pub ok: u64,
    pub errors: u64,
    pub elapsed_s: f64,
    pub p99_ms: f64,
}

impl Sample {
    pub fn progress(&self) -> Option<Progress> {
        let t0 = self.shared.gate.t0()?;
        let mut hist = vec![0u64; BUCKETS];
        let (mut ok, mut errors) = (0, 0);
        for s in &self.shared.stats {
            ok += s.ok.load(Relaxed);
            errors += s.errors.load(Relaxed);
            for (h, a) in hist.iter_mut().zip(s.hist.iter()) {
                *h += a.load(Relaxed);
            }
        }
        let total: u64 = hist.iter().sum();
        let mut p99_ms = 0.0;
        if total > 0 {
            let rank = (total as f64 * 0.99).ceil() as u64;
            let mut seen = 0;
            for (b, &c) in hist.iter().enumerate() {
                seen += c;
                if seen >= rank {
                    p99_ms = bucket_value(b) / 1e6;
                    break;
                }
            }
        }
        Some(Progress {
            ok,
            errors,
            elapsed_s: t0.instant.elapsed().as_secs_f64(),
            p99_ms,
        })
    }
}

//! The start line: a barrier every session reaches once connected and
//! prepared, which a failing thread can break; the last arrival takes the
//! sample's clock anchor.

use std::sync::{Condvar, Mutex};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// A barrier that a failing or panicking thread can break, so that nobody waits
/// forever for a session that will never arrive. The last arrival captures t0.
pub(super) struct Gate {
    pub(super) state: Mutex<GateState>,
    pub(super) cv: Condvar,
}

pub(super) struct GateState {
    pub(super) arrived: usize,
    pub(super) broken: bool,
    pub(super) t0: Option<Anchor>,
}

/// The one mapping from the monotonic clock to wall time for this sample.
#[derive(Clone, Copy)]
pub struct Anchor {
    pub instant: Instant,
    pub wall_ns: i64,
}

impl Anchor {
    pub(super) fn now() -> Anchor {
        let wall = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        Anchor {
            instant: Instant::now(),
            wall_ns: wall.as_nanos() as i64,
        }
    }

    #[inline]
    pub fn ns(&self, t: Instant) -> i64 {
        self.wall_ns + t.saturating_duration_since(self.instant).as_nanos() as i64
    }
}

impl Gate {
    pub(super) fn arrive(&self, n: usize) -> Option<Anchor> {
        let mut st = self.state.lock().unwrap();
        st.arrived += 1;
        if st.arrived == n && !st.broken {
            st.t0 = Some(Anchor::now());
            self.cv.notify_all();
        }
        while st.t0.is_none() && !st.broken {
            st = self.cv.wait(st).unwrap();
        }
        if st.broken {
            None
        } else {
            st.t0
        }
    }

    pub(super) fn breakdown(&self) {
        let mut st = self.state.lock().unwrap();
        st.broken = true;
        self.cv.notify_all();
    }

    pub(super) fn t0(&self) -> Option<Anchor> {
        let st = self.state.lock().unwrap();
        if st.broken {
            None
        } else {
            st.t0
        }
    }
}

/// Breaks the gate if the thread leaves (error or panic) before arriving.
pub(super) struct Arrival<'a> {
    pub(super) gate: &'a Gate,
    pub(super) arrived: bool,
}

impl Drop for Arrival<'_> {
    fn drop(&mut self) {
        if !self.arrived {
            self.gate.breakdown();
        }
    }
}

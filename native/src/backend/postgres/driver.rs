//! The poll(2) loop that drives a tokio-postgres connection on the session's
//! own thread, with deadlines.

use std::future::{poll_fn, Future};
use std::io;
use std::os::fd::RawFd;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Instant;

use tokio_postgres::Connection;

use super::io::{IoState, Sock, TlsSock};

/// Wakes are only ever in-thread (a channel inside tokio-postgres); a flag
/// tells the loop to poll again instead of sleeping.
struct WakeFlag(AtomicBool);

impl Wake for WakeFlag {
    fn wake(self: Arc<Self>) {
        self.0.store(true, Relaxed);
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.0.store(true, Relaxed);
    }
}

pub(super) struct Driver {
    pub(super) fd: RawFd,
    pub(super) io: Arc<IoState>,
    flag: Arc<WakeFlag>,
    waker: Waker,
}

impl Driver {
    pub(super) fn new(fd: RawFd, io: Arc<IoState>) -> Driver {
        let flag = Arc::new(WakeFlag(AtomicBool::new(false)));
        Driver {
            fd,
            io,
            waker: Waker::from(flag.clone()),
            flag,
        }
    }

    /// Polls `fut` to completion; sleeps in poll(2) on the socket whenever
    /// nothing was woken. Errs only on timeout or a failing poll(2).
    pub(super) fn block_on<F: Future>(
        &self,
        fut: F,
        deadline: Option<Instant>,
    ) -> io::Result<F::Output> {
        let mut fut = pin!(fut);
        let mut cx = Context::from_waker(&self.waker);
        loop {
            self.flag.0.store(false, Relaxed);
            self.io.want_write.store(false, Relaxed);
            if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
                return Ok(v);
            }
            if !self.flag.0.load(Relaxed) {
                self.wait(deadline)?;
            }
        }
    }

    pub(super) fn wait(&self, deadline: Option<Instant>) -> io::Result<()> {
        let mut events = libc::POLLIN;
        if self.io.want_write.load(Relaxed) {
            events |= libc::POLLOUT;
        }
        let mut pfd = libc::pollfd {
            fd: self.fd,
            events,
            revents: 0,
        };
        loop {
            let timeout = match deadline {
                None => -1,
                Some(d) => {
                    let left = d.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Err(io::Error::new(
                            io::ErrorKind::TimedOut,
                            "timed out waiting for the server",
                        ));
                    }
                    left.as_millis().clamp(1, i32::MAX as u128) as i32
                }
            };
            let r = unsafe { libc::poll(&mut pfd, 1, timeout) };
            if r > 0 {
                break;
            }
            if r < 0 {
                let e = io::Error::last_os_error();
                if e.kind() != io::ErrorKind::Interrupted {
                    return Err(e);
                }
            }
        }
        if pfd.revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0 {
            self.io.readable.store(true, Relaxed);
        }
        Ok(())
    }
}

pub(super) type PgConnection = Connection<Sock, TlsSock>;

/// Runs one client call while driving the connection, like `postgres::Client`
/// does: the connection is polled first so queued requests get written.
pub(super) fn run<T>(
    driver: &Driver,
    conn: &mut PgConnection,
    f: impl Future<Output = Result<T, tokio_postgres::Error>>,
) -> Result<T, tokio_postgres::Error> {
    run_until(driver, conn, f, None).expect("poll(2) without deadline does not time out")
}

/// `run` with a deadline: errs with TimedOut when the server has not answered
/// by then (a dead server or network, which a statement_timeout cannot catch).
pub(super) fn run_until<T>(
    driver: &Driver,
    conn: &mut PgConnection,
    f: impl Future<Output = Result<T, tokio_postgres::Error>>,
    deadline: Option<Instant>,
) -> io::Result<Result<T, tokio_postgres::Error>> {
    let mut f = pin!(f);
    let mut conn_done = false;
    driver.block_on(
        poll_fn(|cx| {
            while !conn_done {
                match conn.poll_message(cx) {
                    // Notices (e.g. ROLLBACK outside a transaction) and
                    // notifications are of no interest to a load generator.
                    Poll::Ready(Some(Ok(_))) => {}
                    Poll::Ready(Some(Err(e))) => return Poll::Ready(Err(e)),
                    Poll::Ready(None) => conn_done = true,
                    Poll::Pending => break,
                }
            }
            f.as_mut().poll(cx)
        }),
        deadline,
    )
}

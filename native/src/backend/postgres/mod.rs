//! PostgreSQL through tokio-postgres, driven by a tiny poll(2) loop instead of
//! a tokio runtime.
//!
//! Why not `postgres::Client`: it runs each call on a current-thread tokio
//! runtime, which costs an extra epoll_wait and the scheduler's bookkeeping per
//! round trip. With one connection per OS thread nothing needs a reactor: the
//! socket is non-blocking, a read that would block parks the thread in poll(2)
//! on that one descriptor, and a round trip costs send + poll + recv, like libpq.
//! This matters because the load generator shares the CPU with the server.
//!
//! `io` is the socket, `scan` follows the server's messages, `driver` is the
//! poll loop, `params` encodes parameters, `session` is the `Session`.

mod driver;
mod io;
mod params;
mod scan;
mod session;
#[cfg(test)]
mod tests;

pub use io::CancelInfo;
pub use session::{classify, PgSession};

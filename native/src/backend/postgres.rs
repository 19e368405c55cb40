//! PostgreSQL through tokio-postgres, driven by a tiny poll(2) loop instead of
//! a tokio runtime.
//!
//! Why not `postgres::Client`: it runs each call on a current-thread tokio
//! runtime, which costs an extra epoll_wait and the scheduler's bookkeeping per
//! round trip. With one connection per OS thread nothing needs a reactor: the
//! socket is non-blocking, a read that would block parks the thread in poll(2)
//! on that one descriptor, and a round trip costs send + poll + recv, like libpq.
//! This matters because the load generator shares the CPU with the server.

use std::error::Error as StdError;
use std::fmt::Write as _;
use std::future::{poll_fn, Future};
use std::io;
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::pin::{pin, Pin};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering::Relaxed};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use bytes::{BufMut, BytesMut};
use rustls::pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_postgres::config::Host;
use tokio_postgres::config::SslMode;
use tokio_postgres::error::Severity;
use tokio_postgres::tls::{ChannelBinding, TlsConnect, TlsStream};
use tokio_postgres::types::{IsNull, ToSql, Type};
use tokio_postgres::{CancelToken, Client, Config, Connection, Row, SimpleQueryMessage, Statement};

use super::tls::{end_point_digest, Mode as TlsMode, Tls};
use super::{DbError, DbResult, Session, Status};
use crate::script::Value;

// ---------------------------------------------------------------------------
// Transport

/// Readiness shared between the socket (inside the tokio-postgres
/// Connection) and the driver loop.
struct IoState {
    /// False once a read came back short or would block: the next read
    /// would only return EAGAIN, so skip it until poll(2) says otherwise.
    readable: AtomicBool,
    /// A write would have blocked: also wait for POLLOUT.
    want_write: AtomicBool,
    /// Status byte of the last ReadyForQuery seen ('I' idle, 'T' in a
    /// transaction, 'E' in a failed one). tokio-postgres does not expose it.
    txn_status: AtomicU8,
    /// Committed server transactions seen on this connection (see MsgScan).
    commits: AtomicU64,
    /// TLS was negotiated: the socket carries ciphertext, and the scan runs
    /// on the plaintext side (TlsSock) instead.
    tls: AtomicBool,
}

impl IoState {
    fn new() -> Arc<IoState> {
        Arc::new(IoState {
            readable: AtomicBool::new(true),
            want_write: AtomicBool::new(false),
            txn_status: AtomicU8::new(b'I'),
            commits: AtomicU64::new(0),
            tls: AtomicBool::new(false),
        })
    }
}

/// Follows message boundaries in the bytes the server sends, just far enough
/// to see each ReadyForQuery ('Z', length 5, one status byte). Only headers
/// are looked at; bodies are skipped. Every byte from the server is a typed
/// message except the one-byte answer to an SSLRequest, which the socket skips
/// (`Sock::skip`); after a TLS handshake the scan runs on the decrypted bytes.
///
/// It also counts the server transactions that committed, for the check of
/// the engine's count against `pg_stat_database.xact_commit`: every
/// ReadyForQuery with status 'I' ends a top-level transaction (an autocommit
/// statement, a COMMIT/END, a prepare's Sync, the startup's catalog
/// transaction), which committed unless an ErrorResponse or a "ROLLBACK"
/// CommandComplete came since the previous ReadyForQuery.
#[derive(Default)]
struct MsgScan {
    hdr: [u8; 5],
    have: usize,
    /// Body bytes of the current message still to skip.
    left: usize,
    is_rfq: bool,
    /// In a CommandComplete body: how many of its first bytes were compared
    /// with "ROLLBACK" so far, and whether they all matched.
    tag_at: usize,
    tag_rollback: bool,
    in_tag: bool,
    /// Since the previous ReadyForQuery: an error or a rollback happened.
    failed: bool,
    pub commits: u64,
}

const ROLLBACK_TAG: &[u8] = b"ROLLBACK";

impl MsgScan {
    /// Scans bytes the server sent and publishes the transaction status and
    /// the commits to the connection's shared state.
    fn scan(&mut self, data: &[u8], io: &IoState) {
        self.feed(data, &io.txn_status);
        io.commits.store(self.commits, Relaxed);
    }

    fn feed(&mut self, mut data: &[u8], status: &AtomicU8) {
        while !data.is_empty() {
            if self.left > 0 {
                if self.is_rfq {
                    // The body of a ReadyForQuery is exactly its status byte.
                    status.store(data[0], Relaxed);
                    if data[0] == b'I' && !self.failed {
                        self.commits += 1;
                    }
                    self.failed = false;
                    self.is_rfq = false;
                }
                let k = self.left.min(data.len());
                if self.in_tag {
                    for &b in &data[..k] {
                        if self.tag_at < ROLLBACK_TAG.len() {
                            self.tag_rollback &= b == ROLLBACK_TAG[self.tag_at];
                            self.tag_at += 1;
                        }
                    }
                    if self.tag_at >= ROLLBACK_TAG.len() || k == self.left {
                        if self.tag_rollback && self.tag_at == ROLLBACK_TAG.len() {
                            self.failed = true;
                        }
                        self.in_tag = false;
                    }
                }
                self.left -= k;
                data = &data[k..];
                continue;
            }
            let k = (5 - self.have).min(data.len());
            self.hdr[self.have..self.have + k].copy_from_slice(&data[..k]);
            self.have += k;
            data = &data[k..];
            if self.have == 5 {
                self.have = 0;
                let len = u32::from_be_bytes([self.hdr[1], self.hdr[2], self.hdr[3], self.hdr[4]])
                    as usize;
                self.left = len.saturating_sub(4);
                self.is_rfq = self.hdr[0] == b'Z' && self.left == 1;
                if self.hdr[0] == b'E' {
                    self.failed = true;
                }
                self.in_tag = self.hdr[0] == b'C' && self.left > 0;
                self.tag_at = 0;
                self.tag_rollback = true;
            }
        }
    }
}

enum SockInner {
    Tcp(TcpStream),
    Unix(UnixStream),
}

struct Sock {
    fd: RawFd,
    io: Arc<IoState>,
    scan: MsgScan,
    /// Bytes to leave out of the scan: the server's 'S'/'N' answer to the
    /// SSLRequest sent before the startup message.
    skip: usize,
    /// Owns the descriptor (closes it on drop).
    _inner: SockInner,
}

impl Sock {
    /// Makes the socket non-blocking (the driver polls it).
    fn new(inner: SockInner) -> Sock {
        let fd = match &inner {
            SockInner::Tcp(s) => {
                // Requests are single small writes; never let Nagle hold one back.
                let _ = s.set_nodelay(true);
                let _ = s.set_nonblocking(true);
                s.as_raw_fd()
            }
            SockInner::Unix(s) => {
                let _ = s.set_nonblocking(true);
                s.as_raw_fd()
            }
        };
        Sock {
            fd,
            io: IoState::new(),
            scan: MsgScan::default(),
            skip: 0,
            _inner: inner,
        }
    }
}

/// Where a session's socket went, so a CancelRequest reaches the same server.
#[derive(Clone, Debug)]
enum Peer {
    Tcp(SocketAddr),
    Unix(PathBuf),
}

/// Everything needed to cancel a session's running statement from another
/// thread: the server's cancel key and the address the session connected to.
pub struct CancelInfo {
    token: CancelToken,
    peer: Peer,
    /// The session's TLS: a server that requires it wants the cancel that way.
    tls: Tls,
    host: Option<String>,
}

impl CancelInfo {
    /// Sends a CancelRequest on a new connection; best effort, never waits
    /// past `deadline` (libpq's PQcancel does the same, blocking).
    pub fn cancel(&self, deadline: Instant) {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return;
        }
        let inner = match &self.peer {
            Peer::Tcp(a) => TcpStream::connect_timeout(a, left).map(SockInner::Tcp),
            Peer::Unix(p) => UnixStream::connect(p).map(SockInner::Unix),
        };
        let Ok(inner) = inner else { return };
        let sock = Sock::new(inner);
        let driver = Driver::new(sock.fd, sock.io.clone());
        let tls = Connector::new(&self.tls, self.host.as_deref(), sock.io.clone());
        let _ = driver.block_on(self.token.cancel_query_raw(sock, tls), Some(deadline));
    }
}

impl AsyncRead for Sock {
    fn poll_read(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if !this.io.readable.load(Relaxed) {
            return Poll::Pending;
        }
        // SAFETY: recv writes at most `len` bytes into the unfilled part, and
        // only the `n` bytes it reports are marked initialized.
        let unfilled = unsafe { buf.unfilled_mut() };
        let len = unfilled.len();
        loop {
            let n = unsafe { libc::recv(this.fd, unfilled.as_mut_ptr().cast(), len, 0) };
            if n >= 0 {
                let n = n as usize;
                unsafe { buf.assume_init(n) };
                buf.advance(n);
                if !this.io.tls.load(Relaxed) {
                    let filled = buf.filled();
                    let skipped = this.skip.min(n);
                    this.skip -= skipped;
                    this.scan
                        .scan(&filled[filled.len() - n + skipped..], &this.io);
                }
                if n < len {
                    this.io.readable.store(false, Relaxed);
                }
                return Poll::Ready(Ok(()));
            }
            let e = io::Error::last_os_error();
            match e.kind() {
                io::ErrorKind::Interrupted => continue,
                io::ErrorKind::WouldBlock => {
                    this.io.readable.store(false, Relaxed);
                    return Poll::Pending;
                }
                _ => return Poll::Ready(Err(e)),
            }
        }
    }
}

impl AsyncWrite for Sock {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        loop {
            let n = unsafe {
                libc::send(
                    self.fd,
                    data.as_ptr().cast(),
                    data.len(),
                    libc::MSG_NOSIGNAL,
                )
            };
            if n >= 0 {
                return Poll::Ready(Ok(n as usize));
            }
            let e = io::Error::last_os_error();
            match e.kind() {
                io::ErrorKind::Interrupted => continue,
                io::ErrorKind::WouldBlock => {
                    self.io.want_write.store(true, Relaxed);
                    return Poll::Pending;
                }
                _ => return Poll::Ready(Err(e)),
            }
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        unsafe { libc::shutdown(self.fd, libc::SHUT_WR) };
        Poll::Ready(Ok(()))
    }
}

/// Sets up TLS on a session's socket when the server agreed to it.
struct Connector {
    config: Option<Arc<rustls::ClientConfig>>,
    name: Result<ServerName<'static>, String>,
    io: Arc<IoState>,
}

impl Connector {
    fn new(tls: &Tls, host: Option<&str>, io: Arc<IoState>) -> Connector {
        Connector {
            config: tls.config.clone(),
            name: match host {
                Some(h) => Tls::server_name(h),
                None => Err("TLS needs a host name".into()),
            },
            io,
        }
    }
}

type Handshake = Pin<Box<dyn Future<Output = io::Result<TlsSock>> + Send>>;

impl TlsConnect<Sock> for Connector {
    type Stream = TlsSock;
    type Error = io::Error;
    type Future = Handshake;

    fn connect(self, sock: Sock) -> Handshake {
        let bad = |m: String| Box::pin(async move { Err(io::Error::other(m)) }) as Handshake;
        let Some(config) = self.config else {
            return bad("TLS is disabled for this target".into());
        };
        let name = match self.name {
            Ok(n) => n,
            Err(m) => return bad(m),
        };
        // From here the socket carries ciphertext; TlsSock scans the plaintext.
        self.io.tls.store(true, Relaxed);
        let io_state = self.io;
        Box::pin(async move {
            let stream = tokio_rustls::TlsConnector::from(config)
                .connect(name, sock)
                .await?;
            Ok(TlsSock {
                stream,
                scan: MsgScan::default(),
                io: io_state,
            })
        })
    }
}

/// A TLS session over the socket, scanning the decrypted messages as `Sock`
/// does the plain ones (transaction status, commits).
struct TlsSock {
    stream: tokio_rustls::client::TlsStream<Sock>,
    scan: MsgScan,
    io: Arc<IoState>,
}

impl AsyncRead for TlsSock {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let r = Pin::new(&mut this.stream).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = r {
            this.scan.scan(&buf.filled()[before..], &this.io);
        }
        r
    }
}

impl AsyncWrite for TlsSock {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write(cx, data)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}

impl TlsStream for TlsSock {
    /// tls-server-end-point (RFC 5929), as libpq offers it: SCRAM is bound to
    /// the server's certificate, so a relay in the middle cannot reuse the
    /// exchange even when the certificate itself is not checked.
    fn channel_binding(&self) -> ChannelBinding {
        let (_, conn) = self.stream.get_ref();
        let Some(cert) = conn.peer_certificates().and_then(|c| c.first()) else {
            return ChannelBinding::none();
        };
        match end_point_digest(cert.as_ref()) {
            Some(alg) => ChannelBinding::tls_server_end_point(
                ring::digest::digest(alg, cert).as_ref().into(),
            ),
            // A signature that names no hash (EdDSA; PostgreSQL cannot bind
            // to such a certificate either): no binding rather than a wrong
            // one that would fail the login.
            None => ChannelBinding::none(),
        }
    }
}

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

struct Driver {
    fd: RawFd,
    io: Arc<IoState>,
    flag: Arc<WakeFlag>,
    waker: Waker,
}

impl Driver {
    fn new(fd: RawFd, io: Arc<IoState>) -> Driver {
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
    fn block_on<F: Future>(&self, fut: F, deadline: Option<Instant>) -> io::Result<F::Output> {
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

    fn wait(&self, deadline: Option<Instant>) -> io::Result<()> {
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

type PgConnection = Connection<Sock, TlsSock>;

/// Runs one client call while driving the connection, like `postgres::Client`
/// does: the connection is polled first so queued requests get written.
fn run<T>(
    driver: &Driver,
    conn: &mut PgConnection,
    f: impl Future<Output = Result<T, tokio_postgres::Error>>,
) -> Result<T, tokio_postgres::Error> {
    run_until(driver, conn, f, None).expect("poll(2) without deadline does not time out")
}

/// `run` with a deadline: errs with TimedOut when the server has not answered
/// by then (a dead server or network, which a statement_timeout cannot catch).
fn run_until<T>(
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

/// The socket, its display name, the peer, and the host name TLS checks.
fn open_socket(cfg: &Config) -> Result<(Sock, String, Peer, Option<String>), String> {
    let hosts = cfg.get_hosts();
    let addrs = cfg.get_hostaddrs();
    let ports = cfg.get_ports();
    let n = hosts.len().max(addrs.len()).max(1);
    let timeout = cfg.get_connect_timeout().copied();
    let mut last_err = String::from("no host given");
    for i in 0..n {
        let port = match ports.len() {
            0 => 5432,
            1 => ports[0],
            _ => ports.get(i).copied().unwrap_or(5432),
        };
        let host = hosts
            .get(i)
            .cloned()
            .unwrap_or_else(|| Host::Tcp("localhost".into()));
        // The name a certificate is checked against: the host as written,
        // else the address (libpq does the same).
        let tls_name = match (hosts.get(i), addrs.get(i)) {
            (Some(Host::Tcp(h)), _) => Some(h.clone()),
            (_, Some(ip)) => Some(ip.to_string()),
            (Some(Host::Unix(_)), None) => None,
            (None, None) => Some("localhost".to_string()),
        };
        let (r, name): (io::Result<(SockInner, Peer)>, String) = match (addrs.get(i), host) {
            (Some(ip), _) => (
                tcp_connect(&[SocketAddr::new(*ip, port)], timeout),
                format!("{ip}:{port}"),
            ),
            (None, Host::Tcp(h)) => (
                (h.as_str(), port)
                    .to_socket_addrs()
                    .and_then(|a| tcp_connect(&a.collect::<Vec<_>>(), timeout)),
                format!("{h}:{port}"),
            ),
            (None, Host::Unix(dir)) => {
                let path = dir.join(format!(".s.PGSQL.{port}"));
                let name = path.display().to_string();
                (
                    UnixStream::connect(&path).map(|s| (SockInner::Unix(s), Peer::Unix(path))),
                    name,
                )
            }
        };
        match r {
            Ok((inner, peer)) => return Ok((Sock::new(inner), name, peer, tls_name)),
            Err(e) => last_err = format!("connection to {name} failed: {e}"),
        }
    }
    Err(last_err)
}

fn tcp_connect(addrs: &[SocketAddr], timeout: Option<Duration>) -> io::Result<(SockInner, Peer)> {
    let mut err = io::Error::new(io::ErrorKind::NotFound, "host name did not resolve");
    for a in addrs {
        let r = match timeout {
            Some(t) => TcpStream::connect_timeout(a, t),
            None => TcpStream::connect(a),
        };
        match r {
            Ok(s) => return Ok((SockInner::Tcp(s), Peer::Tcp(*a))),
            Err(e) => err = e,
        }
    }
    Err(err)
}

/// How a parameter is sent, decided once per statement from the server's
/// inferred parameter types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Int2,
    Int4,
    Int8,
    Float4,
    Float8,
    Numeric,
    Text,
    Oid,
}

impl Kind {
    fn of(ty: &Type) -> Option<Kind> {
        Some(match *ty {
            Type::INT2 => Kind::Int2,
            Type::INT4 => Kind::Int4,
            Type::INT8 => Kind::Int8,
            Type::FLOAT4 => Kind::Float4,
            Type::FLOAT8 => Kind::Float8,
            Type::NUMERIC => Kind::Numeric,
            Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::UNKNOWN => Kind::Text,
            Type::OID => Kind::Oid,
            _ => return None,
        })
    }
}

/// A script value already converted to its parameter's type, so encoding
/// cannot fail and conversion errors are reported as script errors.
#[derive(Clone, Copy, Debug)]
enum Param {
    I16(i16),
    I32(i32),
    I64(i64),
    F32(f32),
    F64(f64),
    Numeric(Value),
    Text(Value),
    Oid(u32),
}

struct Prepared {
    stmt: Statement,
    kinds: Vec<Kind>,
}

pub struct PgSession {
    /// Option so that Drop can release it first and let the connection say goodbye.
    client: Option<Client>,
    conn: PgConnection,
    driver: Driver,
    stmts: Vec<Prepared>,
    /// Reused across executions: no allocation per statement on our side.
    params: Vec<Param>,
    peer: Peer,
    tls: Tls,
    host: Option<String>,
}

/// Parameter lists longer than this fall back to a heap-allocated slice.
const INLINE_PARAMS: usize = 32;

impl PgSession {
    pub fn connect(cfg: &Config, tls: &Tls) -> DbResult<PgSession> {
        match PgSession::connect_once(cfg, tls) {
            // libpq's prefer: a TLS handshake that fails (a protocol or cipher
            // rustls does not offer) falls back to a plain connection.
            Err(e) if tls.mode == TlsMode::Prefer && e.message.contains("TLS handshake") => {
                let mut plain = cfg.clone();
                plain.ssl_mode(SslMode::Disable);
                PgSession::connect_once(&plain, &Tls::disabled())
            }
            r => r,
        }
    }

    fn connect_once(cfg: &Config, tls: &Tls) -> DbResult<PgSession> {
        let conn_err = |m: String| DbError::new(Status::Connection, None, m);
        let (mut sock, name, peer, host) = open_socket(cfg).map_err(conn_err)?;
        // libpq never uses TLS on a Unix socket, whatever sslmode says.
        let unix = matches!(peer, Peer::Unix(_));
        let local;
        let (cfg, tls) = if unix && tls.mode != TlsMode::Disable {
            let mut c = cfg.clone();
            c.ssl_mode(SslMode::Disable);
            local = (c, Tls::disabled());
            (&local.0, &local.1)
        } else {
            (cfg, tls)
        };
        if tls.mode != TlsMode::Disable {
            sock.skip = 1; // the answer to the SSLRequest
        }
        let driver = Driver::new(sock.fd, sock.io.clone());
        let deadline = cfg.get_connect_timeout().map(|t| Instant::now() + *t);
        let connector = Connector::new(tls, host.as_deref(), sock.io.clone());
        let (client, conn) = driver
            .block_on(cfg.connect_raw(sock, connector), deadline)
            .map_err(|e| conn_err(format!("{name}: {e}")))?
            .map_err(|e| {
                let mut err = classify(e);
                err.status = Status::Connection;
                err
            })?;
        Ok(PgSession {
            client: Some(client),
            conn,
            driver,
            stmts: Vec::new(),
            params: Vec::new(),
            peer,
            tls: tls.clone(),
            host,
        })
    }

    pub fn cancel_info(&self) -> CancelInfo {
        CancelInfo {
            token: self.client().cancel_token(),
            peer: self.peer.clone(),
            tls: self.tls.clone(),
            host: self.host.clone(),
        }
    }

    fn client(&self) -> &Client {
        self.client.as_ref().expect("client lives until drop")
    }

    /// Prepares a statement for `query_prepared` (statistics queries; the
    /// workload's statements go through `Session::prepare`).
    pub fn prepare_raw(&mut self, sql: &str, timeout: Duration) -> DbResult<Statement> {
        let client = self.client.as_ref().expect("open");
        let deadline = Some(Instant::now() + timeout);
        run_until(&self.driver, &mut self.conn, client.prepare(sql), deadline)
            .map_err(timed_out)?
            .map_err(|e| self.classify(e))
    }

    /// Runs a prepared statement and returns its rows, or errs once `timeout`
    /// has passed without an answer.
    pub fn query_prepared(
        &mut self,
        stmt: &Statement,
        params: &[&(dyn ToSql + Sync)],
        timeout: Duration,
    ) -> DbResult<Vec<Row>> {
        let client = self.client.as_ref().expect("open");
        let deadline = Some(Instant::now() + timeout);
        run_until(
            &self.driver,
            &mut self.conn,
            client.query(stmt, params),
            deadline,
        )
        .map_err(timed_out)?
        .map_err(|e| self.classify(e))
    }

    /// A simple-protocol query whose rows come back as text, or an error
    /// once `timeout` has passed without an answer.
    pub fn query_text_within(
        &mut self,
        sql: &str,
        timeout: Duration,
    ) -> DbResult<Vec<Vec<Option<String>>>> {
        let client = self.client.as_ref().expect("open");
        let deadline = Some(Instant::now() + timeout);
        let msgs = run_until(
            &self.driver,
            &mut self.conn,
            client.simple_query(sql),
            deadline,
        )
        .map_err(timed_out)?
        .map_err(|e| self.classify(e))?;
        Ok(text_rows(msgs))
    }

    /// True once the server closed the connection or a call found it dead.
    pub fn is_closed(&self) -> bool {
        self.client().is_closed()
    }

    /// A dead connection is a connection failure whatever error reported it.
    fn classify(&self, e: tokio_postgres::Error) -> DbError {
        let mut err = classify(e);
        if self.client().is_closed() {
            err.status = Status::Connection;
        }
        err
    }
}

impl Drop for PgSession {
    fn drop(&mut self) {
        // Dropping the client queues a Terminate; drive the connection until it
        // has been sent so the server sees a clean goodbye, not a reset.
        self.client = None;
        let conn = &mut self.conn;
        let deadline = Some(Instant::now() + Duration::from_secs(1));
        let _ = self.driver.block_on(
            poll_fn(|cx| loop {
                match conn.poll_message(cx) {
                    Poll::Ready(Some(Ok(_))) => {}
                    Poll::Ready(_) => return Poll::Ready(()),
                    Poll::Pending => return Poll::Pending,
                }
            }),
            deadline,
        );
    }
}

impl Session for PgSession {
    fn batch_execute(&mut self, sql: &str) -> DbResult<()> {
        let client = self.client.as_ref().expect("open");
        run(&self.driver, &mut self.conn, client.batch_execute(sql)).map_err(|e| self.classify(e))
    }

    fn prepare(&mut self, sql: &str, n_params: usize) -> DbResult<()> {
        let client = self.client.as_ref().expect("open");
        let stmt =
            run(&self.driver, &mut self.conn, client.prepare(sql)).map_err(|e| self.classify(e))?;
        let types = stmt.params();
        if types.len() != n_params {
            return Err(DbError::new(
                Status::Error,
                None,
                format!(
                    "statement has {} parameters but {} values are bound",
                    types.len(),
                    n_params
                ),
            ));
        }
        let mut kinds = Vec::with_capacity(types.len());
        for (i, ty) in types.iter().enumerate() {
            match Kind::of(ty) {
                Some(k) => kinds.push(k),
                None => {
                    return Err(DbError::new(
                        Status::Error,
                        None,
                        format!(
                            "parameter ${} has type {}, which cannot be bound from a number; \
                             cast the placeholder in the SQL, e.g. :id::int8",
                            i + 1,
                            ty.name()
                        ),
                    ))
                }
            }
        }
        self.params.reserve(kinds.len());
        self.stmts.push(Prepared { stmt, kinds });
        Ok(())
    }

    fn execute(&mut self, stmt: usize, values: &[Value]) -> DbResult<()> {
        let Prepared { stmt, kinds } = &self.stmts[stmt];
        let client = self.client.as_ref().expect("open");
        self.params.clear();
        for (i, (k, v)) in kinds.iter().zip(values).enumerate() {
            self.params.push(convert(*k, *v).map_err(|m| {
                DbError::new(Status::Script, None, format!("parameter ${}: {m}", i + 1))
            })?);
        }
        let n = self.params.len();
        // `execute` (not `query`) reads and counts rows without materializing them.
        let r = if n <= INLINE_PARAMS {
            let mut refs: [&(dyn ToSql + Sync); INLINE_PARAMS] = [&Param::I16(0); INLINE_PARAMS];
            for (slot, p) in refs.iter_mut().zip(&self.params) {
                *slot = p;
            }
            run(
                &self.driver,
                &mut self.conn,
                client.execute(stmt, &refs[..n]),
            )
        } else {
            let refs: Vec<&(dyn ToSql + Sync)> = self
                .params
                .iter()
                .map(|p| p as &(dyn ToSql + Sync))
                .collect();
            run(&self.driver, &mut self.conn, client.execute(stmt, &refs))
        };
        r.map(|_| ()).map_err(|e| self.classify(e))
    }

    fn rollback_if_needed(&mut self) -> DbResult<()> {
        // ROLLBACK outside a transaction costs a round trip and a server
        // WARNING, so only send it when the last ReadyForQuery said we are in
        // one. The server flushes an ErrorResponse before its ReadyForQuery,
        // so the status may still be the one from before the failed statement:
        // that can only err towards an unneeded ROLLBACK (e.g. a failed
        // COMMIT seen as 'T'), never skip a needed one, because a single
        // extended-protocol statement cannot fail its way into a transaction.
        if self.driver.io.txn_status.load(Relaxed) == b'I' {
            return Ok(());
        }
        let client = self.client.as_ref().expect("open");
        run(
            &self.driver,
            &mut self.conn,
            client.batch_execute("ROLLBACK"),
        )
        .map_err(|e| self.classify(e))
    }

    fn counters(&self) -> Vec<(&'static str, i64)> {
        vec![(
            "server_commits",
            self.driver.io.commits.load(Relaxed) as i64,
        )]
    }

    fn query_text(&mut self, sql: &str) -> DbResult<Vec<Vec<Option<String>>>> {
        let client = self.client.as_ref().expect("open");
        let msgs = run(&self.driver, &mut self.conn, client.simple_query(sql))
            .map_err(|e| self.classify(e))?;
        Ok(text_rows(msgs))
    }
}

fn text_rows(msgs: Vec<SimpleQueryMessage>) -> Vec<Vec<Option<String>>> {
    let mut out = Vec::new();
    for m in msgs {
        if let SimpleQueryMessage::Row(row) = m {
            out.push(
                (0..row.len())
                    .map(|i| row.get(i).map(str::to_string))
                    .collect(),
            );
        }
    }
    out
}

fn convert(k: Kind, v: Value) -> Result<Param, String> {
    fn int(v: Value) -> Result<i64, String> {
        match v {
            Value::Int(i) => Ok(i),
            // Exactly integral floats (e.g. from double()) are accepted.
            Value::Float(f) if f.fract() == 0.0 && (-9.2e18..=9.2e18).contains(&f) => Ok(f as i64),
            Value::Float(f) => Err(format!("{f} is not an integer")),
            Value::Unset => Err("unset value".into()),
        }
    }
    fn float(v: Value) -> f64 {
        match v {
            Value::Int(i) => i as f64,
            Value::Float(f) => f,
            Value::Unset => f64::NAN,
        }
    }
    let range = |i: i64, t: &str| format!("{i} is out of range for type {t}");
    Ok(match k {
        Kind::Int2 => {
            let i = int(v)?;
            Param::I16(i16::try_from(i).map_err(|_| range(i, "smallint"))?)
        }
        Kind::Int4 => {
            let i = int(v)?;
            Param::I32(i32::try_from(i).map_err(|_| range(i, "integer"))?)
        }
        Kind::Int8 => Param::I64(int(v)?),
        Kind::Oid => {
            let i = int(v)?;
            Param::Oid(u32::try_from(i).map_err(|_| range(i, "oid"))?)
        }
        Kind::Float4 => Param::F32(float(v) as f32),
        Kind::Float8 => Param::F64(float(v)),
        Kind::Numeric => Param::Numeric(v),
        Kind::Text => Param::Text(v),
    })
}

impl ToSql for Param {
    fn to_sql(
        &self,
        _ty: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn StdError + Sync + Send>> {
        match *self {
            Param::I16(x) => out.put_i16(x),
            Param::I32(x) => out.put_i32(x),
            Param::I64(x) => out.put_i64(x),
            Param::F32(x) => out.put_f32(x),
            Param::F64(x) => out.put_f64(x),
            Param::Oid(x) => out.put_u32(x),
            // Binary format of text types is the bare UTF-8 bytes.
            Param::Text(Value::Int(i)) => write!(out, "{i}")?,
            Param::Text(Value::Float(f)) => write!(out, "{f}")?,
            Param::Numeric(v) => encode_numeric(v, out),
            Param::Text(Value::Unset) => return Ok(IsNull::Yes),
        }
        Ok(IsNull::No)
    }

    fn accepts(_ty: &Type) -> bool {
        // The kind was chosen from this very type at prepare time.
        true
    }

    tokio_postgres::types::to_sql_checked!();
}

const NUMERIC_POS: u16 = 0x0000;
const NUMERIC_NEG: u16 = 0x4000;
const NUMERIC_NAN: u16 = 0xC000;
const NUMERIC_PINF: u16 = 0xD000;
const NUMERIC_NINF: u16 = 0xF000;

/// NUMERIC binary format: ndigits, weight, sign, dscale, then base-10000 digits.
/// Goes through the shortest round-trip decimal text of the value, so a float
/// binds as the number it prints as (0.1 -> 0.1, not 0.1000000000000000055...).
fn encode_numeric(v: Value, out: &mut BytesMut) {
    let header = |out: &mut BytesMut, nd: i16, w: i16, sign: u16, dscale: u16| {
        out.put_i16(nd);
        out.put_i16(w);
        out.put_u16(sign);
        out.put_u16(dscale);
    };
    // Rust never uses exponent notation for Display of f64, and i64 fits easily.
    let mut buf = [0u8; 400];
    let len = {
        let mut cur = std::io::Cursor::new(&mut buf[..]);
        let r = match v {
            Value::Int(i) => std::io::Write::write_fmt(&mut cur, format_args!("{i}")),
            Value::Float(f) if f.is_nan() => return header(out, 0, 0, NUMERIC_NAN, 0),
            Value::Float(f) if f.is_infinite() => {
                return header(
                    out,
                    0,
                    0,
                    if f > 0.0 { NUMERIC_PINF } else { NUMERIC_NINF },
                    0,
                )
            }
            Value::Float(f) => std::io::Write::write_fmt(&mut cur, format_args!("{f}")),
            Value::Unset => return header(out, 0, 0, NUMERIC_NAN, 0),
        };
        debug_assert!(r.is_ok());
        cur.position() as usize
    };
    let text = &buf[..len];
    let (neg, text) = match text.first() {
        Some(b'-') => (true, &text[1..]),
        _ => (false, text),
    };
    let dot = text.iter().position(|&c| c == b'.').unwrap_or(text.len());
    let (int_part, frac_part) = (
        &text[..dot],
        if dot < text.len() {
            &text[dot + 1..]
        } else {
            &[][..]
        },
    );
    let dscale = frac_part.len() as u16;

    // Group decimal digits by 4 around the decimal point.
    let mut digits = [0i16; 100];
    let mut nd = 0usize;
    let int_groups = int_part.len().div_ceil(4);
    let lead = int_groups * 4 - int_part.len();
    let digit_at = |i: usize| -> i16 {
        // Position i in the zero-padded sequence [lead zeros][int][frac][pad zeros].
        if i < lead {
            return 0;
        }
        let i = i - lead;
        if i < int_part.len() {
            return (int_part[i] - b'0') as i16;
        }
        let i = i - int_part.len();
        if i < frac_part.len() {
            (frac_part[i] - b'0') as i16
        } else {
            0
        }
    };
    let total_groups = int_groups + frac_part.len().div_ceil(4);
    for g in 0..total_groups {
        let d = (0..4).fold(0i16, |acc, j| acc * 10 + digit_at(g * 4 + j));
        digits[nd] = d;
        nd += 1;
    }
    let mut weight = int_groups as i32 - 1;
    let mut first = 0;
    while first < nd && digits[first] == 0 {
        first += 1;
        weight -= 1;
    }
    while nd > first && digits[nd - 1] == 0 {
        nd -= 1;
    }
    if first == nd {
        return header(out, 0, 0, NUMERIC_POS, dscale);
    }
    header(
        out,
        (nd - first) as i16,
        weight as i16,
        if neg { NUMERIC_NEG } else { NUMERIC_POS },
        dscale,
    );
    for d in &digits[first..nd] {
        out.put_i16(*d);
    }
}

/// A call that got no answer in time: the connection is as good as lost.
fn timed_out(e: io::Error) -> DbError {
    DbError::new(
        Status::Connection,
        None,
        format!("no answer from the server: {e}"),
    )
}

pub fn classify(e: tokio_postgres::Error) -> DbError {
    let code = e.code().map(|c| c.code().to_string());
    let status = match code.as_deref() {
        Some("40001") => Status::Serialization,
        Some("40P01") => Status::Deadlock,
        Some("55P03") => Status::Lock,
        Some(c) if c.starts_with("23") => Status::Constraint,
        Some(c) if c.starts_with("08") => Status::Connection,
        Some(_) => Status::Error,
        None if e.is_closed() || is_io(&e) => Status::Connection,
        None => Status::Error,
    };
    // FATAL (e.g. 57P01 admin shutdown) means the server is closing this
    // connection: the session cannot go on whatever the SQLSTATE class.
    let fatal = e.as_db_error().is_some_and(|db| {
        matches!(
            db.parsed_severity(),
            Some(Severity::Fatal | Severity::Panic)
        )
    });
    let status = if fatal { Status::Connection } else { status };
    let message = match e.as_db_error() {
        Some(db) => match db.detail() {
            Some(d) => format!("{} (DETAIL: {d})", db.message()),
            None => db.message().to_string(),
        },
        // tokio-postgres messages and their causes never include the
        // connection parameters; the cause says why ("Connection refused").
        None => {
            let mut m = e.to_string();
            let mut src = e.source();
            while let Some(s) = src {
                m.push_str(": ");
                m.push_str(&s.to_string());
                src = s.source();
            }
            m
        }
    };
    DbError::new(status, code, message)
}

fn is_io(e: &tokio_postgres::Error) -> bool {
    let mut src = e.source();
    while let Some(s) = src {
        if s.is::<std::io::Error>() {
            return true;
        }
        src = s.source();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numeric(v: Value) -> Vec<i16> {
        let mut b = BytesMut::new();
        encode_numeric(v, &mut b);
        b.chunks(2)
            .map(|c| i16::from_be_bytes([c[0], c[1]]))
            .collect()
    }

    #[test]
    fn numeric_encoding() {
        // [ndigits, weight, sign, dscale, digits...]
        assert_eq!(numeric(Value::Int(0)), vec![0, 0, 0, 0]);
        assert_eq!(numeric(Value::Int(12345)), vec![2, 1, 0, 0, 1, 2345]);
        assert_eq!(numeric(Value::Int(10000)), vec![1, 1, 0, 0, 1]);
        assert_eq!(numeric(Value::Int(-7)), vec![1, 0, 0x4000, 0, 7]);
        assert_eq!(numeric(Value::Float(1.5)), vec![2, 0, 0, 1, 1, 5000]);
        assert_eq!(numeric(Value::Float(0.001)), vec![1, -1, 0, 3, 10]);
        assert_eq!(
            numeric(Value::Float(-123.25)),
            vec![2, 0, 0x4000, 2, 123, 2500]
        );
        assert_eq!(numeric(Value::Float(2.0)), vec![1, 0, 0, 0, 2]);
        let nan = numeric(Value::Float(f64::NAN));
        assert_eq!(nan[2] as u16, NUMERIC_NAN);
        assert_eq!(numeric(Value::Int(i64::MIN))[0], 5);
        assert!(numeric(Value::Float(1e300)).len() > 4);
        assert!(numeric(Value::Float(5e-324)).len() > 4);
    }

    #[test]
    fn commit_counting() {
        let z = |st: u8| vec![b'Z', 0, 0, 0, 5, st];
        let tag = |t: &str| {
            let mut m = vec![b'C'];
            m.extend_from_slice(&((t.len() + 5) as u32).to_be_bytes());
            m.extend_from_slice(t.as_bytes());
            m.push(0);
            m
        };
        let err = vec![b'E', 0, 0, 0, 6, b'S', 0];
        let mut msgs = Vec::new();
        msgs.extend(z(b'I')); // startup: 1
        msgs.extend(tag("UPDATE 1"));
        msgs.extend(z(b'I')); // autocommit: 2
        msgs.extend(tag("BEGIN"));
        msgs.extend(z(b'T'));
        msgs.extend(tag("COMMIT"));
        msgs.extend(z(b'I')); // 3
        msgs.extend(err.clone());
        msgs.extend(z(b'I')); // failed autocommit statement: no
        msgs.extend(tag("BEGIN"));
        msgs.extend(z(b'T'));
        msgs.extend(tag("ROLLBACK"));
        msgs.extend(z(b'I')); // rollback: no
        msgs.extend(tag("SELECT 1"));
        msgs.extend(z(b'I')); // 4
        for step in [msgs.len(), 1, 2, 7] {
            let status = AtomicU8::new(b'I');
            let mut scan = MsgScan::default();
            for chunk in msgs.chunks(step) {
                scan.feed(chunk, &status);
            }
            assert_eq!(scan.commits, 4, "step {step}");
        }
    }

    #[test]
    fn ready_for_query_scan() {
        // DataRow with a 'Z' inside its body, then CommandComplete, then
        // ReadyForQuery 'T'; fed whole and one byte at a time.
        let mut msgs = Vec::new();
        msgs.extend_from_slice(&[b'D', 0, 0, 0, 10, b'Z', 0, 0, 0, 5, b'E']);
        msgs.extend_from_slice(&[b'C', 0, 0, 0, 8, b'B', b'E', b'G', 0]);
        msgs.extend_from_slice(&[b'Z', 0, 0, 0, 5, b'T']);
        for step in [msgs.len(), 1, 3] {
            let status = AtomicU8::new(b'I');
            let mut scan = MsgScan::default();
            for chunk in msgs.chunks(step) {
                scan.feed(chunk, &status);
            }
            assert_eq!(status.load(Relaxed), b'T', "step {step}");
            scan.feed(&[b'Z', 0, 0, 0, 5, b'I'], &status);
            assert_eq!(status.load(Relaxed), b'I');
        }
    }

    #[test]
    fn conversions() {
        assert!(matches!(
            convert(Kind::Int4, Value::Int(5)),
            Ok(Param::I32(5))
        ));
        assert!(convert(Kind::Int4, Value::Int(1 << 40)).is_err());
        assert!(convert(Kind::Int2, Value::Int(40000)).is_err());
        assert!(matches!(
            convert(Kind::Int8, Value::Float(3.0)),
            Ok(Param::I64(3))
        ));
        assert!(convert(Kind::Int8, Value::Float(3.5)).is_err());
        assert!(matches!(convert(Kind::Float8, Value::Int(3)), Ok(Param::F64(x)) if x == 3.0));
        assert!(convert(Kind::Oid, Value::Int(-1)).is_err());
    }
}

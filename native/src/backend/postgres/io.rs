//! The socket of a session: TCP or Unix, plain or TLS, non-blocking, with
//! readiness shared with the driver loop; opening it, and cancel requests.

use std::future::Future;
use std::io;
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering::Relaxed};
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use rustls::pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_postgres::config::Host;
use tokio_postgres::tls::{ChannelBinding, TlsConnect, TlsStream};
use tokio_postgres::{CancelToken, Config};

use super::driver::Driver;
use super::scan::MsgScan;
use crate::backend::tls::{end_point_digest, Tls};

/// Readiness shared between the socket (inside the tokio-postgres
/// Connection) and the driver loop.
pub(super) struct IoState {
    /// False once a read came back short or would block: the next read
    /// would only return EAGAIN, so skip it until poll(2) says otherwise.
    pub(super) readable: AtomicBool,
    /// A write would have blocked: also wait for POLLOUT.
    pub(super) want_write: AtomicBool,
    /// Status byte of the last ReadyForQuery seen ('I' idle, 'T' in a
    /// transaction, 'E' in a failed one). tokio-postgres does not expose it.
    pub(super) txn_status: AtomicU8,
    /// Committed server transactions seen on this connection (see MsgScan).
    pub(super) commits: AtomicU64,
    /// Bytes received from the server, as on the wire (ciphertext with TLS).
    pub(super) received: AtomicU64,
    /// TLS was negotiated: the socket carries ciphertext, and the scan runs
    /// on the plaintext side (TlsSock) instead.
    pub(super) tls: AtomicBool,
    /// The negotiated TLS as a counter name (tls::negotiated_counter).
    pub(super) negotiated: OnceLock<&'static str>,
}

impl IoState {
    pub(super) fn new() -> Arc<IoState> {
        Arc::new(IoState {
            readable: AtomicBool::new(true),
            want_write: AtomicBool::new(false),
            txn_status: AtomicU8::new(b'I'),
            commits: AtomicU64::new(0),
            received: AtomicU64::new(0),
            tls: AtomicBool::new(false),
            negotiated: OnceLock::new(),
        })
    }
}

enum SockInner {
    Tcp(TcpStream),
    Unix(UnixStream),
}

pub(super) struct Sock {
    pub(super) fd: RawFd,
    pub(super) io: Arc<IoState>,
    pub(super) scan: MsgScan,
    /// Bytes to leave out of the scan: the server's 'S'/'N' answer to the
    /// SSLRequest sent before the startup message.
    pub(super) skip: usize,
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
pub(super) enum Peer {
    Tcp(SocketAddr),
    Unix(PathBuf),
}

/// Everything needed to cancel a session's running statement from another
/// thread: the server's cancel key and the address the session connected to.
pub struct CancelInfo {
    pub(super) token: CancelToken,
    pub(super) peer: Peer,
    /// The session's TLS: a server that requires it wants the cancel that way.
    pub(super) tls: Tls,
    pub(super) host: Option<String>,
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
                this.io.received.fetch_add(n as u64, Relaxed);
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
pub(super) struct Connector {
    pub(super) config: Option<Arc<rustls::ClientConfig>>,
    pub(super) name: Result<ServerName<'static>, String>,
    pub(super) io: Arc<IoState>,
}

impl Connector {
    pub(super) fn new(tls: &Tls, host: Option<&str>, io: Arc<IoState>) -> Connector {
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
            if let Some(counter) = crate::backend::tls::negotiated_counter(stream.get_ref().1) {
                let _ = io_state.negotiated.set(counter);
            }
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
pub(super) struct TlsSock {
    pub(super) stream: tokio_rustls::client::TlsStream<Sock>,
    pub(super) scan: MsgScan,
    pub(super) io: Arc<IoState>,
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

/// The socket, its display name, the peer, and the host name TLS checks.
pub(super) fn open_socket(cfg: &Config) -> Result<(Sock, String, Peer, Option<String>), String> {
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

//! `PgSession`: connect, prepare, execute, the engine's `Session` interface,
//! and the classification of driver errors into statuses.

use std::error::Error as StdError;
use std::future::poll_fn;
use std::io::{self, Read};
use std::sync::atomic::Ordering::Relaxed;
use std::task::Poll;
use std::time::{Duration, Instant};

use futures_util::TryStreamExt;
use tokio_postgres::config::SslMode;
use tokio_postgres::error::Severity;
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::{Client, Config, Row, RowStream, SimpleQueryMessage, Statement};

use super::driver::{run, run_until, Driver, PgConnection};
use super::io::{open_socket, CancelInfo, Connector, Peer};
use super::params::{convert, Kind, Num, Param};
use crate::backend::tls::{Mode as TlsMode, Tls};
use crate::backend::{
    inline_values, value_from_text, DbError, DbResult, Protocol, Session, Status, Store,
};
use crate::script::Value;

struct Prepared {
    /// None unless the protocol is `Prepared`: pgbench's other modes keep no
    /// named statement on the server, and neither do we once the prepare has
    /// checked the statement and told us its types.
    stmt: Option<Statement>,
    types: Vec<Type>,
    kinds: Vec<Kind>,
    /// The statement's text (the extended protocol parses it every time) and
    /// the text around its parameters (the simple protocol inlines values).
    text: String,
    parts: Vec<String>,
    /// Whether it has result columns (a fetch size applies to those only).
    returns_rows: bool,
}

pub struct PgSession {
    /// Option so that Drop can release it first and let the connection say goodbye.
    pub(super) client: Option<Client>,
    pub(super) conn: PgConnection,
    pub(super) driver: Driver,
    stmts: Vec<Prepared>,
    protocol: Protocol,
    /// Rows per round trip (0: the whole result at once).
    fetch_size: u32,
    /// In a pipeline: the statements sent since its start or last sync, with
    /// their values, whose results are awaited at the next sync or end.
    pipeline: Option<Vec<(usize, Vec<Value>)>>,
    /// Reused across executions: no allocation per statement on our side.
    pub(super) params: Vec<Param>,
    /// Reused for simple-protocol statement text.
    inline: String,
    /// `\copy` rows and bytes loaded on this connection.
    copied: (i64, i64),
    /// Bytes received before the counters were reset (connect, set-up, prepares).
    received_before: u64,
    pub(super) peer: Peer,
    pub(super) tls: Tls,
    pub(super) host: Option<String>,
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
            protocol: Protocol::Prepared,
            fetch_size: 0,
            pipeline: None,
            params: Vec::new(),
            inline: String::new(),
            copied: (0, 0),
            received_before: 0,
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

    pub(super) fn client(&self) -> &Client {
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
    pub(super) fn classify(&self, e: tokio_postgres::Error) -> DbError {
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

    fn set_protocol(&mut self, protocol: Protocol) {
        self.protocol = protocol;
    }

    fn set_fetch_size(&mut self, rows: u32) {
        self.fetch_size = rows;
    }

    fn prepare(&mut self, sql: &str, n_params: usize, parts: &[String]) -> DbResult<Vec<String>> {
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
        let columns: Vec<String> = stmt.columns().iter().map(|c| c.name().to_owned()).collect();
        let types = stmt.params().to_vec();
        // Dropping a Statement has tokio-postgres close it with the next request.
        let stmt = (self.protocol == Protocol::Prepared).then_some(stmt);
        self.stmts.push(Prepared {
            stmt,
            types,
            kinds,
            text: sql.to_owned(),
            parts: parts.to_vec(),
            returns_rows: !columns.is_empty(),
        });
        Ok(columns)
    }

    fn prepare_compound(&mut self, parts: &[String], _statements: &[String]) -> DbResult<()> {
        // Commits are counted from the server's ReadyForQuery status, whatever the text.
        if self.protocol != Protocol::Simple {
            return Err(DbError::new(
                Status::Error,
                None,
                "statements joined with \\; need the simple protocol".to_string(),
            ));
        }
        self.stmts.push(Prepared {
            stmt: None,
            types: Vec::new(),
            kinds: Vec::new(),
            text: parts.concat(),
            parts: parts.to_vec(),
            returns_rows: false,
        });
        Ok(())
    }

    fn execute(&mut self, stmt: usize, values: &[Value], into: Option<Store<'_>>) -> DbResult<u64> {
        if let Some(queued) = self.pipeline.as_mut() {
            // The script's parser keeps \gset and \aset out of pipelines.
            debug_assert!(into.is_none());
            queued.push((stmt, values.to_vec()));
            return Ok(0);
        }
        if self.protocol == Protocol::Simple {
            return self.execute_simple(stmt, values, into);
        }
        if self.fetch_size > 0 && self.stmts[stmt].returns_rows {
            return self.execute_portal(stmt, values, into);
        }
        let Prepared {
            stmt,
            types,
            kinds,
            text,
            ..
        } = &self.stmts[stmt];
        let client = self.client.as_ref().expect("open");
        self.params.clear();
        for (i, (k, v)) in kinds.iter().zip(values).enumerate() {
            self.params.push(convert(*k, *v).map_err(|m| {
                DbError::new(Status::Script, None, format!("parameter ${}: {m}", i + 1))
            })?);
        }
        let n = self.params.len();
        if self.protocol == Protocol::Extended {
            // An unnamed statement parsed, planned and run in one round trip, as
            // libpq's PQexecParams (pgbench -M extended); the types are the ones
            // the server inferred at prepare time.
            let typed = self
                .params
                .iter()
                .zip(types)
                .map(|(p, t)| (p as &(dyn ToSql + Sync), t.clone()));
            let q = client.query_typed_raw(text, typed);
            return run(&self.driver, &mut self.conn, async move {
                drain(q.await?, into).await
            })
            .map_err(|e| self.classify(e));
        }
        let stmt = stmt
            .as_ref()
            .expect("prepared protocol keeps its statements");
        if let Some(into) = into {
            let refs = self.params.iter().map(|p| p as &(dyn ToSql + Sync));
            let q = client.query_raw(stmt, refs);
            return run(&self.driver, &mut self.conn, async move {
                drain(q.await?, Some(into)).await
            })
            .map_err(|e| self.classify(e));
        }
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
        r.map(|_| 0).map_err(|e| self.classify(e))
    }

    fn pipeline_start(&mut self) -> DbResult<()> {
        if self.protocol == Protocol::Simple {
            return Err(DbError::new(
                Status::Script,
                None,
                "pipelines need the extended or prepared protocol".to_string(),
            ));
        }
        self.pipeline = Some(Vec::new());
        Ok(())
    }

    fn pipeline_sync(&mut self, end: bool) -> DbResult<()> {
        let queued = if end {
            self.pipeline.take().unwrap_or_default()
        } else {
            self.pipeline
                .as_mut()
                .map(std::mem::take)
                .unwrap_or_default()
        };
        self.send_pipelined(queued)
    }

    fn rollback_if_needed(&mut self) -> DbResult<()> {
        self.pipeline = None;
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
        let mut out = vec![(
            "server_commits",
            self.driver.io.commits.load(Relaxed) as i64,
        )];
        let received = self.driver.io.received.load(Relaxed) - self.received_before;
        out.push(("bytes_received", received as i64));
        if let Some(tls) = self.driver.io.negotiated.get() {
            out.push((tls, 1));
        }
        if self.copied != (0, 0) {
            out.push(("copy_rows", self.copied.0));
            out.push(("copy_bytes", self.copied.1));
        }
        out
    }

    fn reset_counters(&mut self) {
        self.copied = (0, 0);
        self.received_before = self.driver.io.received.load(Relaxed);
    }

    fn copy_in(
        &mut self,
        spec: &crate::copy::CopySpec,
        range: Option<(i64, i64)>,
    ) -> DbResult<u64> {
        use crate::backend::copy_failed;
        use futures_util::SinkExt;
        let mut input = spec.open(range).map_err(copy_failed)?;
        let client = self.client.as_ref().expect("open");
        let sql = spec.copy_sql();
        // The file goes to the server as it is, in chunks, as psql's \\copy sends it.
        let mut read_error: Option<String> = None;
        let mut bytes = 0i64;
        let load = async {
            let sink = client.copy_in::<_, bytes::Bytes>(&sql).await?;
            let mut sink = std::pin::pin!(sink);
            loop {
                let mut chunk = vec![0u8; 256 * 1024];
                let n = match input.read(&mut chunk) {
                    Ok(n) => n,
                    Err(e) => {
                        read_error = Some(format!("cannot read the file: {e}"));
                        // Dropping the sink without finishing makes the server abort the COPY.
                        return Ok(0);
                    }
                };
                if n == 0 {
                    break;
                }
                chunk.truncate(n);
                bytes += n as i64;
                sink.send(bytes::Bytes::from(chunk)).await?;
            }
            sink.as_mut().finish().await
        };
        let rows = run(&self.driver, &mut self.conn, load).map_err(|e| self.classify(e))?;
        if let Some(m) = read_error {
            return Err(copy_failed(m));
        }
        self.copied.0 += rows as i64;
        self.copied.1 += bytes;
        Ok(rows)
    }

    fn query_text(&mut self, sql: &str) -> DbResult<Vec<Vec<Option<String>>>> {
        let client = self.client.as_ref().expect("open");
        let msgs = run(&self.driver, &mut self.conn, client.simple_query(sql))
            .map_err(|e| self.classify(e))?;
        Ok(text_rows(msgs))
    }
}

impl PgSession {
    /// The statements of a pipeline, all sent before any result is awaited:
    /// tokio-postgres writes requests in the order their futures are first
    /// polled and matches the answers in that order, so polling them
    /// together pipelines them. The driver ends each statement with a Sync of
    /// its own, where pgbench sends one per `\syncpipeline`/`\endpipeline`
    /// and so makes what lies between one implicit transaction; outside the
    /// script's transaction the engine sends BEGIN and COMMIT around them in
    /// the same pipeline, so that a failing statement aborts the rest and
    /// commits nothing, as in pgbench. The first error is returned.
    fn send_pipelined(&mut self, queued: Vec<(usize, Vec<Value>)>) -> DbResult<()> {
        if queued.is_empty() {
            return Ok(());
        }
        let mut bound: Vec<Vec<Param>> = Vec::with_capacity(queued.len());
        for (stmt, values) in &queued {
            let mut params = Vec::with_capacity(values.len());
            for (i, (k, v)) in self.stmts[*stmt].kinds.iter().zip(values).enumerate() {
                params.push(convert(*k, *v).map_err(|m| {
                    DbError::new(Status::Script, None, format!("parameter ${}: {m}", i + 1))
                })?);
            }
            bound.push(params);
        }
        let wrap = self.driver.io.txn_status.load(Relaxed) == b'I';
        let client = self.client.as_ref().expect("open");
        let stmts = &self.stmts;
        let sent = queued.iter().zip(&bound).map(|((stmt, _), params)| {
            let prepared = &stmts[*stmt];
            async move {
                let refs = params.iter().map(|p| p as &(dyn ToSql + Sync));
                match &prepared.stmt {
                    Some(statement) => client.execute_raw(statement, refs).await.map(|_| ()),
                    None => {
                        let typed = refs.zip(prepared.types.iter().cloned());
                        let rows = client.query_typed_raw(&prepared.text, typed).await?;
                        drain(rows, None).await.map(|_| ())
                    }
                }
            }
        });
        let all = async {
            let begin = wrap.then(|| client.batch_execute("BEGIN"));
            let commit = async {
                if wrap {
                    // In an aborted transaction the server answers COMMIT with ROLLBACK.
                    client.batch_execute("COMMIT").await
                } else {
                    Ok(())
                }
            };
            let (began, results, committed) = futures_util::future::join3(
                async {
                    match begin {
                        Some(b) => b.await,
                        None => Ok(()),
                    }
                },
                futures_util::future::join_all(sent),
                commit,
            )
            .await;
            began?;
            for r in results {
                r?;
            }
            committed
        };
        let r = run(&self.driver, &mut self.conn, all);
        r.map_err(|e| self.classify(e))
    }

    /// A result `fetch_size` rows per round trip, as JDBC's `setFetchSize`:
    /// the statement is bound to a portal, which each Execute asks for the
    /// next rows of. A portal lives until its transaction ends, so outside
    /// the script's own transaction the engine brackets it in BEGIN and
    /// COMMIT; inside one, the BEGIN that tokio-postgres sends to open its
    /// transaction object is one the server ignores with a warning.
    fn execute_portal(
        &mut self,
        stmt: usize,
        values: &[Value],
        into: Option<Store<'_>>,
    ) -> DbResult<u64> {
        let in_transaction = self.driver.io.txn_status.load(Relaxed) != b'I';
        let rows = i32::try_from(self.fetch_size).unwrap_or(i32::MAX);
        let Prepared {
            stmt, kinds, text, ..
        } = &self.stmts[stmt];
        self.params.clear();
        for (i, (k, v)) in kinds.iter().zip(values).enumerate() {
            self.params.push(convert(*k, *v).map_err(|m| {
                DbError::new(Status::Script, None, format!("parameter ${}: {m}", i + 1))
            })?);
        }
        let params = &self.params;
        let client = self.client.as_mut().expect("open");
        let mut into = into;
        let fetch = async move {
            let tx = client.transaction().await?;
            let refs = params.iter().map(|p| p as &(dyn ToSql + Sync));
            let portal = match stmt {
                Some(prepared) => tx.bind_raw(prepared, refs).await?,
                // Extended: an unnamed statement would not outlive the portal's Sync.
                None => tx.bind_raw(text.as_str(), refs).await?,
            };
            let mut n = 0u64;
            loop {
                let part = tx.query_portal_raw(&portal, rows).await?;
                let mut part = std::pin::pin!(part);
                let mut got = 0u64;
                while let Some(row) = part.try_next().await? {
                    got += 1;
                    if let Some(into) = into.as_mut() {
                        store(&row, into)?;
                    }
                }
                n += got;
                if got < rows as u64 {
                    break;
                }
            }
            drop(portal);
            if in_transaction {
                // The script's transaction goes on; dropping the object would roll it back.
                std::mem::forget(tx);
            } else {
                tx.commit().await?;
            }
            Ok(n)
        };
        let r = run(&self.driver, &mut self.conn, fetch);
        r.map_err(|e| self.classify(e))
    }

    /// pgbench -M simple: the values written into the statement's text, sent
    /// as one Query message, parsed and planned by the server every time.
    fn execute_simple(
        &mut self,
        stmt: usize,
        values: &[Value],
        into: Option<Store<'_>>,
    ) -> DbResult<u64> {
        inline_values(&self.stmts[stmt].parts, values, &mut self.inline);
        let client = self.client.as_ref().expect("open");
        let Some(into) = into else {
            return run(
                &self.driver,
                &mut self.conn,
                client.batch_execute(&self.inline),
            )
            .map(|_| 0)
            .map_err(|e| self.classify(e));
        };
        let msgs = run(
            &self.driver,
            &mut self.conn,
            client.simple_query(&self.inline),
        )
        .map_err(|e| self.classify(e))?;
        let mut n = 0;
        for m in msgs {
            if let SimpleQueryMessage::Row(row) = m {
                n += 1;
                for &(col, slot) in into.map {
                    into.slots[slot] = value_from_text(row.get(col))?;
                }
            }
        }
        Ok(n)
    }
}

/// Reads every row of a result; with `into`, stores the mapped columns of each.
async fn drain(rows: RowStream, into: Option<Store<'_>>) -> Result<u64, tokio_postgres::Error> {
    let mut rows = std::pin::pin!(rows);
    let mut n = 0;
    let mut into = into;
    while let Some(row) = rows.try_next().await? {
        n += 1;
        if let Some(into) = into.as_mut() {
            store(&row, into)?;
        }
    }
    Ok(n)
}

fn store(row: &Row, into: &mut Store<'_>) -> Result<(), tokio_postgres::Error> {
    for &(col, slot) in into.map {
        into.slots[slot] = row.try_get::<_, Num>(col)?.0;
    }
    Ok(())
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

//! PostgreSQL on tokio-postgres: a request is one execution of a transaction script (pgbench's
//! format, `pgscript`), its statements prepared once per connection and sent pipelined — every
//! statement of the transaction in one round trip, as the extended query protocol allows.
//!
//! The target is a libpq URL: several hosts and `target_session_attrs=read-write` make a broken
//! connection reconnect to whichever node is primary now. Errors by kind: `auth` (SQLSTATE class
//! 28), `serialization` (40001, 40P01: retryable), `read_only` (25006: the node is a standby; the
//! connection is dropped so the next request finds the primary), `sql:CLASS` (any other server
//! error, by its SQLSTATE class: `sql:42` for a missing table; the connection stays), `reset` (the
//! server went away), `connect`, `timeout`. The server's message for the last error is kept for
//! the executor (`take_error_detail`), so a result can show it beside its kind.

use super::pgscript::Script;
use super::{Driver, ErrorKind, Reply, SqlClass};
use crate::plan::{PlanError, RequestClass};
use crate::schedule::Rng;
use futures_util::future::join_all;
use std::cell::{Cell, RefCell};
use std::str::FromStr;
use std::time::Duration;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::{Client, Config, NoTls, Statement};

pub struct PostgresDriver {
    config: Config,
    scripts: Vec<Script>,
    scale: i64,
    seed: u64,
    connections: Cell<u64>,
    /// The words of the error returned last, until the executor takes them.
    last_error: RefCell<Option<String>>,
}

pub struct PostgresConn {
    client: Client,
    /// Each class's statements, prepared on first use.
    prepared: Vec<Option<Vec<Statement>>>,
    rng: Rng,
}

impl PostgresDriver {
    /// A driver for one target; `field` names it in plan errors (`target`, `extra_targets[3]`).
    pub fn new(
        field: &str,
        url: &str,
        password: Option<&str>,
        scale: i64,
        classes: &[RequestClass],
        timeout: Duration,
        seed: u64,
    ) -> Result<PostgresDriver, PlanError> {
        let mut config = Config::from_str(url)
            .map_err(|e| PlanError { field: format!("{field}.url"), message: e.to_string() })?;
        if let Some(p) = password {
            config.password(p);
        }
        config.connect_timeout(timeout).application_name("caplab");
        let scripts = classes
            .iter()
            .enumerate()
            .map(|(i, c)| {
                Script::parse(&c.body)
                    .map_err(|m| PlanError { field: format!("requests[{i}].body"), message: m })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(PostgresDriver {
            config,
            scripts,
            scale,
            seed,
            connections: Cell::new(0),
            last_error: RefCell::new(None),
        })
    }

    async fn prepare(&self, client: &Client, class: usize) -> Result<Vec<Statement>, tokio_postgres::Error> {
        let mut out = Vec::with_capacity(self.scripts[class].statements.len());
        for s in &self.scripts[class].statements {
            // Every variable is an integer: bound as bigint, which compares and assigns to int columns.
            out.push(client.prepare_typed(&s.sql, &vec![Type::INT8; s.params.len()]).await?);
        }
        Ok(out)
    }

    /// Keeps an error's words for the executor: the server's message and SQLSTATE, or what the
    /// client library says followed by its causes ("error connecting to server: Connection
    /// refused (os error 111)"): the library's own words name only the step that failed.
    fn keep(&self, e: &tokio_postgres::Error) {
        let words = match e.as_db_error() {
            Some(db) => format!("{} (SQLSTATE {})", db.message(), db.code().code()),
            None => with_causes(e),
        };
        *self.last_error.borrow_mut() = Some(hide_password(words, self.config.get_password()));
    }

    fn failed(&self, e: &tokio_postgres::Error) -> Result<Reply, ErrorKind> {
        self.keep(e);
        outcome(kind_of(e))
    }
}

/// An error's words and those of each error under it, joined by colons, each said once.
fn with_causes(e: &(dyn std::error::Error + 'static)) -> String {
    let mut words = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let more = c.to_string();
        if !words.contains(&more) {
            words = format!("{words}: {more}");
        }
        cause = c.source();
    }
    words
}

/// The words with the password, should any message ever quote it, replaced: results are shown
/// and stored, a password never.
fn hide_password(words: String, password: Option<&[u8]>) -> String {
    match password.and_then(|p| std::str::from_utf8(p).ok()).filter(|p| !p.is_empty()) {
        Some(p) if words.contains(p) => words.replace(p, "********"),
        _ => words,
    }
}

/// What a server error or a broken connection means for the load.
fn kind_of(e: &tokio_postgres::Error) -> ErrorKind {
    if let Some(code) = e.code() {
        let class = &code.code()[..2];
        return match code {
            _ if class == "28" => ErrorKind::Auth,
            c if *c == SqlState::T_R_SERIALIZATION_FAILURE || *c == SqlState::T_R_DEADLOCK_DETECTED => {
                ErrorKind::Serialization
            }
            c if *c == SqlState::READ_ONLY_SQL_TRANSACTION => ErrorKind::ReadOnly,
            _ if class == "57" || class == "08" => ErrorKind::Reset, // shutdown, crash, connection
            _ => ErrorKind::Sql(SqlClass::of(code.code())),
        };
    }
    if e.is_closed() {
        ErrorKind::Reset
    } else {
        ErrorKind::Io
    }
}

impl Driver for PostgresDriver {
    type Conn = PostgresConn;

    async fn connect(&self) -> Result<PostgresConn, ErrorKind> {
        let (client, connection) = self.config.connect(NoTls).await.map_err(|e| {
            self.keep(&e);
            match kind_of(&e) {
                ErrorKind::Auth => ErrorKind::Auth,
                _ => ErrorKind::Connect,
            }
        })?;
        tokio::task::spawn_local(async move {
            let _ = connection.await; // ends when the client is dropped or the server goes away
        });
        let n = self.connections.get();
        self.connections.set(n + 1);
        Ok(PostgresConn {
            client,
            prepared: vec![None; self.scripts.len()],
            rng: Rng::new(self.seed ^ n.wrapping_mul(0x9E37_79B9)),
        })
    }

    async fn exchange(&self, conn: &mut PostgresConn, class: usize, seq: u64) -> Result<Reply, ErrorKind> {
        if conn.prepared[class].is_none() {
            match self.prepare(&conn.client, class).await {
                Ok(statements) => conn.prepared[class] = Some(statements),
                Err(e) => return self.failed(&e),
            }
        }
        let statements = conn.prepared[class].as_ref().expect("prepared above");
        let values = match self.scripts[class].draw(&mut conn.rng, self.scale, seq) {
            Ok(v) => v,
            Err(message) => {
                // The script itself failed (an empty random range): SQLSTATE's data exception.
                *self.last_error.borrow_mut() = Some(format!("script: {message}"));
                return Ok(Reply { error: Some(ErrorKind::Sql(SqlClass(*b"22"))), keep_alive: true });
            }
        };
        let params: Vec<Vec<&(dyn ToSql + Sync)>> =
            values.iter().map(|vs| vs.iter().map(|v| v as &(dyn ToSql + Sync)).collect()).collect();
        // All statements issued at once: tokio-postgres pipelines them on the one connection.
        let replies = join_all(statements.iter().zip(&params).map(|(s, p)| conn.client.query(s, p))).await;
        match replies.iter().find_map(|r| r.as_ref().err()) {
            None => Ok(Reply { error: None, keep_alive: true }),
            Some(e) => self.failed(e),
        }
    }

    fn take_error_detail(&self) -> Option<String> {
        self.last_error.borrow_mut().take()
    }
}

/// A server error the connection survives is a failed reply; anything else drops the connection.
fn outcome(kind: ErrorKind) -> Result<Reply, ErrorKind> {
    match kind {
        ErrorKind::Sql(_) | ErrorKind::Serialization => Ok(Reply { error: Some(kind), keep_alive: true }),
        other => Err(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn driver(url: &str) -> PostgresDriver {
        let class = RequestClass {
            name: "q".into(),
            weight: 1.0,
            method: String::new(),
            path: None,
            headers: Vec::new(),
            body: "SELECT 1;".into(),
            template: false,
        };
        PostgresDriver::new("target", url, None, 1, &[class], Duration::from_secs(5), 1).unwrap()
    }

    #[test]
    fn a_refused_connection_keeps_the_reason_but_never_the_password() {
        // A port that was just free: nothing listens there.
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let d = driver(&format!("postgresql://bench:Sekr1t-pw@127.0.0.1:{port}/bench"));
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let kind = runtime.block_on(d.connect()).err();
        assert_eq!(kind, Some(ErrorKind::Connect));
        let words = d.take_error_detail().unwrap();
        assert!(words.to_lowercase().contains("connection refused"), "{words}");
        assert!(!words.contains("Sekr1t-pw"), "{words}");
    }

    #[test]
    fn causes_are_joined_and_a_quoted_password_is_hidden() {
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "Connection refused");
        let outer = std::io::Error::other(io);
        assert_eq!(with_causes(&outer), "Connection refused");
        let words = hide_password("role bench pw=Sekr1t failed".into(), Some(b"Sekr1t"));
        assert_eq!(words, "role bench pw=******** failed");
        assert_eq!(hide_password("no secret".into(), Some(b"")), "no secret");
    }
}

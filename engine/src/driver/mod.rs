//! Protocol drivers: each turns one request into one reply, and knows nothing of timing or
//! statistics (the executors own the clock, `stats` owns aggregation).

pub mod http;
pub mod imap;
pub mod mail;
mod pgscript;
pub mod postgres;
pub mod smtp;
pub mod tcp;
mod template;
pub mod tls;
mod wire;

use std::cell::RefCell;
use std::future::Future;
use std::io;

pub use template::Template;
use tls::{Handshake, Stream, TlsClient};

/// Why a request failed. Statistics count errors by kind (`name`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// Connection refused or unreachable.
    Connect,
    Timeout,
    /// The peer reset or closed the connection before a whole reply arrived.
    Reset,
    /// The reply could not be parsed.
    Protocol,
    Http4xx,
    Http5xx,
    /// Any other I/O error.
    Io,
    /// The server refused the credentials (PostgreSQL SQLSTATE class 28).
    Auth,
    /// A server error the connection survives (a PostgreSQL error other than those below), by
    /// its SQLSTATE class: `42` for a syntax error or a missing table, `23` for a broken constraint.
    Sql(SqlClass),
    /// A serialization failure or deadlock: the transaction may be retried.
    Serialization,
    /// A write sent to a read-only node (a standby).
    ReadOnly,
    /// The TLS handshake failed: most often a certificate the client does not trust.
    Tls,
    /// An SMTP reply of class 4xx (transient: try later) or 5xx (permanent) to a command.
    Smtp4xx,
    Smtp5xx,
    /// An IMAP command answered NO (refused) or BAD (not understood).
    ImapNo,
    ImapBad,
}

/// A SQLSTATE class: the first two characters of a server's error code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SqlClass(pub [u8; 2]);

impl SqlClass {
    /// The class of a five-character SQLSTATE code (`42P01` → `42`).
    pub fn of(code: &str) -> SqlClass {
        let b = code.as_bytes();
        SqlClass([b.first().copied().unwrap_or(b'?'), b.get(1).copied().unwrap_or(b'?')])
    }
}

impl ErrorKind {
    /// The kind's name in results: `connect`, `timeout` … and `sql:42` for SQL errors by class.
    pub fn name(self) -> String {
        let simple = match self {
            ErrorKind::Connect => "connect",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Reset => "reset",
            ErrorKind::Protocol => "protocol",
            ErrorKind::Http4xx => "http_4xx",
            ErrorKind::Http5xx => "http_5xx",
            ErrorKind::Io => "io",
            ErrorKind::Auth => "auth",
            ErrorKind::Sql(SqlClass(class)) => {
                return format!("sql:{}", String::from_utf8_lossy(&class));
            }
            ErrorKind::Serialization => "serialization",
            ErrorKind::ReadOnly => "read_only",
            ErrorKind::Tls => "tls",
            ErrorKind::Smtp4xx => "smtp_4xx",
            ErrorKind::Smtp5xx => "smtp_5xx",
            ErrorKind::ImapNo => "imap_no",
            ErrorKind::ImapBad => "imap_bad",
        };
        simple.to_string()
    }

    /// Classifies an I/O error raised while connecting.
    pub fn of_connect(e: &io::Error) -> ErrorKind {
        match e.kind() {
            io::ErrorKind::TimedOut => ErrorKind::Timeout,
            _ => ErrorKind::Connect,
        }
    }

    /// Classifies an I/O error raised during an exchange on an open connection.
    pub fn of_exchange(e: &io::Error) -> ErrorKind {
        match e.kind() {
            io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::BrokenPipe
            | io::ErrorKind::UnexpectedEof => ErrorKind::Reset,
            io::ErrorKind::TimedOut => ErrorKind::Timeout,
            io::ErrorKind::InvalidData => ErrorKind::Protocol,
            _ => ErrorKind::Io,
        }
    }
}

/// A complete reply. `error` is set for replies that arrived whole but report failure (HTTP
/// 4xx/5xx); the connection stays usable unless `keep_alive` is false.
#[derive(Debug, Clone, Copy)]
pub struct Reply {
    pub error: Option<ErrorKind>,
    pub keep_alive: bool,
}

/// One protocol. A driver value is built once per worker thread from the plan; connections are
/// owned by the executor, which times and records every call.
pub trait Driver {
    type Conn;

    fn connect(&self) -> impl Future<Output = Result<Self::Conn, ErrorKind>>;

    /// Sends request `class` (with sequence number `seq` for templates) and reads its reply.
    /// An `Err` means the connection is no longer usable.
    fn exchange(
        &self,
        conn: &mut Self::Conn,
        class: usize,
        seq: u64,
    ) -> impl Future<Output = Result<Reply, ErrorKind>>;

    /// The server's words for the error this driver returned last, if it keeps them (a
    /// PostgreSQL error's message); taking them clears them. The executor asks right after an
    /// error, before anything else runs on its thread, so the words belong to that error.
    fn take_error_detail(&self) -> Option<String> {
        None
    }

    /// The TLS handshake a connection just opened by `connect` paid for; None without TLS.
    fn handshake(&self, _conn: &Self::Conn) -> Option<Handshake> {
        None
    }

    /// Moves the steps the connection ran since last asked (a mail session's connect, auth,
    /// envelope, data), each with how long it took, into `out`: per-step latency for drivers
    /// whose request is a session of several exchanges. The executor asks after each request.
    fn take_steps(&self, _conn: &mut Self::Conn, _out: &mut Vec<Step>) {}
}

/// One timed step of a request: its name and how long it took.
pub type Step = (&'static str, std::time::Duration);

/// Opens a TCP connection with Nagle off: requests are small and latency matters.
pub async fn connect_tcp(addr: std::net::SocketAddr) -> Result<tokio::net::TcpStream, ErrorKind> {
    let stream = tokio::net::TcpStream::connect(addr).await.map_err(|e| ErrorKind::of_connect(&e))?;
    stream.set_nodelay(true).map_err(|e| ErrorKind::of_connect(&e))?;
    Ok(stream)
}

/// Opens a connection's stream: TCP, then the TLS handshake when the target has TLS. A failed
/// handshake leaves rustls's words in `detail` for `Driver::take_error_detail`.
pub async fn open_stream(
    addr: std::net::SocketAddr,
    tls: Option<&TlsClient>,
    detail: &RefCell<Option<String>>,
) -> Result<(Stream, Option<Handshake>), ErrorKind> {
    let tcp = connect_tcp(addr).await?;
    match tls {
        None => Ok((Stream::Plain(tcp), None)),
        Some(client) => match client.handshake(tcp).await {
            Ok((stream, handshake)) => Ok((stream, Some(handshake))),
            Err((kind, words)) => {
                *detail.borrow_mut() = Some(words);
                Err(kind)
            }
        },
    }
}

//! IMAP (`imap://`, STARTTLS when wanted; `imaps://`, TLS from the first byte): one request reads
//! user `{user}`'s inbox. A new connection reads the greeting and upgrades with STARTTLS when the
//! plan asks; its first request logs in (LOGIN); every request then SELECTs INBOX and FETCHes
//! the newest `fetch_last` messages (or all) with `fetch_items`; with `reuse` the session stays
//! logged in for the next read (a polling client), else LOGOUT ends it.
//!
//! Responses are framed by lines and literals (`{n}` then n bytes), read in place and skipped
//! without being kept, so a large message costs no memory. A tagged NO is `imap_no`, BAD is
//! `imap_bad`, a refused LOGIN is `auth`; a FETCH that returns fewer messages than SELECT
//! announced is a `protocol` error, so a completed read has fetched every message it asked for.

use super::mail::{upgrade, Mailboxes};
use super::tls::{Handshake, Stream, TlsClient};
use super::wire::RecvBuf;
use super::{open_stream, Driver, ErrorKind, Reply, Step};
use crate::plan::MailOptions;
use std::cell::RefCell;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;
use tokio::io::AsyncWriteExt;

pub struct ImapDriver {
    addr: SocketAddr,
    /// `imaps://`: TLS from the first byte.
    implicit: Option<TlsClient>,
    /// `imap://` with STARTTLS: the client to upgrade with, and whether the server must offer it.
    starttls: Option<(TlsClient, bool)>,
    mailboxes: Arc<Mailboxes>,
    fetch_last: u32,
    fetch_items: String,
    reuse: bool,
    last_error: RefCell<Option<String>>,
}

pub struct ImapConn {
    stream: Stream,
    recv: RecvBuf,
    handshake: Option<Handshake>,
    /// The user this session logged in as.
    user: Option<u32>,
    tag: u32,
    /// Steps timed since the executor last asked: `connect` (TCP, TLS, greeting, STARTTLS),
    /// `login`, `select`, `fetch`.
    steps: Vec<Step>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    Ok,
    No,
    Bad,
}

/// What one response line says, as far as the driver cares.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Line {
    /// The command's tagged completion: its status and the whole line (the server's words).
    Done(Status, String),
    /// `* n EXISTS`
    Exists(u32),
    /// `* n FETCH …`
    Fetch,
    /// `* CAPABILITY …` (or a greeting's `[CAPABILITY …]`): whether STARTTLS is offered.
    Capability(bool),
    /// `* BYE …`: the server is closing the connection.
    Bye(String),
    /// Anything else untagged (`* FLAGS`, `* OK [UIDVALIDITY …]`, `+ …`).
    Other,
}

/// Classifies one response line (without its CRLF) of the command tagged `tag`.
fn classify(line: &[u8], tag: &str) -> Result<Line, String> {
    let text = || String::from_utf8_lossy(&line[..line.len().min(200)]).into_owned();
    if let Some(rest) = line.strip_prefix(tag.as_bytes()).and_then(|r| r.strip_prefix(b" ")) {
        let word = rest.split(|&b| b == b' ').next().unwrap_or_default();
        let status = match word.to_ascii_uppercase().as_slice() {
            b"OK" => Status::Ok,
            b"NO" => Status::No,
            b"BAD" => Status::Bad,
            _ => return Err(format!("a tagged response without OK, NO or BAD: {:?}", text())),
        };
        return Ok(Line::Done(status, text()));
    }
    let Some(rest) = line.strip_prefix(b"* ") else {
        return match line.first() {
            Some(b'+') => Ok(Line::Other),
            _ => Err(format!("not a response to {tag}: {:?}", text())),
        };
    };
    let upper = rest.to_ascii_uppercase();
    let mut words = upper.split(|&b| b == b' ');
    let first = words.next().unwrap_or_default();
    let offers_starttls = || upper.windows(9).any(|w| w == b" STARTTLS") || upper.ends_with(b"STARTTLS]");
    Ok(match first {
        b"BYE" => Line::Bye(text()),
        b"CAPABILITY" => Line::Capability(offers_starttls()),
        b"OK" | b"PREAUTH" if upper.windows(12).any(|w| w == b"[CAPABILITY ") => {
            Line::Capability(offers_starttls())
        }
        n if !n.is_empty() && n.iter().all(u8::is_ascii_digit) => match words.next() {
            Some(b"EXISTS") => {
                Line::Exists(std::str::from_utf8(n).ok().and_then(|s| s.parse().ok()).unwrap_or(0))
            }
            Some(b"FETCH") => Line::Fetch,
            _ => Line::Other,
        },
        _ => Line::Other,
    })
}

/// The length of the literal a line ends with (`… {123}` or LITERAL+'s `{123+}`), if it does:
/// that many bytes follow the line's CRLF before the response goes on.
fn literal_len(line: &[u8]) -> Result<Option<usize>, String> {
    let Some(inner) = line.strip_suffix(b"}") else { return Ok(None) };
    let Some(open) = inner.iter().rposition(|&b| b == b'{') else { return Ok(None) };
    let digits = &inner[open + 1..];
    let digits = digits.strip_suffix(b"+").unwrap_or(digits);
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return Ok(None);
    }
    let n = std::str::from_utf8(digits).expect("digits").parse::<usize>();
    n.map(Some).map_err(|_| format!("a literal too long to be true: {{{}}}", String::from_utf8_lossy(digits)))
}

/// A string as an IMAP quoted string (`"` and `\` escaped).
fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

/// The sequence set of the newest `last` of `exists` messages (`1:*` for all of them).
fn newest(exists: u32, last: u32) -> String {
    if last == 0 || last >= exists {
        "1:*".into()
    } else {
        format!("{}:*", exists - last + 1)
    }
}

/// What a command's responses said.
#[derive(Debug, Default)]
struct Outcome {
    status: Option<Status>,
    words: String,
    exists: Option<u32>,
    fetched: u32,
    starttls: bool,
}

impl ImapDriver {
    pub fn new(
        addr: SocketAddr,
        implicit: Option<TlsClient>,
        starttls: Option<(TlsClient, bool)>,
        mailboxes: Arc<Mailboxes>,
        options: &MailOptions,
    ) -> ImapDriver {
        ImapDriver {
            addr,
            implicit,
            starttls,
            mailboxes,
            fetch_last: options.fetch_last,
            fetch_items: options.fetch_items.clone(),
            reuse: options.reuse,
            last_error: RefCell::new(None),
        }
    }

    fn detail(&self, words: String) {
        *self.last_error.borrow_mut() = Some(words);
    }

    /// Reads responses up to the one tagged `tag` (with `None`, the greeting: one untagged line),
    /// skipping literals as they come.
    async fn read(&self, conn: &mut ImapConn, tag: Option<&str>) -> Result<Outcome, ErrorKind> {
        let io = |e: std::io::Error| ErrorKind::of_exchange(&e);
        let mut out = Outcome::default();
        loop {
            let end = conn.recv.until(&mut conn.stream, b"\r\n").await.map_err(io)?;
            let line = &conn.recv.data()[..end - 2];
            let parsed = match tag {
                Some(tag) => classify(line, tag),
                None => greeting(line),
            };
            let mut literal = literal_len(line);
            conn.recv.consume(end);
            let parsed = parsed.map_err(|words| {
                self.detail(words);
                ErrorKind::Protocol
            })?;
            loop {
                match literal {
                    Ok(None) => break,
                    Ok(Some(n)) => {
                        conn.recv.skip(&mut conn.stream, n).await.map_err(io)?;
                        let end = conn.recv.until(&mut conn.stream, b"\r\n").await.map_err(io)?;
                        literal = literal_len(&conn.recv.data()[..end - 2]);
                        conn.recv.consume(end);
                    }
                    Err(words) => {
                        self.detail(words);
                        return Err(ErrorKind::Protocol);
                    }
                }
            }
            match parsed {
                Line::Done(status, words) => {
                    out.status = Some(status);
                    out.words = words;
                    return Ok(out);
                }
                Line::Exists(n) => out.exists = Some(n),
                Line::Fetch => out.fetched += 1,
                Line::Capability(starttls) => out.starttls |= starttls,
                Line::Bye(words) if tag.is_none() => {
                    self.detail(format!("greeting: {words}"));
                    return Err(ErrorKind::Reset);
                }
                Line::Bye(words) => self.detail(format!("the server closed the session: {words}")),
                Line::Other => {}
            }
            if tag.is_none() {
                out.status = Some(Status::Ok);
                return Ok(out);
            }
        }
    }

    /// Sends `command` under a new tag and reads its responses; `step` names it in errors
    /// (never the command itself, which may hold a password).
    async fn command(&self, conn: &mut ImapConn, step: &str, command: &str) -> Result<Outcome, ErrorKind> {
        conn.tag += 1;
        let tag = format!("c{}", conn.tag);
        let line = format!("{tag} {command}\r\n");
        conn.stream.write_all(line.as_bytes()).await.map_err(|e| ErrorKind::of_exchange(&e))?;
        let out = self.read(conn, Some(&tag)).await?;
        if out.status != Some(Status::Ok) {
            self.detail(format!("{step}: {}", out.words));
        }
        Ok(out)
    }

    async fn login(&self, conn: &mut ImapConn, user: u32) -> Result<(), ErrorKind> {
        let login = self.mailboxes.login(user);
        let password = self.mailboxes.password(user).expect("validated: imap:// plans have credentials");
        let command = format!("LOGIN {} {}", quote(login), quote(password));
        let out = self.command(conn, &format!("LOGIN as {login}"), &command).await?;
        match out.status {
            Some(Status::Ok) => {
                conn.user = Some(user);
                Ok(())
            }
            _ => Err(ErrorKind::Auth),
        }
    }
}

/// The greeting line: `* OK`, `* PREAUTH` (with or without capabilities) or `* BYE`.
fn greeting(line: &[u8]) -> Result<Line, String> {
    let refused =
        || format!("not an IMAP greeting: {:?}", String::from_utf8_lossy(&line[..line.len().min(200)]));
    if !line.starts_with(b"* ") {
        return Err(refused());
    }
    match classify(line, "\0")? {
        Line::Other if !line.starts_with(b"* OK") && !line.starts_with(b"* PREAUTH") => Err(refused()),
        parsed => Ok(parsed),
    }
}

fn failure(status: Option<Status>) -> ErrorKind {
    match status {
        Some(Status::Bad) => ErrorKind::ImapBad,
        _ => ErrorKind::ImapNo,
    }
}

impl Driver for ImapDriver {
    type Conn = ImapConn;

    async fn connect(&self) -> Result<ImapConn, ErrorKind> {
        let began = Instant::now();
        let (stream, handshake) = open_stream(self.addr, self.implicit.as_ref(), &self.last_error).await?;
        let mut conn =
            ImapConn { stream, recv: RecvBuf::new(), handshake, user: None, tag: 0, steps: Vec::new() };
        let greeted = self.read(&mut conn, None).await?;
        if let Some((tls, required)) = &self.starttls {
            let offered = greeted.starttls || {
                let out = self.command(&mut conn, "CAPABILITY", "CAPABILITY").await?;
                out.starttls
            };
            if offered {
                let out = self.command(&mut conn, "STARTTLS", "STARTTLS").await?;
                if out.status != Some(Status::Ok) {
                    return Err(failure(out.status));
                }
                if !conn.recv.data().is_empty() {
                    self.detail("the server sent more after agreeing to STARTTLS".into());
                    return Err(ErrorKind::Protocol);
                }
                let (stream, handshake) = upgrade(conn.stream, tls, &self.last_error).await?;
                conn = ImapConn { stream, handshake: Some(handshake), ..conn };
            } else if *required {
                self.detail(format!("{}: the server does not offer STARTTLS", self.addr));
                return Err(ErrorKind::Protocol);
            }
        }
        conn.steps.push(("connect", began.elapsed()));
        Ok(conn)
    }

    fn take_steps(&self, conn: &mut ImapConn, out: &mut Vec<Step>) {
        out.append(&mut conn.steps);
    }

    fn take_error_detail(&self) -> Option<String> {
        self.last_error.borrow_mut().take()
    }

    fn handshake(&self, conn: &ImapConn) -> Option<Handshake> {
        conn.handshake
    }

    async fn exchange(&self, conn: &mut ImapConn, _class: usize, seq: u64) -> Result<Reply, ErrorKind> {
        if conn.user.is_none() {
            let began = Instant::now();
            self.login(conn, self.mailboxes.user_of(seq)).await?;
            conn.steps.push(("login", began.elapsed()));
        }
        let began = Instant::now();
        let selected = self.command(conn, "SELECT INBOX", "SELECT INBOX").await?;
        conn.steps.push(("select", began.elapsed()));
        if selected.status != Some(Status::Ok) {
            return Ok(Reply { error: Some(failure(selected.status)), keep_alive: false });
        }
        let exists = selected.exists.unwrap_or(0);
        if exists > 0 {
            let set = newest(exists, self.fetch_last);
            let step = format!("FETCH {set}");
            let began = Instant::now();
            let fetched = self.command(conn, &step, &format!("FETCH {set} {}", self.fetch_items)).await?;
            conn.steps.push(("fetch", began.elapsed()));
            if fetched.status != Some(Status::Ok) {
                return Ok(Reply { error: Some(failure(fetched.status)), keep_alive: false });
            }
            let wanted = if self.fetch_last == 0 { exists } else { exists.min(self.fetch_last) };
            if fetched.fetched < wanted {
                self.detail(format!("{step}: {} of the {wanted} messages SELECT announced", fetched.fetched));
                return Err(ErrorKind::Protocol);
            }
        }
        if !self.reuse {
            // The read is done: a failed LOGOUT changes nothing.
            let _ = self.command(conn, "LOGOUT", "LOGOUT").await;
        }
        Ok(Reply { error: None, keep_alive: self.reuse })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_tagged_untagged_and_greeting_lines() {
        assert_eq!(
            classify(b"c3 OK [READ-WRITE] Select completed.", "c3").unwrap(),
            Line::Done(Status::Ok, "c3 OK [READ-WRITE] Select completed.".into())
        );
        let no = classify(b"c1 NO [AUTHENTICATIONFAILED] Authentication failed.", "c1").unwrap();
        assert!(matches!(no, Line::Done(Status::No, _)));
        assert!(matches!(classify(b"c1 bad x", "c1").unwrap(), Line::Done(Status::Bad, _)));
        assert!(classify(b"c2 OK done", "c1").is_err(), "another command's tag");
        assert!(classify(b"c1 MAYBE", "c1").is_err());
        assert_eq!(classify(b"* 12 EXISTS", "c1").unwrap(), Line::Exists(12));
        assert_eq!(classify(b"* 3 FETCH (FLAGS (\\Seen) BODY[] {42}", "c1").unwrap(), Line::Fetch);
        assert_eq!(classify(b"* 0 RECENT", "c1").unwrap(), Line::Other);
        assert_eq!(
            classify(b"* CAPABILITY IMAP4rev1 STARTTLS AUTH=PLAIN", "c1").unwrap(),
            Line::Capability(true)
        );
        let g = greeting(b"* OK [CAPABILITY IMAP4rev1 LITERAL+ STARTTLS AUTH=PLAIN] ready.").unwrap();
        assert_eq!(g, Line::Capability(true));
        assert_eq!(
            greeting(b"* OK [CAPABILITY IMAP4rev1 AUTH=PLAIN] ready.").unwrap(),
            Line::Capability(false)
        );
        assert_eq!(greeting(b"* OK ready").unwrap(), Line::Other);
        assert!(matches!(greeting(b"* BYE too many").unwrap(), Line::Bye(_)));
        assert!(greeting(b"220 smtp").unwrap_err().starts_with("not an IMAP greeting"));
    }

    #[test]
    fn finds_literals_at_the_end_of_a_line_only() {
        assert_eq!(literal_len(b"* 1 FETCH (BODY[] {1234}").unwrap(), Some(1234));
        assert_eq!(literal_len(b"* 1 FETCH (BODY[] {7+}").unwrap(), Some(7));
        assert_eq!(literal_len(b"* OK {not a literal}").unwrap(), None);
        assert_eq!(literal_len(b"* OK {12} then text").unwrap(), None);
        assert_eq!(literal_len(b"{}").unwrap(), None);
        assert!(literal_len(b"* 1 FETCH {99999999999999999999999}").is_err());
    }

    #[test]
    fn quotes_and_picks_the_newest_messages() {
        assert_eq!(quote(r#"a"b\c"#), r#""a\"b\\c""#);
        assert_eq!(
            (newest(5, 10), newest(5, 0), newest(50, 10), newest(10, 1)),
            ("1:*".into(), "1:*".into(), "41:*".into(), "10:*".into())
        );
    }

    /// A whole exchange against a scripted server: a literal holding CRLFs and a line that looks
    /// like a tagged reply is skipped, not read as responses.
    #[test]
    fn reads_a_fetch_whose_literals_hold_lines_that_look_like_responses() {
        use tokio::io::AsyncReadExt;
        let body = "c2 OK not really\r\n* 9 EXISTS\r\n";
        let script = format!(
            "* OK [CAPABILITY IMAP4rev1] hi\r\nc1 OK [CAPABILITY IMAP4rev1] Logged in\r\n\
             * 2 EXISTS\r\nc2 OK Select done\r\n\
             * 1 FETCH (BODY[] {{{}}}\r\n{body})\r\n* 2 FETCH (BODY[] {{0}}\r\n)\r\nc3 OK Fetch done\r\n",
            body.len()
        );
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let server = tokio::spawn(async move {
                let (mut s, _) = listener.accept().await.unwrap();
                s.write_all(script.as_bytes()).await.unwrap();
                let mut seen = Vec::new();
                let _ = s.read_to_end(&mut seen).await;
                String::from_utf8(seen).unwrap()
            });
            let options = MailOptions { password: Some(crate::plan::Secret("p\"w".into())), ..MailOptions::default() };
            let driver = ImapDriver::new(addr, None, None, Mailboxes::new(&options).unwrap(), &options);
            let mut conn = driver.connect().await.unwrap();
            let reply = driver.exchange(&mut conn, 0, 0).await.unwrap();
            assert_eq!((reply.error, reply.keep_alive), (None, true));
            assert!(conn.recv.data().is_empty());
            let mut steps = Vec::new();
            driver.take_steps(&mut conn, &mut steps);
            assert_eq!(steps.iter().map(|s| s.0).collect::<Vec<_>>(), ["connect", "login", "select", "fetch"]);
            driver.take_steps(&mut conn, &mut steps);
            assert_eq!(steps.len(), 4, "taken steps are gone from the connection");
            drop(conn);
            let sent = server.await.unwrap();
            assert!(sent.starts_with("c1 LOGIN \"user1\" \"p\\\"w\"\r\nc2 SELECT INBOX\r\nc3 FETCH 1:* (FLAGS BODY.PEEK[])\r\n"), "{sent}");
        });
    }
}

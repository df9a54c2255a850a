//! SMTP (`smtp://`, STARTTLS when wanted; `smtps://`, TLS from the first byte): one request sends
//! one message. A new connection reads the greeting, says EHLO and upgrades with STARTTLS when the
//! plan asks (EHLO again inside TLS); its first request authenticates (AUTH PLAIN, else LOGIN)
//! when the plan gives credentials; then MAIL FROM, RCPT TO and DATA, sent in one write when
//! the server offers PIPELINING, and the message. With `reuse` the session stays for the next
//! message, else QUIT ends it.
//!
//! A reply outside 2xx (354 to DATA) is an error of kind `smtp_4xx` or `smtp_5xx`, with the
//! command and the server's words kept for the result; a refused AUTH is `auth`. A message the
//! server refused after DATA leaves the session usable; any other refusal drops the connection.

use super::mail::{render, upgrade, Mailboxes};
use super::tls::{Handshake, Stream, TlsClient};
use super::wire::RecvBuf;
use super::{open_stream, Driver, ErrorKind, Reply, Step};
use crate::plan::{MailOptions, RequestClass};
use base64::Engine as _;
use std::cell::RefCell;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;
use tokio::io::AsyncWriteExt;

const EHLO: &[u8] = b"EHLO caplab.load\r\n";
/// Padding text: no `-`, so none of the mail system's content signatures match it.
const PAD: &[u8] = b"the quick brown fox jumps over the lazy dog 0123456789 pack my box with five";

pub struct SmtpDriver {
    addr: SocketAddr,
    /// `smtps://`: TLS from the first byte.
    implicit: Option<TlsClient>,
    /// `smtp://` with STARTTLS: the client to upgrade with, and whether the server must offer it.
    starttls: Option<(TlsClient, bool)>,
    mailboxes: Arc<Mailboxes>,
    options: MailOptions,
    /// Each class's body pattern (`{user}`, `{seq}`).
    bodies: Vec<String>,
    last_error: RefCell<Option<String>>,
}

pub struct SmtpConn {
    stream: Stream,
    recv: RecvBuf,
    send: Vec<u8>,
    handshake: Option<Handshake>,
    caps: Capabilities,
    /// AUTH is done once per session (as the user of its first request).
    authenticated: bool,
    /// Steps timed since the executor last asked: `connect` (TCP, TLS, greeting, EHLO, STARTTLS),
    /// `auth`, `envelope` (MAIL, RCPT, DATA to its 354), `data` (the message to its 250).
    steps: Vec<Step>,
}

/// What the server's EHLO reply offers that the driver uses.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Capabilities {
    pipelining: bool,
    starttls: bool,
    auth_plain: bool,
    auth_login: bool,
}

impl Capabilities {
    /// From the lines of an EHLO reply (the first names the server).
    fn of(lines: &[String]) -> Capabilities {
        let mut caps = Capabilities::default();
        for line in lines.iter().skip(1) {
            let upper = line.to_ascii_uppercase();
            let mut words = upper.split([' ', '=']);
            match words.next() {
                Some("PIPELINING") => caps.pipelining = true,
                Some("STARTTLS") => caps.starttls = true,
                Some("AUTH") => {
                    for mechanism in words {
                        caps.auth_plain |= mechanism == "PLAIN";
                        caps.auth_login |= mechanism == "LOGIN";
                    }
                }
                _ => {}
            }
        }
        caps
    }
}

/// One whole SMTP reply: its code and the text of each line.
#[derive(Debug, Clone, PartialEq, Eq)]
struct SmtpReply {
    code: u16,
    lines: Vec<String>,
}

impl SmtpReply {
    fn words(&self) -> String {
        format!("{} {}", self.code, self.lines.join(" / "))
    }
}

/// Parses the reply at the start of `data`: the reply and the bytes it took, or None until the
/// whole of it (its last line, `250 …` after any `250-…`) has arrived.
fn parse_reply(data: &[u8]) -> Result<Option<(SmtpReply, usize)>, String> {
    let mut pos = 0;
    let mut code = None;
    let mut lines = Vec::new();
    loop {
        let Some(nl) = data[pos..].iter().position(|&b| b == b'\n') else { return Ok(None) };
        let raw = &data[pos..pos + nl];
        let line = raw.strip_suffix(b"\r").unwrap_or(raw);
        pos += nl + 1;
        let shown = || String::from_utf8_lossy(&line[..line.len().min(80)]).into_owned();
        if line.len() < 3 || !line[..3].iter().all(u8::is_ascii_digit) {
            return Err(format!("not an SMTP reply line: {:?}", shown()));
        }
        let this = line[..3].iter().fold(0u16, |n, d| n * 10 + u16::from(d - b'0'));
        if code.is_some_and(|c| c != this) {
            return Err(format!("a reply's lines carry different codes: {:?}", shown()));
        }
        code = Some(this);
        let last = match line.get(3) {
            None | Some(b' ') => true,
            Some(b'-') => false,
            Some(_) => return Err(format!("not an SMTP reply line: {:?}", shown())),
        };
        lines.push(String::from_utf8_lossy(line.get(4..).unwrap_or_default()).into_owned());
        if last {
            return Ok(Some((SmtpReply { code: this, lines }, pos)));
        }
    }
}

/// Writes `text` as DATA content: CRLF line ends, a leading `.` doubled, ending in CRLF.
fn stuff(text: &[u8], out: &mut Vec<u8>) {
    let mut lines = text.split(|&b| b == b'\n').peekable();
    while let Some(raw) = lines.next() {
        if raw.is_empty() && lines.peek().is_none() {
            break; // the text ended with a line break
        }
        let line = raw.strip_suffix(b"\r").unwrap_or(raw);
        if line.first() == Some(&b'.') {
            out.push(b'.');
        }
        out.extend_from_slice(line);
        out.extend_from_slice(b"\r\n");
    }
}

/// Pads DATA content that starts at `from` in `out` to `size` bytes with lines of text (within
/// a byte or two: a line is at least its CRLF).
fn pad(out: &mut Vec<u8>, from: usize, size: usize) {
    while out.len() - from + 2 < size {
        let room = size - (out.len() - from) - 2;
        out.extend_from_slice(&PAD[..room.min(PAD.len())]);
        out.extend_from_slice(b"\r\n");
    }
}

impl SmtpDriver {
    pub fn new(
        addr: SocketAddr,
        implicit: Option<TlsClient>,
        starttls: Option<(TlsClient, bool)>,
        mailboxes: Arc<Mailboxes>,
        options: &MailOptions,
        classes: &[RequestClass],
    ) -> SmtpDriver {
        SmtpDriver {
            addr,
            implicit,
            starttls,
            mailboxes,
            options: options.clone(),
            bodies: classes.iter().map(|c| c.body.clone()).collect(),
            last_error: RefCell::new(None),
        }
    }

    fn detail(&self, words: String) {
        *self.last_error.borrow_mut() = Some(words);
    }

    async fn read_reply(&self, conn: &mut SmtpConn) -> Result<SmtpReply, ErrorKind> {
        loop {
            match parse_reply(conn.recv.data()) {
                Ok(Some((reply, used))) => {
                    conn.recv.consume(used);
                    return Ok(reply);
                }
                Ok(None) => conn.recv.fill(&mut conn.stream).await.map_err(|e| ErrorKind::of_exchange(&e))?,
                Err(words) => {
                    self.detail(words);
                    return Err(ErrorKind::Protocol);
                }
            }
        }
    }

    /// Reads a reply and checks it is of `want`'s class (2xx, 3xx); else the error of its class,
    /// with the command's name and the server's words kept.
    async fn expect(&self, conn: &mut SmtpConn, step: &str, want: u16) -> Result<SmtpReply, ErrorKind> {
        let reply = self.read_reply(conn).await?;
        if reply.code / 100 == want / 100 {
            return Ok(reply);
        }
        self.detail(format!("{step}: {}", reply.words()));
        Err(match reply.code / 100 {
            4 => ErrorKind::Smtp4xx,
            5 => ErrorKind::Smtp5xx,
            _ => ErrorKind::Protocol,
        })
    }

    async fn write(conn: &mut SmtpConn, bytes: &[u8]) -> Result<(), ErrorKind> {
        conn.stream.write_all(bytes).await.map_err(|e| ErrorKind::of_exchange(&e))
    }

    async fn ehlo(&self, conn: &mut SmtpConn) -> Result<(), ErrorKind> {
        Self::write(conn, EHLO).await?;
        let reply = self.expect(conn, "EHLO", 250).await?;
        conn.caps = Capabilities::of(&reply.lines);
        Ok(())
    }

    /// AUTH PLAIN (or LOGIN when that is all the server offers) as `user`; a refusal is `auth`.
    async fn authenticate(&self, conn: &mut SmtpConn, user: u32, password: &str) -> Result<(), ErrorKind> {
        let login = self.mailboxes.login(user);
        let b64 = |s: &[u8]| base64::engine::general_purpose::STANDARD.encode(s);
        let refused = |kind: ErrorKind| if kind == ErrorKind::Smtp5xx { ErrorKind::Auth } else { kind };
        if conn.caps.auth_plain {
            let token = b64(format!("\0{login}\0{password}").as_bytes());
            Self::write(conn, format!("AUTH PLAIN {token}\r\n").as_bytes()).await?;
            self.expect(conn, &format!("AUTH PLAIN as {login}"), 235).await.map_err(refused)?;
        } else if conn.caps.auth_login {
            Self::write(conn, b"AUTH LOGIN\r\n").await?;
            let step = format!("AUTH LOGIN as {login}");
            self.expect(conn, &step, 334).await.map_err(refused)?;
            Self::write(conn, format!("{}\r\n", b64(login.as_bytes())).as_bytes()).await?;
            self.expect(conn, &step, 334).await.map_err(refused)?;
            Self::write(conn, format!("{}\r\n", b64(password.as_bytes())).as_bytes()).await?;
            self.expect(conn, &step, 235).await.map_err(refused)?;
        } else {
            self.detail(format!(
                "the server offers no AUTH PLAIN or LOGIN to log in {login} (many offer AUTH only inside \
                 TLS: use smtps:// or STARTTLS)"
            ));
            return Err(ErrorKind::Auth);
        }
        Ok(())
    }

    /// The message of request `seq` (user `user`) as DATA content, with its terminating dot.
    fn message(&self, class: usize, user: u32, seq: u64, rcpt: &str, out: &mut Vec<u8>) {
        let from = out.len();
        let head = format!(
            "From: <{}>\r\nTo: <{rcpt}>\r\nSubject: caplab message {seq}\r\nX-Caplab-Seq: {seq}\r\n\r\n",
            self.options.sender
        );
        out.extend_from_slice(head.as_bytes());
        let body = match self.bodies[class].as_str() {
            "" => format!("caplab load message {seq} for user {user}\n"),
            pattern => render(pattern, user, seq),
        };
        stuff(body.as_bytes(), out);
        if let Some(size) = self.options.message_bytes {
            pad(out, from, size as usize);
        }
        out.extend_from_slice(b".\r\n");
    }
}

impl Driver for SmtpDriver {
    type Conn = SmtpConn;

    async fn connect(&self) -> Result<SmtpConn, ErrorKind> {
        let began = Instant::now();
        let (stream, handshake) = open_stream(self.addr, self.implicit.as_ref(), &self.last_error).await?;
        let mut conn = SmtpConn {
            stream,
            recv: RecvBuf::new(),
            send: Vec::new(),
            handshake,
            caps: Capabilities::default(),
            authenticated: false,
            steps: Vec::new(),
        };
        self.expect(&mut conn, "greeting", 220).await?;
        self.ehlo(&mut conn).await?;
        if let Some((tls, required)) = &self.starttls {
            if conn.caps.starttls {
                Self::write(&mut conn, b"STARTTLS\r\n").await?;
                self.expect(&mut conn, "STARTTLS", 220).await?;
                if !conn.recv.data().is_empty() {
                    self.detail("the server sent more after agreeing to STARTTLS".into());
                    return Err(ErrorKind::Protocol);
                }
                let (stream, handshake) = upgrade(conn.stream, tls, &self.last_error).await?;
                conn = SmtpConn { stream, handshake: Some(handshake), ..conn };
                self.ehlo(&mut conn).await?;
            } else if *required {
                self.detail(format!("{}: the server does not offer STARTTLS", self.addr));
                return Err(ErrorKind::Protocol);
            }
        }
        conn.steps.push(("connect", began.elapsed()));
        Ok(conn)
    }

    fn take_steps(&self, conn: &mut SmtpConn, out: &mut Vec<Step>) {
        out.append(&mut conn.steps);
    }

    fn take_error_detail(&self) -> Option<String> {
        self.last_error.borrow_mut().take()
    }

    fn handshake(&self, conn: &SmtpConn) -> Option<Handshake> {
        conn.handshake
    }

    async fn exchange(&self, conn: &mut SmtpConn, class: usize, seq: u64) -> Result<Reply, ErrorKind> {
        let user = self.mailboxes.user_of(seq);
        if !conn.authenticated {
            if let Some(password) = self.mailboxes.password(user) {
                let began = Instant::now();
                self.authenticate(conn, user, password).await?;
                conn.steps.push(("auth", began.elapsed()));
            }
            conn.authenticated = true;
        }
        let rcpt = render(&self.options.rcpt, user, seq);
        let envelope = format!("MAIL FROM:<{}>\r\nRCPT TO:<{rcpt}>\r\nDATA\r\n", self.options.sender);
        let began = Instant::now();
        if conn.caps.pipelining {
            Self::write(conn, envelope.as_bytes()).await?;
            self.expect(conn, "MAIL FROM", 250).await?;
            self.expect(conn, &format!("RCPT TO:<{rcpt}>"), 250).await?;
            self.expect(conn, "DATA", 354).await?;
        } else {
            let mut commands = envelope.split_inclusive("\r\n");
            for (step, want) in [("MAIL FROM", 250), ("RCPT TO", 250), ("DATA", 354)] {
                Self::write(conn, commands.next().expect("three commands").as_bytes()).await?;
                self.expect(conn, step, want).await?;
            }
        }
        conn.steps.push(("envelope", began.elapsed()));
        let began = Instant::now();
        let mut send = std::mem::take(&mut conn.send);
        send.clear();
        self.message(class, user, seq, &rcpt, &mut send);
        let written = Self::write(conn, &send).await;
        conn.send = send;
        written?;
        // A refused message leaves the session ready for the next one.
        let accepted = match self.expect(conn, "end of DATA", 250).await {
            Ok(_) => None,
            Err(kind @ (ErrorKind::Smtp4xx | ErrorKind::Smtp5xx)) => Some(kind),
            Err(other) => return Err(other),
        };
        conn.steps.push(("data", began.elapsed()));
        if !self.options.reuse {
            // The message's fate is known already: a failed QUIT changes nothing.
            if Self::write(conn, b"QUIT\r\n").await.is_ok() {
                let _ = self.read_reply(conn).await;
            }
        }
        Ok(Reply { error: accepted, keep_alive: self.options.reuse })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_single_and_multiline_replies_and_waits_for_the_last_line() {
        let (r, n) = parse_reply(b"220 mail.caplab.test ESMTP\r\nrest").unwrap().unwrap();
        assert_eq!((r.code, r.lines.as_slice(), n), (220, &["mail.caplab.test ESMTP".to_string()][..], 28));
        let ehlo = b"250-mail.caplab.test\r\n250-PIPELINING\r\n250-AUTH PLAIN LOGIN\r\n250 STARTTLS\r\n";
        for cut in 0..ehlo.len() {
            assert_eq!(parse_reply(&ehlo[..cut]).unwrap(), None, "cut at {cut}");
        }
        let (r, n) = parse_reply(ehlo).unwrap().unwrap();
        assert_eq!((r.code, r.lines.len(), n), (250, 4, ehlo.len()));
        let caps = Capabilities::of(&r.lines);
        assert_eq!(
            caps,
            Capabilities { pipelining: true, starttls: true, auth_plain: true, auth_login: true }
        );
        assert_eq!(parse_reply(b"354\r\n").unwrap().unwrap().0.code, 354);
        assert!(parse_reply(b"* OK imap\r\n").is_err());
        assert!(parse_reply(b"250-a\r\n251 b\r\n").is_err());
        assert!(!Capabilities::of(&["250-x".into(), "AUTH=LOGIN".into()]).auth_plain);
    }

    #[test]
    fn data_content_is_dot_stuffed_with_crlf_and_padded_to_size() {
        let mut out = Vec::new();
        stuff(b"a\n.b\r\n..c\nend", &mut out);
        assert_eq!(out, b"a\r\n..b\r\n...c\r\nend\r\n");
        out.clear();
        stuff(b"x\n", &mut out);
        assert_eq!(out, b"x\r\n");
        let mut out = b"prefix".to_vec();
        out.extend_from_slice(b"head\r\n");
        pad(&mut out, 6, 1000);
        let content = &out[6..];
        assert!((998..=1000).contains(&content.len()), "{}", content.len());
        assert!(content.ends_with(b"\r\n") && !content.contains(&b'-'));
        assert!(content.split(|&b| b == b'\n').all(|l| l.len() <= 998));
    }
}

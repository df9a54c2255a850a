//! HTTP/1.1 with keep-alive, over TLS for `https://`: one request at a time per connection,
//! bodies skipped unparsed.

use super::tls::{Handshake, Stream, TlsClient};
use super::wire::RecvBuf;
use super::{open_stream, Driver, ErrorKind, Reply, Template};
use crate::plan::{PlanError, RequestClass, Url};
use std::cell::RefCell;
use std::io;
use std::net::SocketAddr;
use tokio::io::AsyncWriteExt;

/// A request class compiled to bytes: the whole request when its body is static, else the head
/// (everything before Content-Length) and a body template rendered per request.
struct Compiled {
    head: Vec<u8>,
    body: Template,
    whole: Option<Vec<u8>>,
    expects_body: bool,
    /// The request says `Connection: close`: the connection ends with its reply, whatever the
    /// server answers (RFC 9112 §9.6), so the next request opens (and handshakes) anew.
    closes: bool,
}

pub struct HttpDriver {
    addr: SocketAddr,
    classes: Vec<Compiled>,
    /// `https://`: the TLS client every connection handshakes with.
    tls: Option<TlsClient>,
    last_error: RefCell<Option<String>>,
}

pub struct HttpConn {
    stream: Stream,
    recv: RecvBuf,
    send: Vec<u8>,
    handshake: Option<Handshake>,
}

impl HttpDriver {
    pub fn new(
        addr: SocketAddr,
        url: &Url,
        classes: &[RequestClass],
        tls: Option<TlsClient>,
    ) -> Result<HttpDriver, PlanError> {
        let classes = classes.iter().map(|c| compile(url, c)).collect();
        Ok(HttpDriver { addr, classes, tls, last_error: RefCell::new(None) })
    }
}

fn compile(url: &Url, class: &RequestClass) -> Compiled {
    let path = class.path.as_deref().unwrap_or(&url.path);
    let method = class.method.to_ascii_uppercase();
    let mut head = format!("{method} {path} HTTP/1.1\r\n");
    let has_header = |name: &str| class.headers.iter().any(|(k, _)| k.eq_ignore_ascii_case(name));
    if !has_header("host") {
        head.push_str(&format!("Host: {}\r\n", url.authority));
    }
    for (k, v) in &class.headers {
        if !k.eq_ignore_ascii_case("content-length") {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
    }
    let body = Template::new(&class.body, class.template);
    let sends_length = !class.body.is_empty() || matches!(method.as_str(), "POST" | "PUT" | "PATCH");
    if !sends_length {
        head.push_str("\r\n");
    }
    let whole = body.is_static().then(|| {
        let mut bytes = head.clone().into_bytes();
        if sends_length {
            bytes.extend_from_slice(format!("Content-Length: {}\r\n\r\n", body.rendered_len(0)).as_bytes());
            body.render_into(0, &mut bytes);
        }
        bytes
    });
    let closes = class
        .headers
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("connection") && v.trim().eq_ignore_ascii_case("close"));
    Compiled { head: head.into_bytes(), body, whole, expects_body: method != "HEAD", closes }
}

impl Driver for HttpDriver {
    type Conn = HttpConn;

    async fn connect(&self) -> Result<HttpConn, ErrorKind> {
        let (stream, handshake) = open_stream(self.addr, self.tls.as_ref(), &self.last_error).await?;
        Ok(HttpConn { stream, recv: RecvBuf::new(), send: Vec::new(), handshake })
    }

    fn take_error_detail(&self) -> Option<String> {
        self.last_error.borrow_mut().take()
    }

    fn handshake(&self, conn: &HttpConn) -> Option<Handshake> {
        conn.handshake
    }

    async fn exchange(&self, conn: &mut HttpConn, class: usize, seq: u64) -> Result<Reply, ErrorKind> {
        let c = &self.classes[class];
        let bytes: &[u8] = match &c.whole {
            Some(whole) => whole,
            None => {
                conn.send.clear();
                conn.send.extend_from_slice(&c.head);
                let len = c.body.rendered_len(seq);
                conn.send.extend_from_slice(format!("Content-Length: {len}\r\n\r\n").as_bytes());
                c.body.render_into(seq, &mut conn.send);
                &conn.send
            }
        };
        conn.stream.write_all(bytes).await.map_err(|e| ErrorKind::of_exchange(&e))?;
        let reply = read_response(&mut conn.stream, &mut conn.recv, c.expects_body)
            .await
            .map_err(|e| ErrorKind::of_exchange(&e))?;
        Ok(Reply { keep_alive: reply.keep_alive && !c.closes, ..reply })
    }
}

enum Body {
    None,
    Length(usize),
    Chunked,
    UntilClose,
}

struct Head {
    status: u16,
    body: Body,
    keep_alive: bool,
    len: usize,
}

fn protocol(msg: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.to_string())
}

fn parse_head(data: &[u8], expects_body: bool) -> io::Result<Option<Head>> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut resp = httparse::Response::new(&mut headers);
    let len = match resp.parse(data) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => return Err(protocol(&format!("bad HTTP response: {e}"))),
    };
    let status = resp.code.unwrap_or(0);
    let mut keep_alive = resp.version == Some(1);
    let mut length = None;
    let mut chunked = false;
    for h in resp.headers.iter() {
        if h.name.eq_ignore_ascii_case("content-length") {
            let text = std::str::from_utf8(h.value).map_err(|_| protocol("bad Content-Length"))?;
            length = Some(text.trim().parse::<usize>().map_err(|_| protocol("bad Content-Length"))?);
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = h.value.windows(7).any(|w| w.eq_ignore_ascii_case(b"chunked"));
        } else if h.name.eq_ignore_ascii_case("connection") {
            if h.value.eq_ignore_ascii_case(b"close") {
                keep_alive = false;
            } else if h.value.eq_ignore_ascii_case(b"keep-alive") {
                keep_alive = true;
            }
        }
    }
    let body = if !expects_body || (100..200).contains(&status) || status == 204 || status == 304 {
        Body::None
    } else if chunked {
        Body::Chunked
    } else if let Some(n) = length {
        Body::Length(n)
    } else {
        keep_alive = false;
        Body::UntilClose
    };
    Ok(Some(Head { status, body, keep_alive, len }))
}

async fn read_response(stream: &mut Stream, recv: &mut RecvBuf, expects_body: bool) -> io::Result<Reply> {
    let head = loop {
        if let Some(head) = parse_head(recv.data(), expects_body)? {
            break head;
        }
        recv.fill(stream).await?;
    };
    recv.consume(head.len);
    match head.body {
        Body::None => {}
        Body::Length(n) => recv.skip(stream, n).await?,
        Body::Chunked => skip_chunked(stream, recv).await?,
        Body::UntilClose => loop {
            let n = recv.data().len();
            recv.consume(n);
            match recv.fill(stream).await {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => break,
                Err(e) => return Err(e),
            }
        },
    }
    let error = match head.status {
        500.. => Some(ErrorKind::Http5xx),
        400..=499 => Some(ErrorKind::Http4xx),
        _ => None,
    };
    Ok(Reply { error, keep_alive: head.keep_alive })
}

async fn skip_chunked(stream: &mut Stream, recv: &mut RecvBuf) -> io::Result<()> {
    loop {
        let end = recv.until(stream, b"\r\n").await?;
        let line = &recv.data()[..end - 2];
        let digits = line.split(|&b| b == b';').next().unwrap_or_default();
        let text = std::str::from_utf8(digits).map_err(|_| protocol("bad chunk size"))?;
        let size = usize::from_str_radix(text.trim(), 16).map_err(|_| protocol("bad chunk size"))?;
        recv.consume(end);
        if size == 0 {
            // Trailers, then the empty line that ends the message.
            loop {
                let end = recv.until(stream, b"\r\n").await?;
                recv.consume(end);
                if end == 2 {
                    return Ok(());
                }
            }
        }
        recv.skip(stream, size + 2).await?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compiles_requests() {
        let url = Url::parse("http://127.0.0.1:8080/orders").unwrap();
        let class = RequestClass {
            name: "post".into(),
            weight: 1.0,
            method: "post".into(),
            path: None,
            headers: vec![("Content-Type".into(), "text/xml".into())],
            body: "<o>{seq}</o>".into(),
            template: true,
        };
        let c = compile(&url, &class);
        assert!(c.whole.is_none() && !c.closes);
        assert_eq!(c.head, b"POST /orders HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nContent-Type: text/xml\r\n");
        let get = RequestClass { method: "GET".into(), body: String::new(), template: false, ..class };
        assert_eq!(
            compile(&url, &get).whole.unwrap(),
            b"GET /orders HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nContent-Type: text/xml\r\n\r\n"
        );
        let closing = RequestClass { headers: vec![("connection".into(), "Close".into())], ..get };
        assert!(compile(&url, &closing).closes);
    }

    #[test]
    fn parses_heads() {
        let h = parse_head(b"HTTP/1.1 503 Busy\r\nContent-Length: 4\r\n\r\nbusy", true).unwrap().unwrap();
        assert_eq!((h.status, h.keep_alive), (503, true));
        assert!(matches!(h.body, Body::Length(4)));
        let h = parse_head(b"HTTP/1.0 200 OK\r\n\r\n", true).unwrap().unwrap();
        assert!(!h.keep_alive && matches!(h.body, Body::UntilClose));
        assert!(parse_head(b"HTTP/1.1 200 OK\r\nContent-Le", true).unwrap().is_none());
        assert!(parse_head(b"garbage\r\n\r\n", true).is_err());
    }
}

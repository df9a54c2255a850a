//! Framed request/reply over TCP: newline-delimited lines, 4-byte big-endian length prefixes, or
//! HL7's MLLP envelope (0x0B … 0x1C 0x0D). The reply is read with the same framing. `tls://`
//! targets speak the same inside TLS (implicit TLS, as SMTPS and IMAPS do).

use super::tls::{Handshake, Stream, TlsClient};
use super::wire::RecvBuf;
use super::{open_stream, Driver, ErrorKind, Reply, Template};
use crate::plan::{Framing, PlanError, RequestClass};
use std::cell::RefCell;
use std::io;
use std::net::SocketAddr;
use tokio::io::AsyncWriteExt;

const MLLP_START: u8 = 0x0B;
const MLLP_END: &[u8] = &[0x1C, 0x0D];

pub struct TcpDriver {
    addr: SocketAddr,
    framing: Framing,
    payloads: Vec<Template>,
    /// Frames of static payloads, built once.
    frames: Vec<Option<Vec<u8>>>,
    /// `tls://`: the TLS client every connection handshakes with.
    tls: Option<TlsClient>,
    last_error: RefCell<Option<String>>,
}

pub struct TcpConn {
    stream: Stream,
    recv: RecvBuf,
    send: Vec<u8>,
    handshake: Option<Handshake>,
}

impl TcpDriver {
    pub fn new(
        addr: SocketAddr,
        framing: Framing,
        classes: &[RequestClass],
        tls: Option<TlsClient>,
    ) -> Result<TcpDriver, PlanError> {
        let mut payloads = Vec::with_capacity(classes.len());
        for (i, class) in classes.iter().enumerate() {
            let t = Template::new(&class.body, class.template);
            let bad = match framing {
                Framing::Line => t.contains(b'\n').then_some("a newline"),
                Framing::Mllp => {
                    (t.contains(MLLP_START) || t.contains(MLLP_END[0])).then_some("0x0B or 0x1C")
                }
                Framing::U32 => None,
            };
            if let Some(what) = bad {
                return Err(PlanError {
                    field: format!("requests[{i}].body"),
                    message: format!("contains {what}, which the {framing:?} framing uses as a delimiter"),
                });
            }
            payloads.push(t);
        }
        let frames = payloads
            .iter()
            .map(|t| {
                t.is_static().then(|| {
                    let mut out = Vec::new();
                    frame(framing, t, 0, &mut out);
                    out
                })
            })
            .collect();
        Ok(TcpDriver { addr, framing, payloads, frames, tls, last_error: RefCell::new(None) })
    }
}

fn frame(framing: Framing, payload: &Template, seq: u64, out: &mut Vec<u8>) {
    match framing {
        Framing::Line => {
            payload.render_into(seq, out);
            out.push(b'\n');
        }
        Framing::U32 => {
            out.extend_from_slice(&(payload.rendered_len(seq) as u32).to_be_bytes());
            payload.render_into(seq, out);
        }
        Framing::Mllp => {
            out.push(MLLP_START);
            payload.render_into(seq, out);
            out.extend_from_slice(MLLP_END);
        }
    }
}

impl Driver for TcpDriver {
    type Conn = TcpConn;

    async fn connect(&self) -> Result<TcpConn, ErrorKind> {
        let (stream, handshake) = open_stream(self.addr, self.tls.as_ref(), &self.last_error).await?;
        Ok(TcpConn { stream, recv: RecvBuf::new(), send: Vec::new(), handshake })
    }

    fn take_error_detail(&self) -> Option<String> {
        self.last_error.borrow_mut().take()
    }

    fn handshake(&self, conn: &TcpConn) -> Option<Handshake> {
        conn.handshake
    }

    async fn exchange(&self, conn: &mut TcpConn, class: usize, seq: u64) -> Result<Reply, ErrorKind> {
        let bytes: &[u8] = match &self.frames[class] {
            Some(f) => f,
            None => {
                conn.send.clear();
                frame(self.framing, &self.payloads[class], seq, &mut conn.send);
                &conn.send
            }
        };
        conn.stream.write_all(bytes).await.map_err(|e| ErrorKind::of_exchange(&e))?;
        read_frame(self.framing, &mut conn.stream, &mut conn.recv)
            .await
            .map_err(|e| ErrorKind::of_exchange(&e))?;
        Ok(Reply { error: None, keep_alive: true })
    }
}

async fn read_frame(framing: Framing, stream: &mut Stream, recv: &mut RecvBuf) -> io::Result<()> {
    match framing {
        Framing::Line => {
            let end = recv.until(stream, b"\n").await?;
            recv.consume(end);
        }
        Framing::U32 => {
            recv.at_least(stream, 4).await?;
            let d = recv.data();
            let len = u32::from_be_bytes([d[0], d[1], d[2], d[3]]) as usize;
            recv.consume(4);
            recv.skip(stream, len).await?;
        }
        Framing::Mllp => {
            recv.at_least(stream, 1).await?;
            if recv.data()[0] != MLLP_START {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "MLLP reply does not start with 0x0B",
                ));
            }
            let end = recv.until(stream, MLLP_END).await?;
            recv.consume(end);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_payloads() {
        let t = Template::new("MSH|{seq}", true);
        let mut out = Vec::new();
        frame(Framing::Mllp, &t, 7, &mut out);
        assert_eq!(out, b"\x0bMSH|7\x1c\x0d");
        out.clear();
        frame(Framing::U32, &t, 12, &mut out);
        assert_eq!(out, b"\x00\x00\x00\x06MSH|12");
        out.clear();
        frame(Framing::Line, &t, 1, &mut out);
        assert_eq!(out, b"MSH|1\n");
    }

    #[test]
    fn rejects_payloads_that_break_the_framing() {
        let class = RequestClass {
            name: "x".into(),
            weight: 1.0,
            method: "GET".into(),
            path: None,
            headers: vec![],
            body: "a\nb".into(),
            template: false,
        };
        let addr = "127.0.0.1:1".parse().unwrap();
        let e = TcpDriver::new(addr, Framing::Line, std::slice::from_ref(&class), None).err().unwrap();
        assert_eq!(e.field, "requests[0].body");
        assert!(TcpDriver::new(addr, Framing::U32, &[class], None).is_ok());
    }
}

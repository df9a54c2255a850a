//! A reusable receive buffer: replies are parsed in place, so a request allocates nothing.

use super::tls::Stream;
use std::io;
use tokio::io::AsyncReadExt;

const INITIAL: usize = 16 * 1024;
/// A header block or frame larger than this is a protocol error, not a reason to grow forever.
const LIMIT: usize = 64 * 1024 * 1024;

pub struct RecvBuf {
    buf: Vec<u8>,
    start: usize,
    end: usize,
}

impl RecvBuf {
    pub fn new() -> RecvBuf {
        RecvBuf { buf: vec![0; INITIAL], start: 0, end: 0 }
    }

    /// The received bytes not yet consumed.
    pub fn data(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    pub fn consume(&mut self, n: usize) {
        self.start += n;
        debug_assert!(self.start <= self.end);
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
    }

    /// Reads more bytes from the stream; end of stream is an `UnexpectedEof` error.
    pub async fn fill(&mut self, stream: &mut Stream) -> io::Result<()> {
        if self.end == self.buf.len() {
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            } else if self.buf.len() >= LIMIT {
                return Err(io::Error::new(io::ErrorKind::InvalidData, "reply larger than 64 MiB"));
            } else {
                self.buf.resize(self.buf.len() * 2, 0);
            }
        }
        let n = stream.read(&mut self.buf[self.end..]).await?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        self.end += n;
        Ok(())
    }

    /// Reads and discards `n` bytes (a body whose content is not needed).
    pub async fn skip(&mut self, stream: &mut Stream, mut n: usize) -> io::Result<()> {
        loop {
            let have = self.data().len().min(n);
            self.consume(have);
            n -= have;
            if n == 0 {
                return Ok(());
            }
            self.fill(stream).await?;
        }
    }

    /// Waits until the buffer holds `needle`; returns the offset just past it.
    pub async fn until(&mut self, stream: &mut Stream, needle: &[u8]) -> io::Result<usize> {
        let mut searched = 0;
        loop {
            let data = self.data();
            if let Some(i) = find(&data[searched..], needle) {
                return Ok(searched + i + needle.len());
            }
            searched = data.len().saturating_sub(needle.len() - 1);
            self.fill(stream).await?;
        }
    }

    /// Waits until at least `n` unconsumed bytes are buffered.
    pub async fn at_least(&mut self, stream: &mut Stream, n: usize) -> io::Result<()> {
        while self.data().len() < n {
            self.fill(stream).await?;
        }
        Ok(())
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.len() == 1 {
        return haystack.iter().position(|&b| b == needle[0]);
    }
    haystack.windows(needle.len()).position(|w| w == needle)
}

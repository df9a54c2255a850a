//! A model driven without a clock: the figures a benchmark would measure on it, computed. The
//! known-answer tests compare fio through the kernel with these, and Rust tests check a model's
//! derivations with them.

use super::{Done, Model, Nanos, Op, Request, NS_PER_S};
use serde::Deserialize;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Pattern {
    Random,
    Sequential,
}

/// fio's closed loop: `depth` requests of `block` bytes always outstanding over the first `span`
/// bytes; each completion is followed `gap_ns` later by the next (the host's own time), and,
/// with `flush`, each write by a flush before the next (O_DSYNC).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Workload {
    pub op: Op,
    pub pattern: Pattern,
    pub block: u64,
    pub depth: usize,
    #[serde(default)]
    pub flush: bool,
    #[serde(default)]
    pub gap_ns: Nanos,
    pub span: u64,
}

impl<'de> Deserialize<'de> for Op {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Op, D::Error> {
        match String::deserialize(d)?.as_str() {
            "read" => Ok(Op::Read),
            "write" => Ok(Op::Write),
            "flush" => Ok(Op::Flush),
            other => Err(serde::de::Error::custom(format!("op: read, write or flush, not {other:?}"))),
        }
    }
}

impl Workload {
    pub fn random_reads(block: u64, depth: usize, span: u64) -> Workload {
        Workload { op: Op::Read, pattern: Pattern::Random, block, depth, flush: false, gap_ns: 0, span }
    }

    /// A log's synchronous appends (O_DSYNC): 4 KiB written in sequence one at a time, each
    /// flushed, the next 20 µs (the host's time) after: what a disk's turn, or a write cache in
    /// front of it, decides.
    pub fn synchronous_appends(span: u64) -> Workload {
        Workload {
            op: Op::Write,
            pattern: Pattern::Sequential,
            block: 4096,
            depth: 1,
            flush: true,
            gap_ns: 20_000,
            span,
        }
    }
}

/// Submits `arrivals` (time-ordered) and runs the model until all have completed.
pub fn run(model: &mut dyn Model, arrivals: &[(Nanos, Request)]) -> Vec<Done> {
    let mut done = Vec::new();
    for (at, req) in arrivals {
        model.advance(*at, &mut done);
        model.submit(*at, *req);
    }
    while let Some(t) = model.next_event() {
        model.advance(t, &mut done);
    }
    done
}

/// Operations per second of model time the workload completes over `seconds` (flushes not
/// counted).
pub fn closed_loop(model: &mut dyn Model, w: &Workload, seconds: f64) -> f64 {
    let end = (seconds * NS_PER_S as f64) as Nanos;
    let blocks = (w.span / w.block).max(1);
    let mut rng = 0x9E37_79B9_7F4A_7C15u64;
    let mut cursor = 0u64;
    let mut next_id = 0u64;
    let mut kinds: HashMap<u64, Op> = HashMap::new();
    let mut due: BinaryHeap<Reverse<(Nanos, u64, u8)>> = BinaryHeap::new(); // (time, seq, 0=data 1=flush)
    for _ in 0..w.depth {
        due.push(Reverse((0, next_id, 0)));
        next_id += 1;
    }
    let mut completed = 0u64;
    let mut done = Vec::new();
    loop {
        let arrival = due.peek().map(|Reverse((t, _, _))| *t);
        let event = model.next_event();
        let t = match (arrival, event) {
            (Some(a), Some(e)) => a.min(e),
            (Some(a), None) => a,
            (None, Some(e)) => e,
            (None, None) => break,
        };
        if t > end {
            break;
        }
        done.clear();
        model.advance(t, &mut done);
        for d in &done {
            match kinds.remove(&d.id) {
                Some(Op::Flush) => due.push(Reverse((d.at + w.gap_ns, d.id, 0))),
                Some(_) if w.flush && w.op == Op::Write => due.push(Reverse((d.at, d.id, 1))),
                Some(_) => {
                    completed += 1;
                    due.push(Reverse((d.at + w.gap_ns, d.id, 0)));
                }
                None => {}
            }
        }
        while let Some(Reverse((at, _, kind))) = due.peek().copied() {
            if at > t {
                break;
            }
            due.pop();
            let id = next_id;
            next_id += 1;
            let req = if kind == 1 {
                completed += 1; // the write before this flush
                Request { id, op: Op::Flush, offset: 0, len: 0 }
            } else {
                let offset = match w.pattern {
                    Pattern::Sequential => {
                        let o = cursor;
                        cursor = (cursor + w.block) % (blocks * w.block);
                        o
                    }
                    Pattern::Random => {
                        rng ^= rng << 13;
                        rng ^= rng >> 7;
                        rng ^= rng << 17;
                        (rng % blocks) * w.block
                    }
                };
                Request { id, op: w.op, offset, len: w.block }
            };
            kinds.insert(id, req.op);
            model.submit(t, req);
        }
    }
    completed as f64 / seconds
}

//! Device models: a disk's timing, given the requests it receives and when, with no clock of its
//! own. A model is told each request at its arrival time (`submit`) and is run forward
//! (`advance`) to say which requests have completed by then and exactly when; `next_event` says
//! when to look again. The daemon in `serve` holds every FUSE request until the time its model
//! gives, so a filesystem on a loop device over the served file sees the device's physics.
//!
//! One file per concept: `hdd` (geometry, seek curve, rotation, media rate, read-ahead),
//! `queue` (command queueing with reordering), `cache` (a write cache in front of any model),
//! `raid` (0, 1, 10 over member models), `ssd`, `throttle` (a provisioned-IOPS volume), `timed`
//! (a model that knows each completion at arrival, as those two do), `spec` (the JSON a model is
//! built from).

pub mod cache;
pub mod hdd;
pub mod queue;
pub mod raid;
#[cfg(target_os = "linux")]
pub mod serve;
pub mod simulate;
pub mod spec;
pub mod ssd;
pub mod throttle;
pub mod timed;

/// Model time: nanoseconds since the model started.
pub type Nanos = u64;

pub const NS_PER_S: u64 = 1_000_000_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    Read,
    Write,
    /// A cache flush (what an fsync on the served file becomes).
    Flush,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    pub id: u64,
    pub op: Op,
    pub offset: u64,
    pub len: u64,
}

impl Request {
    pub fn end(&self) -> u64 {
        self.offset + self.len
    }
}

/// Request `id` completed at model time `at`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Done {
    pub id: u64,
    pub at: Nanos,
}

/// A device's timing. Calls come in time order: `advance(t)` before `submit(t, …)`, and never a
/// time earlier than one already given. A model's completions never depend on when `advance` is
/// called, only on the arrivals: a late look gives the same times.
pub trait Model: Send {
    fn submit(&mut self, at: Nanos, req: Request);
    /// Runs the model up to `now`, appending every request completed at or before it.
    fn advance(&mut self, now: Nanos, done: &mut Vec<Done>);
    /// When something next happens inside the model (a completion, a background step).
    fn next_event(&self) -> Option<Nanos>;
}

/// The time `bytes` take at `rate` bytes per second, in nanoseconds.
pub fn transfer_ns(bytes: u64, rate: f64) -> Nanos {
    (bytes as f64 * NS_PER_S as f64 / rate).round() as Nanos
}

/// Completions ready at known times (a model that knows each completion when it is submitted).
#[derive(Default, Debug)]
pub struct Ready {
    heap: std::collections::BinaryHeap<std::cmp::Reverse<(Nanos, u64)>>,
}

impl Ready {
    pub fn push(&mut self, d: Done) {
        self.heap.push(std::cmp::Reverse((d.at, d.id)));
    }

    pub fn drain_until(&mut self, now: Nanos, done: &mut Vec<Done>) {
        while let Some(std::cmp::Reverse((at, id))) = self.heap.peek().copied() {
            if at > now {
                break;
            }
            self.heap.pop();
            done.push(Done { id, at });
        }
    }

    pub fn next(&self) -> Option<Nanos> {
        self.heap.peek().map(|std::cmp::Reverse((at, _))| *at)
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

/// The earlier of two optional times.
pub fn earliest(a: Option<Nanos>, b: Option<Nanos>) -> Option<Nanos> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

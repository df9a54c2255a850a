//! Models that know each request's completion time the moment it arrives (`ssd`, `throttle`):
//! nothing inside them moves with time alone, so all such a model has to say is when. `Timed`
//! turns that into a `Model` once for all of them, holding each completion until it falls due.

use super::{Done, Model, Nanos, Ready, Request};

/// A device whose every completion is known at the request's arrival.
pub trait Timing: Send {
    /// When `req`, arriving at `at`, completes (never before `at`).
    fn completion(&mut self, at: Nanos, req: Request) -> Nanos;
}

/// A `Timing` as a `Model`: each completion, said at its request's arrival, is held until the
/// model is advanced past it.
pub struct Timed<T> {
    timing: T,
    ready: Ready,
}

impl<T: Timing> Timed<T> {
    pub fn new(timing: T) -> Timed<T> {
        Timed { timing, ready: Ready::default() }
    }
}

impl<T: Timing> Model for Timed<T> {
    fn submit(&mut self, at: Nanos, req: Request) {
        let done = self.timing.completion(at, req);
        self.ready.push(Done { id: req.id, at: done });
    }

    fn advance(&mut self, now: Nanos, done: &mut Vec<Done>) {
        self.ready.drain_until(now, done);
    }

    fn next_event(&self) -> Option<Nanos> {
        self.ready.next()
    }
}

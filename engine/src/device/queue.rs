//! Command queueing: the requests a device holds, and which it serves next. At depth 1 the
//! oldest (FIFO); deeper, the one with the shortest positioning time among the oldest `depth`
//! (SPTF, as a drive's NCQ firmware does), unless the oldest has waited longer than `max_wait`
//! (so a far request is not starved by a stream of near ones).

use super::{Nanos, Request};
use std::collections::VecDeque;

#[derive(Debug)]
pub struct CommandQueue {
    depth: usize,
    max_wait: Nanos,
    pending: VecDeque<(Nanos, Request)>,
}

impl CommandQueue {
    pub fn new(depth: usize, max_wait: Nanos) -> CommandQueue {
        CommandQueue { depth: depth.max(1), max_wait, pending: VecDeque::new() }
    }

    pub fn push(&mut self, arrived: Nanos, req: Request) {
        self.pending.push_back((arrived, req));
    }

    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    pub fn len(&self) -> usize {
        self.pending.len()
    }

    /// The next request to serve at `now`, by `cost` (its positioning time from where the
    /// device is); only requests that arrived by `now` are eligible.
    pub fn pick(&mut self, now: Nanos, mut cost: impl FnMut(&Request) -> Nanos) -> Option<Request> {
        let (oldest_at, _) = *self.pending.front()?;
        if oldest_at > now {
            return None;
        }
        if self.depth == 1 || now.saturating_sub(oldest_at) >= self.max_wait {
            return self.pending.pop_front().map(|(_, r)| r);
        }
        let mut best = 0;
        let mut best_cost = Nanos::MAX;
        for (i, (arrived, req)) in self.pending.iter().take(self.depth).enumerate() {
            if *arrived > now {
                break;
            }
            let c = cost(req);
            if c < best_cost {
                best = i;
                best_cost = c;
            }
        }
        self.pending.remove(best).map(|(_, r)| r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::Op;

    fn req(id: u64, offset: u64) -> Request {
        Request { id, op: Op::Read, offset, len: 4096 }
    }

    #[test]
    fn depth_one_serves_in_arrival_order_and_deeper_the_nearest_first() {
        let mut fifo = CommandQueue::new(1, u64::MAX);
        let mut sptf = CommandQueue::new(32, u64::MAX);
        for (i, off) in [900u64, 10, 500].iter().enumerate() {
            fifo.push(0, req(i as u64, *off));
            sptf.push(0, req(i as u64, *off));
        }
        let from = |head: u64| move |r: &Request| r.offset.abs_diff(head);
        assert_eq!(fifo.pick(1, from(0)).map(|r| r.id), Some(0));
        assert_eq!(sptf.pick(1, from(0)).map(|r| r.id), Some(1));
        assert_eq!(sptf.pick(1, from(10)).map(|r| r.id), Some(2));
    }

    #[test]
    fn a_request_that_waited_too_long_goes_first_and_a_future_one_waits() {
        let mut q = CommandQueue::new(32, 100);
        q.push(0, req(0, 1_000_000));
        q.push(50, req(1, 0));
        assert_eq!(q.pick(120, |r| r.offset).map(|r| r.id), Some(0));
        let mut q = CommandQueue::new(32, 100);
        q.push(10, req(0, 0));
        assert_eq!(q.pick(5, |r| r.offset), None);
    }
}

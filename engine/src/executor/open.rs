//! The open model: requests leave on the schedule's intended times whatever the replies do.
//!
//! Each send is timed from its intended time (coordinated-omission corrected); a send that finds
//! the in-flight cap reached (requests sent or waiting for a connection, not yet answered) is
//! counted `dropped` at once, so a backlog in the system under test shows as drops and latency
//! instead of a slower offered rate.
//!
//! Requests go out over a pool of connections, one task each, that take due requests in order.
//! A due request goes to an idle connection; if none is idle, a new one is opened for it while
//! the dispatcher is on time, at most `OPEN_RATE` a second (bursts of `OPEN_BURST`): beyond
//! that the request waits for a free connection, timed from its intended start. A late dispatcher
//! is catching up after a stall (its own, or its CPU given to other work), and busy connections
//! free up within a reply's time, so it grows the pool only slowly (the wait before the next such
//! opening grows with the pool, `BACKLOG_OPEN_SPACING` per connection), whether or not requests
//! are already waiting. Opening in bursts is what made a late generator spiral: each connection
//! costs more CPU than a request, making the next sends later still. The burst is small for the
//! same reason: a connection costs tens of µs of the dispatcher's thread, so two hundred at once
//! (the earlier burst) stalled a busy dispatcher for milliseconds, which it then had to catch up,
//! and which set the p99 of a run at 100,000/s.
//!
//! Send lateness is the dispatcher's: how long after its intended time a request was handed to
//! the pool. That is the generator's own delay; a wait for a connection the server still holds
//! is the server's, and shows in the latency (from the intended time), not in the lateness.
//!
//! With several targets each has its own pool (a connection serves one target); arrivals are
//! given to the targets round-robin, and the opening budget is shared by all of them.
//!
//! A target whose last connection attempt was refused gets no new connections until one of its
//! requests goes through: its connections already open keep trying, one request at a time, and
//! the rest wait for them (a task not yet connected, too, while another attempt is under way). Otherwise every send during an outage (a failover) opened a connection
//! of its own, and a hundred connects at once — each a SCRAM exchange with every host of the URL
//! — made the generator late and its first success after the outage tenths of a second later
//! than the system's (a separate client polling every 10 ms saw the database back first).
//!
//! Waking up costs more CPU than sending (a context switch each time), so sends due within
//! `slack` of one another share one wake-up: the loop sleeps until the first is due, exactly,
//! and sends the rest up to `slack` early. An early send is timed from when it left, so batching
//! never shortens a latency; it only moves an arrival by less than `slack`.

use super::Worker;
use crate::driver::{Driver, ErrorKind};
use crate::schedule::Schedule;
use crate::timer::PreciseTimer;
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// After this many back-to-back sends without sleeping, yield so replies get read.
const BURST: u32 = 32;
/// New connections a second an on-time dispatcher may open, and how many at once: a server
/// that holds every connection gets this many more a second, not one per send.
const OPEN_RATE: f64 = 2_000.0;
const OPEN_BURST: f64 = 16.0;
/// A dispatcher this far behind a request's intended time is catching up, not on schedule.
const ON_TIME: Duration = Duration::from_millis(1);
/// While the dispatcher is late, the pool of n grows by one at most every n × this:
/// quickly to the few dozen connections a fast server needs, then ever more slowly (about
/// √(2t / spacing) connections after t), so a starved generator cannot open its way into a spiral.
const BACKLOG_OPEN_SPACING: Duration = Duration::from_micros(100);

pub async fn run<D>(w: Rc<Worker<D>>, mut schedule: Schedule, max_in_flight: u64, slack: Duration)
where
    D: Driver + 'static,
    D::Conn: 'static,
{
    // Without a timerfd (not on Linux) tokio's millisecond timer serves; the lateness shows it.
    let timer = PreciseTimer::new().ok();
    let pools = Pools::new(w.drivers.len());
    let mut burst = 0;
    // Arrival k of this thread is the run's arrival about k × threads + index: the targets
    // take turns across threads as well as within one.
    let mut arrival = w.index as u64;
    while let Some(offset) = schedule.next_offset() {
        let intended = w.clock.start + offset;
        if w.stopping(intended) {
            break;
        }
        let now = Instant::now();
        if now >= w.clock.window_end {
            // Behind schedule past the window's end: what is left was never sent. Count it as
            // dropped (the run is flagged saturated by its lateness) rather than send it late.
            count_unsent(&w, intended, &mut schedule);
            break;
        }
        if intended > now + slack {
            burst = 0;
            if !wait_until(&w, timer.as_ref(), intended).await {
                break;
            }
        } else {
            burst += 1;
            if burst >= BURST {
                burst = 0;
                tokio::task::yield_now().await;
            }
        }
        if w.in_flight.get() >= max_in_flight {
            w.stats.borrow_mut().on_dropped(&w.clock, intended);
            continue;
        }
        if !w.claim(intended) {
            break;
        }
        w.in_flight.set(w.in_flight.get() + 1);
        let now = Instant::now();
        w.stats.borrow_mut().on_lateness(now.saturating_duration_since(intended));
        let target = (arrival % pools.targets.len() as u64) as usize;
        arrival += w.threads as u64;
        pools.hand_over(&w, target, intended, now);
    }
    w.drain().await;
    // Requests still waiting for a connection when the drain ended were never sent.
    let mut stats = w.stats.borrow_mut();
    for pool in &pools.targets {
        for intended in pool.due.borrow_mut().drain(..) {
            stats.on_dropped(&w.clock, intended);
            w.in_flight.set(w.in_flight.get() - 1);
        }
    }
}

/// One target's requests due but not yet sent, and its connection tasks idle until one is.
#[derive(Default)]
struct Pool {
    due: RefCell<VecDeque<Instant>>,
    idle: Cell<usize>,
    wake: Notify,
    /// The last attempt to connect to this target was refused (see the module doc).
    refusing: Cell<bool>,
    /// Connection attempts to this target under way.
    connecting: Cell<usize>,
}

/// Every target's pool, and the opening budget they share.
struct Pools {
    targets: Vec<Rc<Pool>>,
    /// Connection tasks started, all targets together.
    size: Cell<u32>,
    /// When a late dispatcher last opened a connection.
    last_backlog_open: Cell<Option<Instant>>,
    /// Openings an on-time dispatcher may still make (a token bucket), as of `budget_at`.
    budget: Cell<f64>,
    budget_at: Cell<Option<Instant>>,
}

impl Pools {
    fn new(targets: usize) -> Pools {
        Pools {
            targets: (0..targets).map(|_| Rc::new(Pool::default())).collect(),
            size: Cell::new(0),
            last_backlog_open: Cell::new(None),
            budget: Cell::new(0.0),
            budget_at: Cell::new(None),
        }
    }

    /// Queues a due request for the next free connection to its target: an idle one, else a
    /// new one within the opening budget (see the module doc).
    fn hand_over<D>(&self, w: &Rc<Worker<D>>, target: usize, intended: Instant, now: Instant)
    where
        D: Driver + 'static,
        D::Conn: 'static,
    {
        let pool = &self.targets[target];
        pool.due.borrow_mut().push_back(intended);
        if pool.idle.get() > 0 {
            pool.idle.set(pool.idle.get() - 1);
            // The connection idle the shortest time: a few stay warm, the rest stay asleep.
            pool.wake.notify_last();
        } else if !pool.refusing.get() && self.may_open(now <= intended + ON_TIME, now) {
            self.size.set(self.size.get() + 1);
            w.spawn(serve(w.clone(), pool.clone(), target));
        }
    }

    /// Whether a request with no idle connection gets a new one: on time, within the opening
    /// budget; late, only after the backlog spacing.
    fn may_open(&self, on_time: bool, now: Instant) -> bool {
        let budget = match self.budget_at.get() {
            None => OPEN_BURST,
            Some(at) => {
                let refill = now.saturating_duration_since(at).as_secs_f64() * OPEN_RATE;
                (self.budget.get() + refill).min(OPEN_BURST)
            }
        };
        self.budget_at.set(Some(now));
        if on_time {
            let open = budget >= 1.0;
            self.budget.set(if open { budget - 1.0 } else { budget });
            return open;
        }
        self.budget.set(budget);
        let spacing = BACKLOG_OPEN_SPACING * self.size.get();
        let due = self.last_backlog_open.get().is_none_or(|last| now >= last + spacing);
        if due {
            self.last_backlog_open.set(Some(now));
        }
        due
    }
}

/// One connection's task: sends due requests to its target one at a time until the run ends.
async fn serve<D: Driver>(w: Rc<Worker<D>>, pool: Rc<Pool>, target: usize) {
    let mut conn = None;
    let mut opened = false;
    while !w.control.aborted() {
        let next = pool.due.borrow_mut().pop_front();
        match next {
            Some(intended) if !opened && pool.refusing.get() && pool.connecting.get() > 0 => {
                // A task started before the target refused (the sends of one wake-up each start
                // one before any of them has run) is a new connection all the same: it waits
                // while another attempt is under way, and leaves the request to the next free one.
                pool.due.borrow_mut().push_front(intended);
                pool.idle.set(pool.idle.get() + 1);
                pool.wake.notified().await;
            }
            Some(intended) => {
                // The outcome is already in the statistics; a broken connection is reopened.
                let connecting = conn.is_none();
                pool.connecting.set(pool.connecting.get() + usize::from(connecting));
                let outcome = w.issue(target, &mut conn, intended).await;
                pool.connecting.set(pool.connecting.get() - usize::from(connecting));
                opened |= conn.is_some();
                pool.refusing.set(outcome == Err(ErrorKind::Connect));
                w.in_flight.set(w.in_flight.get() - 1);
            }
            None => {
                pool.idle.set(pool.idle.get() + 1);
                pool.wake.notified().await;
            }
        }
    }
}

fn count_unsent<D: Driver>(w: &Worker<D>, first: Instant, schedule: &mut Schedule) {
    let mut stats = w.stats.borrow_mut();
    stats.on_dropped(&w.clock, first);
    while let Some(offset) = schedule.next_offset() {
        let intended = w.clock.start + offset;
        if intended >= w.clock.window_end {
            break;
        }
        stats.on_dropped(&w.clock, intended);
    }
}

/// Waits for an intended send time with the precise timer when there is one; false on abort.
async fn wait_until<D: Driver>(w: &Worker<D>, timer: Option<&PreciseTimer>, intended: Instant) -> bool {
    let coarse = intended.checked_sub(std::time::Duration::from_millis(50)).unwrap_or(intended);
    if coarse > Instant::now() && !w.sleep_until_or_abort(coarse).await {
        return false;
    }
    match timer {
        Some(t) if t.sleep_until(intended).await.is_ok() => true,
        _ => w.sleep_until_or_abort(intended).await,
    }
}

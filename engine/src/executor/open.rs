//! The open model: requests leave on the schedule's intended times whatever the replies do.
//!
//! Each send is timed from its intended time (coordinated-omission corrected); a send that finds
//! the in-flight cap reached is counted `dropped` at once rather than queued, so a backlog in the
//! system under test shows as drops and latency instead of a slower offered rate.
//!
//! Waking up costs more CPU than sending (a context switch each time), so sends due within
//! `slack` of one another share one wake-up: the loop sleeps until the first is due, exactly,
//! and sends the rest up to `slack` early. An early send is timed from when it left, so batching
//! never shortens a latency; it only moves an arrival by less than `slack`.

use super::Worker;
use crate::driver::Driver;
use crate::schedule::Schedule;
use crate::timer::PreciseTimer;
use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

/// After this many back-to-back sends without sleeping, yield so replies get read.
const BURST: u32 = 32;

pub async fn run<D>(w: Rc<Worker<D>>, mut schedule: Schedule, max_in_flight: u64, slack: Duration)
where
    D: Driver + 'static,
    D::Conn: 'static,
{
    let timer = PreciseTimer::new().ok();
    let idle: Rc<RefCell<Vec<D::Conn>>> = Rc::new(RefCell::new(Vec::new()));
    let mut burst = 0;
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
        let conn = idle.borrow_mut().pop();
        let (w2, idle2) = (w.clone(), idle.clone());
        w.spawn(async move {
            let mut conn = conn;
            let _ = w2.issue(&mut conn, intended).await;
            if let Some(c) = conn {
                idle2.borrow_mut().push(c);
            }
            w2.in_flight.set(w2.in_flight.get() - 1);
        });
    }
    w.drain().await;
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

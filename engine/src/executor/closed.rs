//! The closed model: a fixed number of users, each sending a request, waiting for its reply,
//! then thinking. Throughput is whatever the system returns: users / (response + think). A user
//! refused a connection waits the plan's back-off and tries again; the time spent reconnecting
//! counts in the latency of the request that gets through.

use super::Worker;
use crate::driver::{Driver, ErrorKind};
use crate::plan::Think;
use crate::schedule::{think_time, Rng};
use std::rc::Rc;
use std::time::{Duration, Instant};

/// Starts one task per user, each sending to its own target (`user_targets`, by target number).
pub async fn run<D>(w: Rc<Worker<D>>, user_targets: Vec<usize>, think: Think, seed: u64)
where
    D: Driver + 'static,
    D::Conn: 'static,
{
    for (u, target) in user_targets.into_iter().enumerate() {
        let rng = Rng::new(seed.wrapping_add(u as u64 * 7919));
        w.spawn(user(w.clone(), target, think, rng));
    }
    let end = w.clock.window_end;
    while !w.stopping(Instant::now()) {
        let now = Instant::now();
        let step = (end.saturating_duration_since(now)).min(Duration::from_millis(10));
        tokio::time::sleep(step).await;
    }
    // Users send nothing more; requests already out get the drain time to come back.
    w.drain().await;
}

async fn user<D: Driver>(w: Rc<Worker<D>>, target: usize, think: Think, mut rng: Rng) {
    // Start with the run clock, so the first request is timed like every other.
    tokio::time::sleep_until(w.clock.start.into()).await;
    let mut conn = None;
    // Since when the user has been waiting to reconnect: that wait is the system's, so it counts
    // in the latency of the user's next request.
    let mut reconnecting_since = None;
    loop {
        let now = Instant::now();
        if w.stopping(now) || !w.claim(now) {
            break;
        }
        w.in_flight.set(w.in_flight.get() + 1);
        let intended = reconnecting_since.take().unwrap_or_else(Instant::now);
        let outcome = w.issue(target, &mut conn, intended).await;
        w.in_flight.set(w.in_flight.get() - 1);
        // A user whose connection attempt failed waits before retrying, instead of spinning, and
        // retries without thinking.
        if matches!(outcome, Err(ErrorKind::Connect | ErrorKind::Auth)) {
            reconnecting_since = Some(Instant::now());
            tokio::time::sleep(w.reconnect_backoff).await;
            continue;
        }
        if let Some(pause) = think_time(&think, &mut rng) {
            tokio::time::sleep(pause).await;
        }
    }
}

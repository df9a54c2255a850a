//! The closed model: a fixed number of users, each sending a request, waiting for its reply,
//! then thinking. Throughput is whatever the system returns: users / (response + think). A user
//! refused a connection waits the plan's back-off and tries again; the time spent reconnecting
//! counts in the latency of the request that gets through. Users who think do not all send at
//! the run start: each first waits its `first_send_offset`, so the population opens in its
//! steady state instead of with a burst of every user at once — or, given a logon window, each
//! first sends at a uniform time in it, opening its session before the measured window.

use super::Worker;
use crate::driver::{Driver, ErrorKind};
use crate::plan::Think;
use crate::schedule::{first_send_offset, think_time, Rng};
use std::rc::Rc;
use std::time::{Duration, Instant};

/// Starts one task per user, each sending to its own target (`user_targets`, by target number).
/// This thread's users are users `index`, `index + threads` … of the plan's `users`.
pub async fn run<D>(
    w: Rc<Worker<D>>,
    user_targets: Vec<usize>,
    users: usize,
    think: Think,
    logon: Duration,
    seed: u64,
) where
    D: Driver + 'static,
    D::Conn: 'static,
{
    for (u, target) in user_targets.into_iter().enumerate() {
        let mut rng = Rng::new(seed.wrapping_add(u as u64 * 7919));
        let first = if logon.is_zero() {
            first_send_offset(&think, w.index + u * w.threads, users, &mut rng)
        } else {
            logon.mul_f64(rng.unit())
        };
        w.spawn(user(w.clone(), target, think, first, rng));
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

async fn user<D: Driver>(w: Rc<Worker<D>>, target: usize, think: Think, first: Duration, mut rng: Rng) {
    // Start on the run clock (plus the user's offset), so the first request is timed like every other.
    tokio::time::sleep_until((w.clock.start + first).into()).await;
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

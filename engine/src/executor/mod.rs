//! Executors own timing: when each request is sent and what it is timed from. One file each;
//! both share the worker thread set-up, the request mix and `Worker::issue`, which times one
//! request through the driver and hands the record to the thread's statistics.
//!
//! With several targets a worker holds one driver per target; a closed user keeps to one target
//! and an open arrival is given one, round-robin, so the load spreads evenly over them.

pub mod closed;
pub mod open;

use crate::driver::tls::Handshake;
use crate::driver::{Driver, ErrorKind};
use crate::plan::Think;
use crate::schedule::{Rng, Schedule};
use crate::stats::{IntervalPart, RequestRecord, RunClock, ThreadStats};
use std::cell::{Cell, RefCell};
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// What the coordinator and the workers share: the stop signal, the request budget, and the
/// first failure that makes the run's figures untrustworthy.
#[derive(Debug, Default)]
pub struct Control {
    /// Ctrl-C, a failing callback or a failed worker: stop sending, do not wait for replies.
    pub abort: AtomicBool,
    /// Measured-window sends so far, when the plan sets `max_requests`.
    pub budget_used: AtomicU64,
    pub max_requests: Option<u64>,
    failure: Mutex<Option<String>>,
}

impl Control {
    pub fn new(max_requests: Option<u64>) -> Control {
        Control { max_requests, ..Control::default() }
    }

    fn aborted(&self) -> bool {
        self.abort.load(Ordering::Relaxed)
    }

    /// Records why the run cannot be trusted (the first reason wins) and stops every worker:
    /// counts lost with a failed task or thread would make the result quietly wrong.
    pub fn fail(&self, reason: String) {
        let mut failure = self.failure.lock().unwrap_or_else(|p| p.into_inner());
        failure.get_or_insert(reason);
        self.abort.store(true, Ordering::Relaxed);
    }

    /// The recorded failure, if any.
    pub fn failure(&self) -> Option<String> {
        self.failure.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// True once `max_requests` measured requests have been claimed.
    pub fn budget_spent(&self) -> bool {
        self.max_requests.is_some_and(|max| self.budget_used.load(Ordering::Relaxed) >= max)
    }
}

/// The text a panic was raised with, for the run's failure reason.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".to_string()
    }
}

/// A task that fails the run if it panics. Tokio would otherwise drop the task quietly, and
/// with it the request it was timing, its connection and its place in the in-flight count.
struct FailsRunOnPanic<F> {
    task: Pin<Box<F>>,
    control: Arc<Control>,
    thread: usize,
}

impl<F: Future<Output = ()>> Future for FailsRunOnPanic<F> {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let polled = std::panic::catch_unwind(AssertUnwindSafe(|| self.task.as_mut().poll(cx)));
        match polled {
            Ok(poll) => poll,
            Err(payload) => {
                let reason = format!("worker thread {} panicked: {}", self.thread, panic_message(&*payload));
                self.control.fail(reason);
                Poll::Ready(())
            }
        }
    }
}

/// How one worker thread's share of the load is generated.
pub enum Share {
    Open {
        schedule: Schedule,
        max_in_flight: u64,
        slack: Duration,
    },
    /// One entry per user of this thread: the number of the target that user sends to; `users`
    /// is the plan's whole population (users are numbered across threads).
    Closed {
        user_targets: Vec<usize>,
        users: usize,
        think: Think,
        /// The window the users' first requests are spread over (zero: a think time each).
        logon: Duration,
    },
}

/// Per-thread settings handed over by the coordinator.
pub struct WorkerSetup {
    pub index: usize,
    pub threads: usize,
    pub clock: RunClock,
    pub share: Share,
    pub weights: Vec<f64>,
    pub timeout: Duration,
    pub drain: Duration,
    /// Closed model: a user's wait after a failed connection attempt.
    pub reconnect_backoff: Duration,
    pub seed: u64,
    pub control: Arc<Control>,
}

/// What a worker sends the coordinator.
pub enum Message {
    Interval(IntervalPart),
    Done(Box<WorkerOutcome>),
}

pub struct WorkerOutcome {
    pub stats: ThreadStats,
    /// CPU seconds this thread used, and the share of its wall time that was.
    pub cpu_s: f64,
    pub busy: f64,
    /// When the worker stopped sending (before waiting for outstanding replies).
    pub sending_ended: Instant,
    pub in_flight_at_end: u64,
    pub connects: u64,
}

/// Weighted choice among request classes.
struct Mix {
    cumulative: Vec<f64>,
    rng: Rng,
}

impl Mix {
    fn new(weights: &[f64], seed: u64) -> Mix {
        let mut total = 0.0;
        let cumulative = weights
            .iter()
            .map(|w| {
                total += w;
                total
            })
            .collect();
        Mix { cumulative, rng: Rng::new(seed) }
    }

    fn pick(&mut self) -> usize {
        if self.cumulative.len() == 1 {
            return 0;
        }
        let x = self.rng.unit() * self.cumulative[self.cumulative.len() - 1];
        self.cumulative.partition_point(|&c| c < x).min(self.cumulative.len() - 1)
    }
}

/// One worker thread's state, shared by its tasks (single-threaded runtime: no locks).
pub struct Worker<D: Driver> {
    /// One driver per target, by target number.
    pub drivers: Vec<D>,
    pub clock: RunClock,
    pub stats: RefCell<ThreadStats>,
    pub in_flight: Cell<u64>,
    pub control: Arc<Control>,
    pub timeout: Duration,
    pub drain: Duration,
    pub reconnect_backoff: Duration,
    pub index: usize,
    pub threads: usize,
    mix: RefCell<Mix>,
    next_seq: Cell<u64>,
    seq_step: u64,
    connects: Cell<u64>,
    sending_ended: Cell<Option<Instant>>,
}

impl<D: Driver> Worker<D> {
    /// Starts a task on this thread; a panic inside it fails the run with its message.
    pub fn spawn(&self, task: impl Future<Output = ()> + 'static) {
        let control = self.control.clone();
        tokio::task::spawn_local(FailsRunOnPanic { task: Box::pin(task), control, thread: self.index });
    }

    /// True when no further request should be started.
    pub fn stopping(&self, now: Instant) -> bool {
        now >= self.clock.window_end || self.control.aborted() || self.control.budget_spent()
    }

    /// Claims one request of the `max_requests` budget before it is sent; false when the budget
    /// is spent (the claim is atomic, so threads together never exceed it).
    pub fn claim(&self, intended: Instant) -> bool {
        match self.control.max_requests {
            Some(max) if self.clock.measured(intended) => {
                self.control.budget_used.fetch_add(1, Ordering::Relaxed) < max
            }
            _ => true,
        }
    }

    pub fn mark_sending_ended(&self) {
        if self.sending_ended.get().is_none() {
            self.sending_ended.set(Some(Instant::now()));
        }
    }

    /// Sends one request intended for `intended` to target number `target` over `conn` (opening
    /// it if needed), times it, and records the result. The connection is dropped when it is no
    /// longer usable.
    pub async fn issue(
        &self,
        target: usize,
        conn: &mut Option<D::Conn>,
        intended: Instant,
    ) -> Result<(), ErrorKind> {
        let class = self.mix.borrow_mut().pick();
        let seq = self.next_seq.get();
        self.next_seq.set(seq + self.seq_step);
        let start = Instant::now();
        self.stats.borrow_mut().on_sent(&self.clock, class, intended, start);
        let driver = &self.drivers[target];
        let attempt = self.attempt(driver, conn, class, seq, intended);
        let outcome = match tokio::time::timeout(self.timeout, attempt).await {
            Ok(outcome) => outcome,
            Err(_) => {
                *conn = None;
                Err(ErrorKind::Timeout)
            }
        };
        let record = RequestRecord { class, target, intended, start, end: Instant::now(), outcome };
        let mut stats = self.stats.borrow_mut();
        stats.on_done(&self.clock, &record);
        if let Err(kind) = outcome {
            // Nothing else ran on this thread since the driver's error: the words are this one's.
            if let Some(words) = driver.take_error_detail() {
                stats.on_error_detail(kind, words);
            }
        }
        outcome
    }

    async fn attempt(
        &self,
        driver: &D,
        conn: &mut Option<D::Conn>,
        class: usize,
        seq: u64,
        intended: Instant,
    ) -> Result<(), ErrorKind> {
        let c = match conn {
            Some(c) => c,
            None => {
                self.connects.set(self.connects.get() + 1);
                let c = conn.insert(driver.connect().await?);
                if let Some(handshake) = driver.handshake(c) {
                    let resumed = handshake == Handshake::Resumed;
                    self.stats.borrow_mut().on_handshake(&self.clock, Instant::now(), resumed);
                }
                c
            }
        };
        let exchanged = driver.exchange(c, class, seq).await;
        let mut steps = Vec::new();
        driver.take_steps(c, &mut steps);
        if !steps.is_empty() && self.clock.measured(intended) {
            let mut stats = self.stats.borrow_mut();
            for (name, took) in steps {
                stats.on_step(name, took);
            }
        }
        match exchanged {
            Ok(reply) => {
                if !reply.keep_alive {
                    *conn = None;
                }
                reply.error.map_or(Ok(()), Err)
            }
            Err(kind) => {
                *conn = None;
                Err(kind)
            }
        }
    }

    /// After sending stops, waits for outstanding replies up to the drain limit (none on abort).
    pub async fn drain(&self) {
        self.mark_sending_ended();
        let deadline = Instant::now() + self.drain;
        while self.in_flight.get() > 0 && Instant::now() < deadline && !self.control.aborted() {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    /// Sleeps until `deadline` in slices, so an abort is noticed within 50 ms. Returns false on abort.
    pub async fn sleep_until_or_abort(&self, deadline: Instant) -> bool {
        const SLICE: Duration = Duration::from_millis(50);
        loop {
            if self.control.aborted() {
                return false;
            }
            let now = Instant::now();
            if deadline <= now {
                return true;
            }
            let until = if deadline - now > SLICE { now + SLICE } else { deadline };
            tokio::time::sleep_until(until.into()).await;
        }
    }
}

/// Closes an interval at each boundary of the run's interval clock and sends it on.
async fn report_intervals<D: Driver>(w: Rc<Worker<D>>, tx: Sender<Message>) {
    let mut boundary = w.clock.start + w.clock.interval;
    loop {
        tokio::time::sleep_until(boundary.into()).await;
        let part = w.stats.borrow_mut().take_interval(w.in_flight.get());
        if tx.send(Message::Interval(part)).is_err() {
            return;
        }
        boundary += w.clock.interval;
    }
}

/// The body of one worker thread: builds a single-threaded runtime, runs this thread's share of
/// the load next to the interval reporter, then hands its statistics to the coordinator.
pub fn run_thread<D>(drivers: Vec<D>, setup: WorkerSetup, tx: Sender<Message>)
where
    D: Driver + 'static,
    D::Conn: 'static,
{
    let cpu_before = crate::cpu::thread_cpu_s();
    let wall_before = Instant::now();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("tokio runtime");
    let targets = drivers.len();
    let worker = Rc::new(Worker {
        drivers,
        clock: setup.clock,
        stats: RefCell::new(ThreadStats::new(setup.weights.len(), targets)),
        in_flight: Cell::new(0),
        control: setup.control,
        timeout: setup.timeout,
        drain: setup.drain,
        reconnect_backoff: setup.reconnect_backoff,
        index: setup.index,
        threads: setup.threads,
        mix: RefCell::new(Mix::new(&setup.weights, setup.seed ^ 0x5EED)),
        next_seq: Cell::new(setup.index as u64),
        seq_step: setup.threads as u64,
        connects: Cell::new(0),
        sending_ended: Cell::new(None),
    });
    let local = tokio::task::LocalSet::new();
    local.block_on(&runtime, async {
        worker.spawn(report_intervals(worker.clone(), tx.clone()));
        match setup.share {
            Share::Open { schedule, max_in_flight, slack } => {
                open::run(worker.clone(), schedule, max_in_flight, slack).await
            }
            Share::Closed { user_targets, users, think, logon } => {
                closed::run(worker.clone(), user_targets, users, think, logon, setup.seed).await
            }
        }
    });
    let in_flight_at_end = worker.in_flight.get();
    let sending_ended = worker.sending_ended.get().unwrap_or_else(Instant::now);
    let last = worker.stats.borrow_mut().take_interval(in_flight_at_end);
    // A send fails only once the coordinator has gone, and then nobody is left to tell.
    let _ = tx.send(Message::Interval(last));
    drop(local);
    drop(runtime);
    let cpu_s = crate::cpu::thread_cpu_s() - cpu_before;
    let wall = wall_before.elapsed().as_secs_f64().max(1e-9);
    let worker = Rc::try_unwrap(worker).ok().expect("all tasks ended with the runtime");
    let _ = tx.send(Message::Done(Box::new(WorkerOutcome {
        stats: worker.stats.into_inner(),
        cpu_s,
        busy: cpu_s / wall,
        sending_ended,
        in_flight_at_end,
        connects: worker.connects.get(),
    })));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mix_follows_weights() {
        let mut mix = Mix::new(&[1.0, 3.0], 1);
        let n = 40_000;
        let second = (0..n).filter(|_| mix.pick() == 1).count() as f64 / n as f64;
        assert!((second - 0.75).abs() < 0.01, "{second}");
    }
}

//! The coordinator: checks the targets are reachable, starts one worker thread per share of the
//! load, merges their interval parts into snapshots as they arrive, and assembles the result.

use crate::driver::http::HttpDriver;
use crate::driver::imap::ImapDriver;
use crate::driver::mail::Mailboxes;
use crate::driver::postgres::PostgresDriver;
use crate::driver::smtp::SmtpDriver;
use crate::driver::tcp::TcpDriver;
use crate::driver::tls::{client_config, TlsClient};
use crate::driver::Driver;
use crate::executor::{panic_message, run_thread, Control, Message, Share, WorkerOutcome, WorkerSetup};
use crate::plan::{is_postgres, Load, MailOptions, Plan, PlanError, Scheme, TlsOptions, Url};
use crate::result::{
    ClassResult, GeneratorFigures, IntervalSnapshot, RunResult, StepResult, TargetInterval, TargetSeries,
};
use crate::schedule::{RateProfile, Schedule};
use crate::stats::{encode, IntervalPart, RunClock, Summary, ThreadStats};
use std::collections::BTreeMap;
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::panic::AssertUnwindSafe;
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Descriptors kept back from the in-flight cap for everything else the process opens.
const FD_RESERVE: u64 = 256;
/// Longest wait for outstanding replies once sending stops.
const DRAIN_MAX: Duration = Duration::from_secs(5);
/// A worker thread busier than this may be the bottleneck itself.
const BUSY_LIMIT: f64 = 0.95;

#[derive(Debug)]
pub enum RunError {
    Plan(PlanError),
    /// Nothing answers at the target; the message says what the OS said.
    Unreachable(String),
    /// A worker thread or task failed (a panic, a thread that would not start): its counts are
    /// missing, so the run has no result. The message says which and why.
    WorkerFailed(String),
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Plan(e) => write!(f, "{e}"),
            RunError::Unreachable(m) | RunError::WorkerFailed(m) => write!(f, "{m}"),
        }
    }
}

impl std::error::Error for RunError {}

/// Callbacks from the coordinator: a snapshot per interval, and a poll for "stop now" (Ctrl-C).
pub struct Hooks<'a> {
    pub on_interval: &'a mut dyn FnMut(&IntervalSnapshot),
    pub should_abort: &'a mut dyn FnMut() -> bool,
}

pub fn run(plan: &Plan, hooks: Hooks<'_>) -> Result<RunResult, RunError> {
    plan.validate().map_err(RunError::Plan)?;
    let targets: Vec<_> = plan.targets().collect();
    let field = |i: usize| if i == 0 { "target".to_string() } else { format!("extra_targets[{}]", i - 1) };
    if is_postgres(&plan.target.url) {
        // libpq's URL may name several hosts; whether any answers is for the connections to find.
        let timeout = Duration::from_secs_f64(plan.timeout_s);
        let driver = |i: usize| {
            let target = targets[i];
            let scale = target.scale.unwrap_or(1);
            PostgresDriver::new(
                &field(i),
                &target.url,
                target.password.as_deref(),
                scale,
                &plan.requests,
                timeout,
                plan.seed,
            )
        };
        return coordinate(plan, driver, hooks);
    }
    let tls_options = plan.tls.clone().unwrap_or_default();
    // One configuration, so one session cache, for the whole run: connections resume sessions
    // earlier ones (on any thread) were given.
    let tls_config = match Url::parse(&plan.target.url) {
        Ok(url) if url.scheme.is_tls() || plan.starttls() => {
            Some(client_config(&tls_options).map_err(RunError::Plan)?)
        }
        _ => None,
    };
    let mut urls = Vec::with_capacity(targets.len());
    for (i, t) in targets.iter().enumerate() {
        let url = Url::parse(&t.url)
            .map_err(|m| RunError::Plan(PlanError { field: format!("{}.url", field(i)), message: m }))?;
        let addr = resolve(&url)?;
        let timeout = Duration::from_secs_f64(plan.timeout_s.min(5.0));
        preflight(addr, timeout)?;
        let tls = match &tls_config {
            Some(config) => {
                let client =
                    TlsClient::new(config.clone(), &tls_options, &url.host).map_err(RunError::Plan)?;
                if url.scheme.is_tls() && !url.scheme.is_mail() {
                    // Mail targets are checked by `mail_preflight` (the handshake, then the
                    // greeting; STARTTLS after it), patient for the whole request timeout.
                    client.preflight(&tls_options, addr, timeout).map_err(RunError::Unreachable)?;
                }
                Some(client)
            }
            None => None,
        };
        urls.push((url, addr, tls));
    }
    // Validated: every target speaks the first one's protocol.
    match urls[0].0.scheme {
        Scheme::Http | Scheme::Https => {
            let driver = |i: usize| HttpDriver::new(urls[i].1, &urls[i].0, &plan.requests, urls[i].2.clone());
            coordinate(plan, driver, hooks)
        }
        Scheme::Tcp | Scheme::Tls => {
            let driver = |i: usize| {
                let framing = targets[i].framing.expect("validated: tcp targets have a framing");
                TcpDriver::new(urls[i].1, framing, &plan.requests, urls[i].2.clone())
            };
            coordinate(plan, driver, hooks)
        }
        Scheme::Smtp | Scheme::Smtps | Scheme::Imap | Scheme::Imaps => {
            run_mail(plan, &urls, &tls_options, hooks)
        }
    }
}

/// SMTP and IMAP: one session set-up per target before the run (greeting, EHLO or CAPABILITY,
/// STARTTLS), so a wrong port or a certificate that fails verification after STARTTLS stops
/// the run at once with its reason; then the run, every driver sharing the compiled mailboxes.
fn run_mail(
    plan: &Plan,
    urls: &[(Url, SocketAddr, Option<TlsClient>)],
    tls_options: &TlsOptions,
    hooks: Hooks<'_>,
) -> Result<RunResult, RunError> {
    let defaults = MailOptions::default();
    let options = plan.mail.as_ref().unwrap_or(&defaults);
    let mailboxes = Mailboxes::new(options).map_err(RunError::Plan)?;
    let required = options.starttls == Some(true);
    let split = |scheme: Scheme, tls: Option<TlsClient>| match tls {
        Some(client) if scheme.is_tls() => (Some(client), None),
        Some(client) => (None, Some((client, required))),
        None => (None, None),
    };
    let smtp = urls[0].0.scheme.is_smtp();
    // The request timeout, not less: a server still working through the last trial's queue greets
    // late, and a capacity search must see that as a slow trial, not as a server that is not there.
    let timeout = Duration::from_secs_f64(plan.timeout_s);
    for (url, addr, tls) in urls {
        // A configuration of its own, so that the run's first connection does not resume its session.
        let fresh = match tls {
            Some(_) => Some(
                TlsClient::new(client_config(tls_options).map_err(RunError::Plan)?, tls_options, &url.host)
                    .map_err(RunError::Plan)?,
            ),
            None => None,
        };
        let (implicit, starttls) = split(url.scheme, fresh);
        let mb = mailboxes.clone();
        if smtp {
            mail_preflight(
                SmtpDriver::new(*addr, implicit, starttls, mb, options, &plan.requests),
                *addr,
                timeout,
            )?;
        } else {
            mail_preflight(ImapDriver::new(*addr, implicit, starttls, mb, options), *addr, timeout)?;
        }
    }
    if smtp {
        let driver = |i: usize| {
            let (implicit, starttls) = split(urls[i].0.scheme, urls[i].2.clone());
            Ok(SmtpDriver::new(urls[i].1, implicit, starttls, mailboxes.clone(), options, &plan.requests))
        };
        coordinate(plan, driver, hooks)
    } else {
        let driver = |i: usize| {
            let (implicit, starttls) = split(urls[i].0.scheme, urls[i].2.clone());
            Ok(ImapDriver::new(urls[i].1, implicit, starttls, mailboxes.clone(), options))
        };
        coordinate(plan, driver, hooks)
    }
}

/// One session opened before the run (greeting, TLS, login) within `timeout`: a wrong port, a
/// refused password or a server that is not a mail server fails the run at once with the reason.
fn mail_preflight<D: Driver>(driver: D, addr: SocketAddr, timeout: Duration) -> Result<(), RunError> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("tokio runtime");
    match runtime.block_on(async { tokio::time::timeout(timeout, driver.connect()).await }) {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(kind)) => {
            let words = driver.take_error_detail().unwrap_or_else(|| format!("{} error", kind.name()));
            Err(RunError::Unreachable(format!("{addr}: {words}")))
        }
        Err(_) => Err(RunError::Unreachable(format!(
            "{addr}: no greeting within {:.1} s, the request timeout (is it a mail server, and not overloaded?)",
            timeout.as_secs_f64()
        ))),
    }
}

fn resolve(url: &Url) -> Result<SocketAddr, RunError> {
    (url.host.as_str(), url.port)
        .to_socket_addrs()
        .map_err(|e| RunError::Unreachable(format!("cannot resolve {}: {e}", url.host)))?
        .next()
        .ok_or_else(|| RunError::Unreachable(format!("{} has no address", url.host)))
}

/// One connection before the run, so a wrong port fails in milliseconds with the OS's reason
/// instead of as a run full of `connect` errors.
fn preflight(addr: SocketAddr, timeout: Duration) -> Result<(), RunError> {
    match TcpStream::connect_timeout(&addr, timeout) {
        Ok(_) => Ok(()),
        Err(e) => {
            let why = match e.kind() {
                std::io::ErrorKind::ConnectionRefused => {
                    "connection refused (is the server running?)".to_string()
                }
                std::io::ErrorKind::TimedOut => format!("no answer within {:.1} s", timeout.as_secs_f64()),
                _ => e.to_string(),
            };
            Err(RunError::Unreachable(format!("cannot connect to {addr}: {why}")))
        }
    }
}

fn default_threads() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}

fn coordinate<D, F>(plan: &Plan, make_driver: F, hooks: Hooks<'_>) -> Result<RunResult, RunError>
where
    D: Driver + Send + 'static,
    D::Conn: 'static,
    F: Fn(usize) -> Result<D, PlanError>,
{
    let mut threads = plan.threads.map(|t| t as usize).unwrap_or_else(default_threads);
    let max_in_flight = match plan.load {
        Load::Open { .. } => Some(in_flight_cap(plan)),
        Load::Closed { .. } => None,
    };
    if let Some(cap) = max_in_flight {
        // Each thread holds at least one request, so more threads than the cap would exceed it.
        threads = threads.min(cap as usize).max(1);
    }
    let control = Arc::new(Control::new(plan.max_requests));
    let interval = Duration::from_secs_f64(plan.interval_s);
    // Start a moment ahead so every thread is up before the first intended send.
    let start = Instant::now() + Duration::from_millis(20);
    let warmup_end = start + plan.warmup();
    let clock = RunClock { start, warmup_end, window_end: warmup_end + plan.duration(), interval };
    // Every driver (one per thread and target) is built before any thread starts, so a bad plan
    // never leaves load running.
    let targets = plan.target_count();
    let drivers = (0..threads)
        .map(|_| (0..targets).map(&make_driver).collect::<Result<Vec<D>, _>>())
        .collect::<Result<Vec<_>, _>>()
        .map_err(RunError::Plan)?;
    let cpu_before = crate::cpu::process_cpu_s();
    let (tx, rx) = mpsc::channel();
    let mut handles = Vec::with_capacity(threads);
    for (index, thread_drivers) in drivers.into_iter().enumerate() {
        let setup = WorkerSetup {
            index,
            threads,
            clock,
            share: share_for(plan, index, threads, max_in_flight),
            weights: plan.requests.iter().map(|c| c.weight).collect(),
            timeout: Duration::from_secs_f64(plan.timeout_s),
            drain: Duration::from_secs_f64(plan.timeout_s).min(DRAIN_MAX),
            reconnect_backoff: plan.reconnect_backoff(),
            seed: plan.seed.wrapping_add(index as u64 * 0x1000_0001),
            control: control.clone(),
        };
        let (tx, thread_control) = (tx.clone(), control.clone());
        let spawned = std::thread::Builder::new().name(format!("caplab-worker-{index}")).spawn(move || {
            // A panic outside any task (set-up, hand-over) stops the others at once, with its reason.
            let body = AssertUnwindSafe(|| run_thread(thread_drivers, setup, tx));
            if let Err(payload) = std::panic::catch_unwind(body) {
                thread_control.fail(format!("worker thread {index} panicked: {}", panic_message(&*payload)));
            }
        });
        match spawned {
            Ok(handle) => handles.push(handle),
            Err(e) => {
                control.fail(format!("cannot start worker thread {index}: {e}"));
                break;
            }
        }
    }
    drop(tx);
    let mut merger = IntervalMerger::new(clock, threads, targets);
    let mut outcomes: Vec<WorkerOutcome> = Vec::with_capacity(threads);
    let mut interrupted = false;
    let mut on_interval = hooks.on_interval;
    let should_abort = hooks.should_abort;
    loop {
        match rx.recv_timeout(Duration::from_millis(50)) {
            Ok(Message::Interval(part)) => merger.add(part, &mut on_interval),
            Ok(Message::Done(outcome)) => outcomes.push(*outcome),
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
        if !interrupted && should_abort() {
            interrupted = true;
            control.abort.store(true, Ordering::Relaxed);
        }
    }
    for (index, h) in handles.into_iter().enumerate() {
        if let Err(payload) = h.join() {
            control.fail(format!("worker thread {index} panicked: {}", panic_message(&*payload)));
        }
    }
    if let Some(reason) = control.failure() {
        return Err(RunError::WorkerFailed(reason));
    }
    if outcomes.len() != threads {
        let missing = threads - outcomes.len();
        return Err(RunError::WorkerFailed(format!(
            "{missing} of {threads} worker threads ended without handing over their counts"
        )));
    }
    let ended = Instant::now();
    merger.flush(ended, &mut on_interval);
    let cpu_s = crate::cpu::process_cpu_s() - cpu_before;
    let stopped_early = interrupted || control.budget_spent();
    Ok(assemble(
        plan,
        clock,
        threads,
        outcomes,
        merger.snapshots,
        merger.per_target,
        cpu_s,
        max_in_flight,
        interrupted,
        stopped_early,
    ))
}

/// Default cap: a one-second stall at the peak rate is absorbed, within the descriptors we have.
fn in_flight_cap(plan: &Plan) -> u64 {
    let fd_safe = crate::cpu::raise_fd_limit().saturating_sub(FD_RESERVE).max(1);
    match plan.max_in_flight {
        Some(cap) => (cap as u64).min(fd_safe),
        None => (plan.peak_rate().unwrap_or(0.0).ceil() as u64).max(100).min(fd_safe),
    }
}

fn share_for(plan: &Plan, index: usize, threads: usize, max_in_flight: Option<u64>) -> Share {
    match &plan.load {
        Load::Open { arrivals, profile } => {
            let scale = 1.0 / threads as f64;
            let rates = RateProfile::new(profile, plan.warmup_s, scale);
            let phase = index as f64 / threads as f64;
            let seed = plan.seed.wrapping_add(index as u64).wrapping_mul(0x2545_F491_4F6C_DD1D);
            let cap = max_in_flight.unwrap_or(1);
            // Spread the cap; every thread may hold at least one request.
            let share = (cap / threads as u64 + u64::from((index as u64) < cap % threads as u64)).max(1);
            let slack = send_slack(plan, threads);
            Share::Open {
                schedule: Schedule::new(rates, *arrivals, phase, seed),
                max_in_flight: share,
                slack,
            }
        }
        Load::Closed { users, think, logon_s } => {
            // User u runs on thread u mod threads and sends to target u mod targets.
            let targets = plan.target_count();
            let user_targets = (index..*users as usize).step_by(threads).map(|u| u % targets).collect();
            let logon = Duration::from_secs_f64(*logon_s);
            Share::Closed { user_targets, users: *users as usize, think: *think, logon }
        }
    }
}

/// Above this per-thread rate, sends are close enough together that sharing wake-ups pays.
const BATCHING_RATE: f64 = 4_000.0;
/// A shared wake-up carries about this many sends where the bounds below allow. Sleeping and waking
/// cost more CPU than a send (15–25 µs a wake-up on a VM whose idle CPU halts, against about 6 µs
/// a request on loopback), and the replies to a batch that takes a while to send are read before the
/// thread sleeps again: at 20,000/s, 1 ms of slack took 4,000 wake-ups a second instead of 8,000
/// with 250 µs, and 35 % less of the thread's CPU per request.
const SENDS_PER_WAKE: f64 = 20.0;
const MIN_SLACK_US: f64 = 250.0;
/// No arrival moves more than this (oha's pacing, tokio's timer tick).
const MAX_SLACK_US: f64 = 1_000.0;

fn send_slack(plan: &Plan, threads: usize) -> Duration {
    let per_thread = plan.peak_rate().unwrap_or(0.0) / threads as f64;
    let us = plan.send_slack_us.unwrap_or_else(|| default_slack_us(per_thread));
    Duration::from_secs_f64(us / 1e6)
}

/// A thread's slack at its peak rate: none below `BATCHING_RATE` (every send exact), else
/// `SENDS_PER_WAKE` arrivals' time within [`MIN_SLACK_US`, `MAX_SLACK_US`].
fn default_slack_us(per_thread: f64) -> f64 {
    if per_thread < BATCHING_RATE {
        return 0.0;
    }
    (SENDS_PER_WAKE / per_thread * 1e6).clamp(MIN_SLACK_US, MAX_SLACK_US)
}

/// Collects each interval's parts from all threads and emits the merged snapshot in order; with
/// several targets, it keeps each target's series on the same intervals.
struct IntervalMerger {
    clock: RunClock,
    threads: usize,
    pending: BTreeMap<u64, (IntervalPart, usize)>,
    next: u64,
    snapshots: Vec<IntervalSnapshot>,
    /// Each target's intervals, by target number (empty for a single target).
    per_target: Vec<Vec<TargetInterval>>,
}

impl IntervalMerger {
    fn new(clock: RunClock, threads: usize, targets: usize) -> IntervalMerger {
        let per_target = vec![Vec::new(); if targets > 1 { targets } else { 0 }];
        IntervalMerger {
            clock,
            threads,
            pending: BTreeMap::new(),
            next: 0,
            snapshots: Vec::new(),
            per_target,
        }
    }

    fn add(&mut self, part: IntervalPart, emit: &mut dyn FnMut(&IntervalSnapshot)) {
        match self.pending.get_mut(&part.index) {
            Some((merged, n)) => {
                merged.merge(&part);
                *n += 1;
            }
            None => {
                self.pending.insert(part.index, (part, 1));
            }
        }
        while let Some((_, n)) = self.pending.get(&self.next) {
            if *n < self.threads {
                break;
            }
            let (part, _) = self.pending.remove(&self.next).expect("present");
            let end = self.clock.start + self.clock.interval * (self.next as u32 + 1);
            self.push(part, end, emit);
        }
    }

    /// Emits whatever is left (the final, partial interval) once all threads have stopped.
    fn flush(&mut self, ended: Instant, emit: &mut dyn FnMut(&IntervalSnapshot)) {
        let pending = std::mem::take(&mut self.pending);
        for (index, (part, _)) in pending {
            let end = (self.clock.start + self.clock.interval * (index as u32 + 1)).min(ended);
            self.push(part, end, emit);
        }
    }

    fn push(&mut self, part: IntervalPart, end: Instant, emit: &mut dyn FnMut(&IntervalSnapshot)) {
        let begin = self.clock.start + self.clock.interval * part.index as u32;
        if end <= begin && part.sent == 0 && part.completed == 0 && part.errors == 0 {
            return;
        }
        let secs = |t: Instant| t.saturating_duration_since(self.clock.start).as_secs_f64();
        let (start_s, end_s) = (secs(begin), secs(end.max(begin)));
        let snap = IntervalSnapshot::new(&part, start_s, end_s, begin < self.clock.warmup_end);
        for (series, counts) in self.per_target.iter_mut().zip(&part.targets) {
            series.push(TargetInterval {
                start_s,
                end_s,
                completed: counts.completed,
                errors: counts.errors,
            });
        }
        emit(&snap);
        self.snapshots.push(snap);
        self.next = self.next.max(part.index + 1);
    }
}

#[allow(clippy::too_many_arguments)]
fn assemble(
    plan: &Plan,
    clock: RunClock,
    threads: usize,
    outcomes: Vec<WorkerOutcome>,
    intervals: Vec<IntervalSnapshot>,
    target_intervals: Vec<Vec<TargetInterval>>,
    cpu_s: f64,
    max_in_flight: Option<u64>,
    interrupted: bool,
    stopped_early: bool,
) -> RunResult {
    let mut total = ThreadStats::new(plan.requests.len(), plan.target_count());
    let mut sending_ended = clock.start;
    let (mut in_flight_at_end, mut connects, mut busiest) = (0, 0, 0.0f64);
    for o in &outcomes {
        total.merge(&o.stats);
        sending_ended = sending_ended.max(o.sending_ended);
        in_flight_at_end += o.in_flight_at_end;
        connects += o.connects;
        busiest = busiest.max(o.busy);
    }
    // A run that ran its course measures the whole window; one stopped early (Ctrl-C, request
    // budget) only up to when sending stopped.
    let window_end = if stopped_early { sending_ended.min(clock.window_end) } else { clock.window_end };
    let measured_s = window_end.saturating_duration_since(clock.warmup_end).as_secs_f64();
    let mut latency = crate::stats::new_histogram();
    let mut service = crate::stats::new_histogram();
    let classes: Vec<ClassResult> = plan
        .requests
        .iter()
        .zip(&total.classes)
        .map(|(spec, c)| {
            latency.add(&c.latency).expect("same bounds");
            service.add(&c.service).expect("same bounds");
            ClassResult {
                name: spec.name.clone(),
                sent: c.sent,
                completed: c.completed,
                errors: c.errors,
                latency_ms: Summary::of(&c.latency),
                service_time_ms: Summary::of(&c.service),
                latency_hdr: encode(&c.latency),
                service_time_hdr: encode(&c.service),
            }
        })
        .collect();
    let errors_by_kind = total.errors_by_kind.iter().map(|(k, n)| (k.name(), *n)).collect();
    let error_samples = total.error_samples.iter().map(|(k, words)| (k.name(), words.clone())).collect();
    let per_target = plan
        .targets()
        .zip(&total.targets)
        .zip(target_intervals)
        .map(|((target, counts), intervals)| TargetSeries {
            label: target.label(),
            completed: counts.completed,
            errors: counts.errors,
            intervals,
        })
        .collect();
    let open = matches!(plan.load, Load::Open { .. });
    let lateness = Summary::of(&total.lateness);
    let lateness_p99 = if open { lateness.p99.or(lateness.max) } else { None };
    let held_rate = (open && measured_s > 0.0).then(|| total.left_in_window as f64 / measured_s);
    let held = match (held_rate, plan.offered_rate()) {
        (Some(held), Some(offered)) => format!("; it held {held:.0}/s of {offered:.0}/s offered"),
        _ => String::new(),
    };
    let saturation_reason = match lateness_p99 {
        Some(late) if late > plan.saturation_lateness_ms => Some(format!(
            "sends ran {late:.1} ms behind schedule at p99 (limit {:.1} ms): the generator could not keep the offered rate{held}",
            plan.saturation_lateness_ms
        )),
        _ if busiest >= BUSY_LIMIT => Some(format!(
            "a worker thread was busy {:.0}% of the time: the generator may be the bottleneck; add threads or cores{held}",
            busiest * 100.0
        )),
        _ => None,
    };
    let sent: u64 = classes.iter().map(|c| c.sent).sum();
    let tls = plan.speaks_tls();
    RunResult {
        model: if open { "open" } else { "closed" },
        offered_rate: plan.offered_rate(),
        users: match plan.load {
            Load::Closed { users, .. } => Some(users),
            Load::Open { .. } => None,
        },
        duration_s: measured_s,
        warmup_s: plan.warmup_s,
        sent,
        completed: classes.iter().map(|c| c.completed).sum(),
        errors: classes.iter().map(|c| c.errors).sum(),
        dropped: total.dropped,
        in_flight_at_end,
        throughput: if measured_s > 0.0 { total.completed_in_window as f64 / measured_s } else { 0.0 },
        latency_ms: Summary::of(&latency),
        service_time_ms: Summary::of(&service),
        latency_hdr: encode(&latency),
        service_time_hdr: encode(&service),
        errors_by_kind,
        error_samples,
        classes,
        intervals,
        per_target,
        steps: total
            .steps
            .iter()
            .map(|(name, h)| StepResult {
                name: name.to_string(),
                count: h.len(),
                latency_ms: Summary::of(h),
                latency_hdr: encode(h),
            })
            .collect(),
        generator: GeneratorFigures {
            threads,
            cpu_s,
            cpu_us_per_request: (total.sent_all > 0).then(|| cpu_s * 1e6 / total.sent_all as f64),
            lateness_p99_ms: lateness_p99,
            lateness_max_ms: if open { lateness.max } else { None },
            held_rate,
            busiest_thread: busiest,
            connections_opened: connects,
            tls_handshakes: tls.then_some(total.tls_handshakes),
            tls_resumed: tls.then_some(total.tls_resumed),
            tls_handshakes_per_s: (tls && measured_s > 0.0).then(|| total.tls_handshakes as f64 / measured_s),
            saturated: saturation_reason.is_some(),
            saturation_reason,
        },
        max_in_flight,
        interrupted,
    }
}

#[cfg(test)]
mod tests;

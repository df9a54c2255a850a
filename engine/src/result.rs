//! What a run returns: totals, summaries, HDR histograms, the interval series and the
//! generator's own figures. Serialised to JSON for Python.

use crate::stats::{IntervalPart, Summary};
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Debug, Clone, Serialize)]
pub struct RunResult {
    pub model: &'static str,
    /// Mean offered rate over the measured window (open model), None for closed.
    pub offered_rate: Option<f64>,
    pub users: Option<u32>,
    /// Length of the measured window actually run (shorter than planned if stopped early).
    pub duration_s: f64,
    pub warmup_s: f64,
    pub sent: u64,
    pub completed: u64,
    pub errors: u64,
    pub dropped: u64,
    /// Sent in the window but neither completed nor failed when the run ended.
    pub in_flight_at_end: u64,
    /// Completions per second whose reply arrived inside the measured window.
    pub throughput: f64,
    pub latency_ms: Summary,
    pub service_time_ms: Summary,
    pub latency_hdr: String,
    pub service_time_hdr: String,
    /// Measured errors by kind: `connect`, `timeout` … `sql:42` (SQL errors by SQLSTATE class).
    pub errors_by_kind: BTreeMap<String, u64>,
    /// For each kind counted, the first words a driver gave for it (a server's message), where
    /// the driver keeps them.
    pub error_samples: BTreeMap<String, String>,
    pub classes: Vec<ClassResult>,
    pub intervals: Vec<IntervalSnapshot>,
    /// With more than one target: each target's counts and interval series, in plan order
    /// (`target`, then `extra_targets`); empty for a single target.
    pub per_target: Vec<TargetSeries>,
    /// Drivers whose request is a session of exchanges (SMTP, IMAP): each step's latency over
    /// the measured requests, in the order the steps first ran; absent for the others.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<StepResult>,
    pub generator: GeneratorFigures,
    pub max_in_flight: Option<u64>,
    pub interrupted: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct ClassResult {
    pub name: String,
    pub sent: u64,
    pub completed: u64,
    pub errors: u64,
    pub latency_ms: Summary,
    pub service_time_ms: Summary,
    pub latency_hdr: String,
    pub service_time_hdr: String,
}

/// One step of the requests (an SMTP send's `auth`, an IMAP read's `fetch`): how often it ran
/// and how long it took (ms), with its HDR histogram (µs).
#[derive(Debug, Clone, Serialize)]
pub struct StepResult {
    pub name: String,
    pub count: u64,
    pub latency_ms: Summary,
    pub latency_hdr: String,
}

/// One interval of the run, all threads merged.
#[derive(Debug, Clone, Serialize)]
pub struct IntervalSnapshot {
    pub index: u64,
    pub start_s: f64,
    pub end_s: f64,
    pub warmup: bool,
    pub sent: u64,
    pub completed: u64,
    pub errors: u64,
    pub dropped: u64,
    pub in_flight: u64,
    /// Completions per second in this interval.
    pub throughput: f64,
    pub latency_ms: Summary,
}

impl IntervalSnapshot {
    pub fn new(part: &IntervalPart, start_s: f64, end_s: f64, warmup: bool) -> IntervalSnapshot {
        let length = (end_s - start_s).max(1e-9);
        IntervalSnapshot {
            index: part.index,
            start_s,
            end_s,
            warmup,
            sent: part.sent,
            completed: part.completed,
            errors: part.errors,
            dropped: part.dropped,
            in_flight: part.in_flight,
            throughput: part.completed as f64 / length,
            latency_ms: Summary::of(&part.latency),
        }
    }
}

/// One target's share of the run: measured totals (they sum to the run's) and its intervals.
#[derive(Debug, Clone, Serialize)]
pub struct TargetSeries {
    /// The target's URL without any password in it.
    pub label: String,
    pub completed: u64,
    pub errors: u64,
    pub intervals: Vec<TargetInterval>,
}

/// One target's completions and errors in one interval of the run's interval clock (the same
/// intervals, start and end as `RunResult::intervals`, warm-up included).
#[derive(Debug, Clone, Copy, Serialize)]
pub struct TargetInterval {
    pub start_s: f64,
    pub end_s: f64,
    pub completed: u64,
    pub errors: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct GeneratorFigures {
    pub threads: usize,
    /// Process CPU (user + system) over the whole run, warm-up included.
    pub cpu_s: f64,
    /// `cpu_s` per request sent (warm-up included, as the CPU is).
    pub cpu_us_per_request: Option<f64>,
    /// Open model: how late the generator handed each request over against its intended time
    /// (its own delay; a wait for a connection the server holds shows in the latency instead).
    /// None in the closed model, which has no schedule to be late against; there
    /// `busiest_thread` tells a starved generator.
    pub lateness_p99_ms: Option<f64>,
    pub lateness_max_ms: Option<f64>,
    /// Open model: requests per second that actually left during the measured window. Below the
    /// offered rate when the generator could not keep it (see `saturated`).
    pub held_rate: Option<f64>,
    /// The busiest worker thread's CPU share of its wall time (1.0 = a whole core).
    pub busiest_thread: f64,
    pub connections_opened: u64,
    /// TLS targets: handshakes completed in the measured window (full and resumed), how many of
    /// them resumed an earlier session, and handshakes per second of the window. None without TLS.
    pub tls_handshakes: Option<u64>,
    pub tls_resumed: Option<u64>,
    pub tls_handshakes_per_s: Option<f64>,
    /// True when the generator could not keep up, so the figures describe it, not the target.
    pub saturated: bool,
    pub saturation_reason: Option<String>,
}

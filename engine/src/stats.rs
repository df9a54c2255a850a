//! Aggregation: per-class HDR histograms and counters, per-interval snapshots, merging.
//!
//! Every worker thread keeps its own `ThreadStats` (no locks on the request path); the
//! coordinator merges them. A run with several targets also counts completions and errors per
//! target, indexed by the target's number (no per-target histograms: counts are what recovery
//! and balance are read from). Latencies are recorded in microseconds, 1 µs to one hour at three
//! significant digits, and exported in the HdrHistogram V2 encoding.

use crate::driver::ErrorKind;
use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use serde::Serialize;
use std::time::{Duration, Instant};

/// The longest latency a histogram holds, in µs (one hour); longer values saturate to it.
const HIGHEST_US: u64 = 3_600_000_000;

pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, HIGHEST_US, 3).expect("static histogram bounds are valid")
}

fn micros(d: Duration) -> u64 {
    (d.as_nanos() / 1000).max(1) as u64
}

/// The fixed points of a run: when it started, when warm-up ended, when the measured window ends.
#[derive(Debug, Clone, Copy)]
pub struct RunClock {
    pub start: Instant,
    pub warmup_end: Instant,
    pub window_end: Instant,
    pub interval: Duration,
}

impl RunClock {
    /// Requests count when their intended start falls inside the measured window.
    pub fn measured(&self, intended: Instant) -> bool {
        intended >= self.warmup_end && intended < self.window_end
    }

    fn in_window(&self, t: Instant) -> bool {
        t >= self.warmup_end && t <= self.window_end
    }
}

/// What happened to one request, as the executor saw it.
#[derive(Debug, Clone, Copy)]
pub struct RequestRecord {
    pub class: usize,
    /// The target's number in the plan (0: `target`, then `extra_targets` in order).
    pub target: usize,
    pub intended: Instant,
    pub start: Instant,
    pub end: Instant,
    pub outcome: Result<(), ErrorKind>,
}

/// Totals for one request class.
#[derive(Debug, Clone)]
pub struct ClassStats {
    pub sent: u64,
    pub completed: u64,
    pub errors: u64,
    /// From the intended send time: includes any wait the schedule imposed (CO-corrected).
    pub latency: Histogram<u64>,
    /// From the actual send time: what the server took.
    pub service: Histogram<u64>,
}

impl ClassStats {
    fn new() -> ClassStats {
        ClassStats { sent: 0, completed: 0, errors: 0, latency: new_histogram(), service: new_histogram() }
    }

    pub fn merge(&mut self, other: &ClassStats) {
        self.sent += other.sent;
        self.completed += other.completed;
        self.errors += other.errors;
        add(&mut self.latency, &other.latency);
        add(&mut self.service, &other.service);
    }
}

fn add(into: &mut Histogram<u64>, from: &Histogram<u64>) {
    into.add(from).expect("histograms share bounds");
}

/// Completions and errors at one target.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TargetCounts {
    pub completed: u64,
    pub errors: u64,
}

/// Per-target counts, one slot per target when there is more than one, none otherwise.
fn target_slots(targets: usize) -> Vec<TargetCounts> {
    vec![TargetCounts::default(); if targets > 1 { targets } else { 0 }]
}

fn add_counts(into: &mut [TargetCounts], from: &[TargetCounts]) {
    for (a, b) in into.iter_mut().zip(from) {
        a.completed += b.completed;
        a.errors += b.errors;
    }
}

/// One worker's share of one interval, sent to the coordinator at each interval boundary.
#[derive(Debug, Clone)]
pub struct IntervalPart {
    pub index: u64,
    pub sent: u64,
    pub completed: u64,
    pub errors: u64,
    pub dropped: u64,
    pub in_flight: u64,
    pub latency: Histogram<u64>,
    /// Completions and errors per target (empty for a single target).
    pub targets: Vec<TargetCounts>,
}

impl IntervalPart {
    pub fn new(index: u64, targets: usize) -> IntervalPart {
        IntervalPart {
            index,
            sent: 0,
            completed: 0,
            errors: 0,
            dropped: 0,
            in_flight: 0,
            latency: new_histogram(),
            targets: target_slots(targets),
        }
    }

    pub fn merge(&mut self, other: &IntervalPart) {
        self.sent += other.sent;
        self.completed += other.completed;
        self.errors += other.errors;
        self.dropped += other.dropped;
        self.in_flight += other.in_flight;
        add(&mut self.latency, &other.latency);
        add_counts(&mut self.targets, &other.targets);
    }
}

/// Everything one worker thread measured.
#[derive(Debug, Clone)]
pub struct ThreadStats {
    pub classes: Vec<ClassStats>,
    /// Measured errors by kind, in the order the kinds first occurred (a handful at most).
    pub errors_by_kind: Vec<(ErrorKind, u64)>,
    /// The first words a driver gave for each kind counted (a server's message).
    pub error_samples: Vec<(ErrorKind, String)>,
    /// Measured completions and errors per target (empty for a single target).
    pub targets: Vec<TargetCounts>,
    /// Requests not sent because the in-flight cap was reached (measured window).
    pub dropped: u64,
    /// Completions whose reply arrived inside the measured window: the throughput numerator.
    pub completed_in_window: u64,
    /// Every request sent, warm-up included (the denominator of CPU per request).
    pub sent_all: u64,
    /// Requests that actually left inside the measured window, whenever they were due: the
    /// rate the generator held, which a late generator reports below the offered rate.
    pub left_in_window: u64,
    /// Open model: when each request was handed over minus its intended time (the generator's delay).
    pub lateness: Histogram<u64>,
    /// TLS handshakes completed inside the measured window, and how many of them resumed a session.
    pub tls_handshakes: u64,
    pub tls_resumed: u64,
    /// Measured requests' steps (drivers whose request is a session: connect, auth, data …),
    /// a histogram each, in the order the steps first occurred.
    pub steps: Vec<(&'static str, Histogram<u64>)>,
    pub interval: IntervalPart,
}

impl ThreadStats {
    pub fn new(classes: usize, targets: usize) -> ThreadStats {
        ThreadStats {
            classes: (0..classes).map(|_| ClassStats::new()).collect(),
            errors_by_kind: Vec::new(),
            error_samples: Vec::new(),
            targets: target_slots(targets),
            dropped: 0,
            completed_in_window: 0,
            sent_all: 0,
            left_in_window: 0,
            lateness: new_histogram(),
            tls_handshakes: 0,
            tls_resumed: 0,
            steps: Vec::new(),
            interval: IntervalPart::new(0, targets),
        }
    }

    /// A new connection's TLS handshake, finished at `at`.
    pub fn on_handshake(&mut self, clock: &RunClock, at: Instant, resumed: bool) {
        if clock.in_window(at) {
            self.tls_handshakes += 1;
            self.tls_resumed += u64::from(resumed);
        }
    }

    pub fn on_sent(&mut self, clock: &RunClock, class: usize, intended: Instant, start: Instant) {
        self.sent_all += 1;
        if clock.in_window(start) {
            self.left_in_window += 1;
        }
        self.interval.sent += 1;
        if clock.measured(intended) {
            self.classes[class].sent += 1;
        }
    }

    pub fn on_dropped(&mut self, clock: &RunClock, intended: Instant) {
        self.interval.dropped += 1;
        if clock.measured(intended) {
            self.dropped += 1;
        }
    }

    /// One step of a measured request and how long it took.
    pub fn on_step(&mut self, name: &'static str, took: Duration) {
        self.step(name).saturating_record(micros(took));
    }

    fn step(&mut self, name: &'static str) -> &mut Histogram<u64> {
        let i = match self.steps.iter().position(|(n, _)| *n == name) {
            Some(i) => i,
            None => {
                self.steps.push((name, new_histogram()));
                self.steps.len() - 1
            }
        };
        &mut self.steps[i].1
    }

    pub fn on_lateness(&mut self, late: Duration) {
        self.lateness.saturating_record(micros(late));
    }

    pub fn on_done(&mut self, clock: &RunClock, r: &RequestRecord) {
        // Late sends are timed from the intended time (coordinated omission corrected); a send
        // that left early to share a wake-up is timed from when it actually left.
        let latency = micros(r.end.saturating_duration_since(r.intended.min(r.start)));
        let ok = r.outcome.is_ok();
        match r.outcome {
            Ok(()) => {
                self.interval.completed += 1;
                self.interval.latency.saturating_record(latency);
            }
            Err(_) => self.interval.errors += 1,
        }
        if let Some(t) = self.interval.targets.get_mut(r.target) {
            count(t, ok);
        }
        if !clock.measured(r.intended) {
            return;
        }
        if let Some(t) = self.targets.get_mut(r.target) {
            count(t, ok);
        }
        let class = &mut self.classes[r.class];
        match r.outcome {
            Ok(()) => {
                class.completed += 1;
                class.latency.saturating_record(latency);
                class.service.saturating_record(micros(r.end.saturating_duration_since(r.start)));
                if clock.in_window(r.end) {
                    self.completed_in_window += 1;
                }
            }
            Err(kind) => {
                class.errors += 1;
                match self.errors_by_kind.iter_mut().find(|(k, _)| *k == kind) {
                    Some((_, n)) => *n += 1,
                    None => self.errors_by_kind.push((kind, 1)),
                }
            }
        }
    }

    /// Keeps a driver's words for an error of `kind` when that kind is counted and has none yet.
    pub fn on_error_detail(&mut self, kind: ErrorKind, words: String) {
        let counted = self.errors_by_kind.iter().any(|(k, _)| *k == kind);
        if counted && !self.error_samples.iter().any(|(k, _)| *k == kind) {
            self.error_samples.push((kind, words));
        }
    }

    /// Closes the current interval and returns it, starting the next.
    pub fn take_interval(&mut self, in_flight: u64) -> IntervalPart {
        let next = IntervalPart::new(self.interval.index + 1, self.targets.len());
        let mut part = std::mem::replace(&mut self.interval, next);
        part.in_flight = in_flight;
        part
    }

    pub fn merge(&mut self, other: &ThreadStats) {
        for (a, b) in self.classes.iter_mut().zip(&other.classes) {
            a.merge(b);
        }
        for (kind, n) in &other.errors_by_kind {
            match self.errors_by_kind.iter_mut().find(|(k, _)| k == kind) {
                Some((_, total)) => *total += n,
                None => self.errors_by_kind.push((*kind, *n)),
            }
        }
        for (kind, words) in &other.error_samples {
            if !self.error_samples.iter().any(|(k, _)| k == kind) {
                self.error_samples.push((*kind, words.clone()));
            }
        }
        add_counts(&mut self.targets, &other.targets);
        self.dropped += other.dropped;
        self.completed_in_window += other.completed_in_window;
        self.sent_all += other.sent_all;
        self.left_in_window += other.left_in_window;
        add(&mut self.lateness, &other.lateness);
        self.tls_handshakes += other.tls_handshakes;
        self.tls_resumed += other.tls_resumed;
        for (name, h) in &other.steps {
            add(self.step(name), h);
        }
    }
}

fn count(t: &mut TargetCounts, ok: bool) {
    if ok {
        t.completed += 1;
    } else {
        t.errors += 1;
    }
}

/// Latency summary in milliseconds. A percentile is given only when at least one sample lies
/// beyond it (p95 needs 20 samples, p99 100, p99.9 1,000); otherwise it is None.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Summary {
    pub count: u64,
    pub min: Option<f64>,
    pub mean: Option<f64>,
    pub p50: Option<f64>,
    pub p90: Option<f64>,
    pub p95: Option<f64>,
    pub p99: Option<f64>,
    pub p999: Option<f64>,
    pub max: Option<f64>,
}

impl Summary {
    pub fn of(h: &Histogram<u64>) -> Summary {
        let n = h.len();
        let ms = |us: u64| us as f64 / 1000.0;
        let q = |quantile: f64| {
            let needed = (1.0 / (1.0 - quantile)).round() as u64;
            (n >= needed).then(|| ms(h.value_at_quantile(quantile)))
        };
        Summary {
            count: n,
            min: (n > 0).then(|| ms(h.min())),
            mean: (n > 0).then(|| h.mean() / 1000.0),
            p50: q(0.5),
            p90: q(0.9),
            p95: q(0.95),
            p99: q(0.99),
            p999: q(0.999),
            max: (n > 0).then(|| ms(h.max())),
        }
    }
}

/// Encodes a histogram in the compressed HdrHistogram V2 format, base64 — the form HdrHistogram's
/// log files use (`HISTFAAA…`), so its tools read it.
pub fn encode(h: &Histogram<u64>) -> String {
    let mut bytes = Vec::new();
    V2DeflateSerializer::new().serialize(h, &mut bytes).expect("serialising to memory cannot fail");
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

pub fn decode(text: &str) -> Result<Histogram<u64>, String> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .map_err(|e| format!("histogram is not base64: {e}"))?;
    let h: Histogram<u64> = Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(|e| format!("histogram is not HdrHistogram V2: {e:?}"))?;
    // Widen to the standard bounds so histograms from anywhere merge.
    let mut wide = new_histogram();
    wide.add(&h).map_err(|e| format!("histogram does not fit 1 µs..1 h: {e:?}"))?;
    Ok(wide)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_of_thread_histograms_equals_histogram_of_all_samples() {
        let mut rng = crate::schedule::Rng::new(7);
        let mut all = new_histogram();
        let mut parts: Vec<Histogram<u64>> = (0..4).map(|_| new_histogram()).collect();
        for i in 0..100_000 {
            let v = (rng.exp1() * 5_000.0) as u64 + 1;
            all.record(v).unwrap();
            parts[i % 4].record(v).unwrap();
        }
        let mut merged = new_histogram();
        for p in &parts {
            merged.add(p).unwrap();
        }
        assert_eq!(merged, all);
        assert_eq!(Summary::of(&merged), Summary::of(&all));
    }

    #[test]
    fn v2_round_trip() {
        let mut h = new_histogram();
        for v in [1, 10, 100, 1_000, 123_456, 3_000_000] {
            h.record(v).unwrap();
        }
        let back = decode(&encode(&h)).unwrap();
        assert_eq!(back, h);
        assert!(decode("not base64!").is_err());
    }

    #[test]
    fn percentiles_need_enough_samples() {
        let mut h = new_histogram();
        for v in 1..=99 {
            h.record(v * 1000).unwrap();
        }
        let s = Summary::of(&h);
        assert!(s.p90.is_some() && s.p95.is_some() && s.p99.is_none() && s.p999.is_none());
        assert!((s.p95.unwrap() - 95.0).abs() < 0.1, "{:?}", s.p95);
        h.record(100_000).unwrap();
        let s = Summary::of(&h);
        assert!((s.p99.unwrap() - 99.0).abs() < 0.1, "{:?}", s.p99);
        assert!((s.max.unwrap() - 100.0).abs() < 0.1);
        assert!(Summary::of(&new_histogram()).mean.is_none());
        let mut few = new_histogram();
        for v in 1..=19 {
            few.record(v * 1000).unwrap();
        }
        assert!(Summary::of(&few).p90.is_some() && Summary::of(&few).p95.is_none());
    }
}

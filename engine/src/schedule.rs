//! Arrival schedules: when each request of an open workload is meant to be sent.
//!
//! A schedule is a rate profile (piecewise-linear rate over time) composed with an arrival
//! process (evenly spaced or Poisson). Both are expressed in "work" units: the cumulative number
//! of arrivals Λ(t) = ∫rate. An evenly spaced process places arrival k at Λ⁻¹(k + phase); a
//! Poisson process places arrivals at Λ⁻¹ of a running sum of unit-mean exponential draws, which
//! also makes ramps and steps correct inhomogeneous Poisson processes.

use crate::plan::{Arrivals, Segment, Think};
use std::time::Duration;

/// A small, fast, seedable generator (SplitMix64): arrivals and the mix need no crypto quality,
/// and a fixed seed makes a run repeatable.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x9E37_79B9_7F4A_7C15)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in (0, 1]: never 0, so `-ln(u)` is finite.
    pub fn unit(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 1.0) / (1u64 << 53) as f64
    }

    /// Exponential with mean 1.
    pub fn exp1(&mut self) -> f64 {
        -self.unit().ln()
    }
}

/// Piecewise-linear rate profile with its cumulative-arrivals inverse.
#[derive(Debug, Clone)]
pub struct RateProfile {
    segments: Vec<Segment>,
}

impl RateProfile {
    /// `scale` divides the rate among worker threads.
    pub fn new(segments: &[Segment], warmup_s: f64, scale: f64) -> RateProfile {
        let mut all = Vec::with_capacity(segments.len() + 1);
        if warmup_s > 0.0 {
            let r = segments[0].rate_start;
            all.push(Segment { duration_s: warmup_s, rate_start: r, rate_end: r });
        }
        all.extend_from_slice(segments);
        for s in &mut all {
            s.rate_start *= scale;
            s.rate_end *= scale;
        }
        RateProfile { segments: all }
    }

    pub fn total_s(&self) -> f64 {
        self.segments.iter().map(|s| s.duration_s).sum()
    }

    /// Expected arrivals over the whole profile.
    pub fn total_work(&self) -> f64 {
        self.segments.iter().map(|s| s.duration_s * (s.rate_start + s.rate_end) / 2.0).sum()
    }

    /// The time (seconds from the start) at which cumulative arrivals reach `work`, or None past
    /// the end of the profile.
    pub fn time_of(&self, mut work: f64) -> Option<f64> {
        let mut t0 = 0.0;
        for s in &self.segments {
            let area = s.duration_s * (s.rate_start + s.rate_end) / 2.0;
            if work <= area {
                return Some(t0 + offset_in_segment(s, work));
            }
            work -= area;
            t0 += s.duration_s;
        }
        None
    }
}

/// Solves r0·t + (r1−r0)·t²/(2D) = w for t in [0, D].
fn offset_in_segment(s: &Segment, work: f64) -> f64 {
    let a = (s.rate_end - s.rate_start) / (2.0 * s.duration_s);
    let b = s.rate_start;
    if a.abs() < 1e-12 {
        return if b > 0.0 { work / b } else { s.duration_s };
    }
    let disc = (b * b + 4.0 * a * work).max(0.0);
    // The numerically stable root of a·t² + b·t − w = 0.
    let t = 2.0 * work / (b + disc.sqrt());
    t.clamp(0.0, s.duration_s)
}

/// The intended send times of one worker's share of an open workload.
#[derive(Debug, Clone)]
pub struct Schedule {
    profile: RateProfile,
    arrivals: Arrivals,
    rng: Rng,
    work: f64,
}

impl Schedule {
    /// `phase` in [0, 1) staggers evenly spaced workers so their union stays evenly spaced.
    pub fn new(profile: RateProfile, arrivals: Arrivals, phase: f64, seed: u64) -> Schedule {
        Schedule { profile, arrivals, rng: Rng::new(seed), work: phase }
    }

    /// Offset from the run start of the next intended send, or None when the profile is over.
    pub fn next_offset(&mut self) -> Option<Duration> {
        let at = match self.arrivals {
            Arrivals::Constant => {
                let t = self.profile.time_of(self.work);
                self.work += 1.0;
                t
            }
            Arrivals::Poisson => {
                self.work += self.rng.exp1();
                self.profile.time_of(self.work)
            }
        }?;
        Some(Duration::from_secs_f64(at))
    }
}

/// A closed-model user's pause between receiving a reply and sending the next request.
pub fn think_time(think: &Think, rng: &mut Rng) -> Option<Duration> {
    match *think {
        Think::None => None,
        Think::Constant { mean_s } => Some(Duration::from_secs_f64(mean_s)),
        Think::Exponential { mean_s } => Some(Duration::from_secs_f64(mean_s * rng.exp1())),
    }
}

/// When a closed-model user sends its first request, from the run start: user `user` of `users`
/// starts as if the population had been running for a while, so the run opens steady instead of
/// with every user's first request at once. With exponential think each user first waits a think
/// time from the same distribution (each user's sends are then a Poisson stream from the start);
/// with constant think the first sends are spread evenly over one think period; without think
/// every user starts at once (a saturating loop has no quiet phase to be in).
pub fn first_send_offset(think: &Think, user: usize, users: usize, rng: &mut Rng) -> Duration {
    match *think {
        Think::None => Duration::ZERO,
        Think::Constant { mean_s } => Duration::from_secs_f64(mean_s * user as f64 / users.max(1) as f64),
        Think::Exponential { mean_s } => Duration::from_secs_f64(mean_s * rng.exp1()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(d: f64, a: f64, b: f64) -> Segment {
        Segment { duration_s: d, rate_start: a, rate_end: b }
    }

    fn offsets(mut s: Schedule) -> Vec<f64> {
        std::iter::from_fn(|| s.next_offset()).map(|d| d.as_secs_f64()).collect()
    }

    #[test]
    fn constant_rate_is_evenly_spaced() {
        let p = RateProfile::new(&[seg(1.0, 100.0, 100.0)], 0.0, 1.0);
        let t = offsets(Schedule::new(p, Arrivals::Constant, 0.0, 1));
        assert_eq!(t.len(), 101); // 0.00, 0.01, …, 1.00
        for w in t.windows(2) {
            assert!((w[1] - w[0] - 0.01).abs() < 1e-9);
        }
    }

    #[test]
    fn threads_with_phases_interleave() {
        let p = RateProfile::new(&[seg(1.0, 100.0, 100.0)], 0.0, 0.5);
        let a = offsets(Schedule::new(p.clone(), Arrivals::Constant, 0.0, 1));
        let b = offsets(Schedule::new(p, Arrivals::Constant, 0.5, 1));
        assert!((b[0] - 0.01).abs() < 1e-9 && (a[1] - 0.02).abs() < 1e-9);
    }

    #[test]
    fn ramp_places_arrivals_by_cumulative_rate() {
        // 0 → 200/s over 1 s: 100 arrivals, the first half in the last ~29% of the time.
        let p = RateProfile::new(&[seg(1.0, 0.0, 200.0)], 0.0, 1.0);
        assert!((p.total_work() - 100.0).abs() < 1e-9);
        let t50 = p.time_of(50.0).unwrap();
        assert!((t50 - 0.5f64.sqrt()).abs() < 1e-9, "{t50}");
    }

    #[test]
    fn steps_and_warmup() {
        let p = RateProfile::new(&[seg(1.0, 10.0, 10.0), seg(1.0, 30.0, 30.0)], 2.0, 1.0);
        assert!((p.total_s() - 4.0).abs() < 1e-9);
        assert!((p.total_work() - 60.0).abs() < 1e-9);
        assert!((p.time_of(45.0).unwrap() - 3.5).abs() < 1e-9);
        assert!(p.time_of(61.0).is_none());
    }

    #[test]
    fn poisson_interarrivals_are_exponential() {
        // Kolmogorov–Smirnov against Exp(rate) over 20k gaps; critical value at α = 0.01.
        let rate = 1000.0;
        let p = RateProfile::new(&[seg(20.0, rate, rate)], 0.0, 1.0);
        let t = offsets(Schedule::new(p, Arrivals::Poisson, 0.0, 42));
        let mut gaps: Vec<f64> = t.windows(2).map(|w| w[1] - w[0]).collect();
        gaps.sort_by(f64::total_cmp);
        let n = gaps.len() as f64;
        let d = gaps
            .iter()
            .enumerate()
            .map(|(i, g)| {
                let cdf = 1.0 - (-rate * g).exp();
                (cdf - i as f64 / n).abs().max(((i + 1) as f64 / n - cdf).abs())
            })
            .fold(0.0, f64::max);
        assert!(d < 1.63 / n.sqrt(), "KS statistic {d}");
        let mean = t.last().unwrap() / n;
        assert!((mean * rate - 1.0).abs() < 0.03, "mean gap {mean}");
    }

    #[test]
    fn first_sends_without_think_are_at_once() {
        let mut rng = Rng::new(1);
        assert!((0..10).all(|u| first_send_offset(&Think::None, u, 10, &mut rng).is_zero()));
    }

    #[test]
    fn first_sends_with_constant_think_spread_over_one_period() {
        let think = Think::Constant { mean_s: 10.0 };
        let mut rng = Rng::new(1);
        let at: Vec<f64> =
            (0..100).map(|u| first_send_offset(&think, u, 100, &mut rng).as_secs_f64()).collect();
        assert_eq!(at[0], 0.0);
        assert!(at.windows(2).all(|w| (w[1] - w[0] - 0.1).abs() < 1e-9), "{at:?}");
        assert!(at[99] < 10.0);
    }

    #[test]
    fn first_sends_with_exponential_think_are_think_times() {
        let think = Think::Exponential { mean_s: 60.0 };
        let draw = |seed| {
            let mut rng = Rng::new(seed);
            (0..20_000)
                .map(|u| first_send_offset(&think, u, 20_000, &mut rng).as_secs_f64())
                .collect::<Vec<_>>()
        };
        let at = draw(3);
        assert_eq!(at, draw(3), "the seed makes the offsets repeatable");
        let n = at.len() as f64;
        let mean = at.iter().sum::<f64>() / n;
        assert!((mean - 60.0).abs() < 60.0 * 0.03, "mean {mean}");
        // Exponential: the share starting within the first minute is 1 − 1/e, not all of them.
        let first_minute = at.iter().filter(|&&t| t < 60.0).count() as f64 / n;
        assert!((first_minute - (1.0 - (-1.0f64).exp())).abs() < 0.02, "{first_minute}");
        // Users in the first second of the run: about users × 1 s / think, the stationary rate.
        let first_second = at.iter().filter(|&&t| t < 1.0).count() as f64;
        assert!((first_second - n / 60.0).abs() < 4.0 * (n / 60.0).sqrt(), "{first_second}");
    }
}

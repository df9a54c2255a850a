//! A flash SSD: `channels` flash channels work in parallel, each request on the first free one
//! for its read or program latency; the data then crosses one bus at the read or write
//! bandwidth (the ceiling a large transfer meets). A flush is cheap (power-loss protection: the
//! drive's DRAM is safe). Optionally, once `spare` bytes have been written, writes are held to
//! `steady_write_rate` (garbage collection after the spare area is used).

use super::timed::{Timed, Timing};
use super::{transfer_ns, Nanos, Op, Request};
use serde::Deserialize;

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SsdSpec {
    pub size: u64,
    #[serde(default = "default_read_us")]
    pub read_us: f64,
    #[serde(default = "default_write_us")]
    pub write_us: f64,
    #[serde(default = "default_channels")]
    pub channels: usize,
    #[serde(default = "default_read_rate")]
    pub read_rate: f64,
    #[serde(default = "default_write_rate")]
    pub write_rate: f64,
    #[serde(default = "default_flush_us")]
    pub flush_us: f64,
    #[serde(default)]
    pub spare: Option<u64>,
    #[serde(default)]
    pub steady_write_rate: Option<f64>,
}

fn default_read_us() -> f64 {
    90.0
}
fn default_write_us() -> f64 {
    25.0
}
fn default_channels() -> usize {
    8
}
fn default_read_rate() -> f64 {
    500e6
}
fn default_write_rate() -> f64 {
    450e6
}
fn default_flush_us() -> f64 {
    20.0
}

impl SsdSpec {
    pub fn with_size(size: u64) -> SsdSpec {
        SsdSpec {
            size,
            read_us: default_read_us(),
            write_us: default_write_us(),
            channels: default_channels(),
            read_rate: default_read_rate(),
            write_rate: default_write_rate(),
            flush_us: default_flush_us(),
            spare: None,
            steady_write_rate: None,
        }
    }
}

pub struct Ssd {
    spec: SsdSpec,
    channel_free: Vec<Nanos>,
    bus_free: Nanos,
    written: u64,
    steady_free: Nanos,
}

impl Ssd {
    /// The model: the SSD's timing, each completion held until it falls due.
    pub fn new(spec: &SsdSpec) -> Result<Timed<Ssd>, String> {
        if spec.channels == 0
            || spec.read_rate <= 0.0
            || spec.write_rate <= 0.0
            || spec.read_us < 0.0
            || spec.write_us < 0.0
        {
            return Err("ssd: channels, read_rate and write_rate must be positive".into());
        }
        if spec.steady_write_rate.is_some_and(|r| r <= 0.0) {
            return Err("ssd: steady_write_rate must be positive".into());
        }
        Ok(Timed::new(Ssd {
            spec: spec.clone(),
            channel_free: vec![0; spec.channels],
            bus_free: 0,
            written: 0,
            steady_free: 0,
        }))
    }
}

impl Timing for Ssd {
    fn completion(&mut self, at: Nanos, req: Request) -> Nanos {
        let us = |x: f64| (x * 1e3).round() as Nanos;
        let (latency, rate) = match req.op {
            Op::Flush => return at + us(self.spec.flush_us),
            Op::Read => (us(self.spec.read_us), self.spec.read_rate),
            Op::Write => (us(self.spec.write_us), self.spec.write_rate),
        };
        let (channel, free) =
            self.channel_free.iter().copied().enumerate().min_by_key(|(_, f)| *f).expect("a channel");
        let flash_done = at.max(free) + latency;
        self.channel_free[channel] = flash_done;
        let mut done = flash_done.max(self.bus_free) + transfer_ns(req.len, rate);
        self.bus_free = done;
        if req.op == Op::Write {
            self.written += req.len;
            if let (Some(spare), Some(steady)) = (self.spec.spare, self.spec.steady_write_rate) {
                if self.written > spare {
                    self.steady_free = self.steady_free.max(at) + transfer_ns(req.len, steady);
                    done = done.max(self.steady_free);
                }
            }
        }
        done
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::simulate::{closed_loop, Pattern, Workload};

    const GIB: u64 = 1 << 30;

    #[test]
    fn random_reads_scale_with_depth_up_to_the_channels() {
        // Depth 1: 90 µs + 4,096 B at 500 MB/s (8.2 µs) = 98.2 µs: 10,183/s. Depth 32: eight
        // channels each 90 µs, 88,889/s, under the bus's 122,070/s.
        let mut s = Ssd::new(&SsdSpec::with_size(GIB)).unwrap();
        let qd1 = closed_loop(&mut s, &Workload::random_reads(4096, 1, GIB), 2.0);
        assert!((qd1 - 10_183.0).abs() < 20.0, "{qd1}");
        let mut s = Ssd::new(&SsdSpec::with_size(GIB)).unwrap();
        let qd32 = closed_loop(&mut s, &Workload::random_reads(4096, 32, GIB), 2.0);
        assert!((qd32 - 88_889.0).abs() < 500.0, "{qd32}");
    }

    #[test]
    fn large_reads_meet_the_bandwidth_ceiling_and_flushes_are_cheap() {
        let w = Workload { pattern: Pattern::Sequential, ..Workload::random_reads(1 << 20, 4, GIB) };
        let rate = closed_loop(&mut Ssd::new(&SsdSpec::with_size(GIB)).unwrap(), &w, 2.0) * (1 << 20) as f64;
        assert!((rate - 500e6).abs() < 5e6, "{rate}");
        let w = Workload { op: Op::Write, flush: true, ..Workload::random_reads(4096, 1, GIB) };
        // 25 µs + 9.1 µs, then a 20 µs flush: 1 / 54.1 µs = 18,480/s.
        let iops = closed_loop(&mut Ssd::new(&SsdSpec::with_size(GIB)).unwrap(), &w, 2.0);
        assert!((iops - 18_480.0).abs() < 100.0, "{iops}");
    }

    #[test]
    fn past_the_spare_area_writes_slow_to_the_steady_rate() {
        let mut spec = SsdSpec::with_size(GIB);
        spec.spare = Some(64 << 20);
        spec.steady_write_rate = Some(100e6);
        let w = Workload {
            op: Op::Write,
            pattern: Pattern::Sequential,
            ..Workload::random_reads(1 << 20, 4, GIB)
        };
        let rate = closed_loop(&mut Ssd::new(&spec).unwrap(), &w, 10.0) * (1 << 20) as f64;
        // 64 MiB at 450 MB/s (0.15 s), then 100 MB/s for the rest of the 10 s.
        assert!(rate > 100e6 && rate < 110e6, "{rate}");
    }
}

//! A provisioned volume (a cloud disk): IOPS and bytes per second, per direction, released
//! evenly (no slices, so no bursts), each request served in arrival order after `latency_us`.
//! A flush returns at once.

use super::timed::{Timed, Timing};
use super::{transfer_ns, Nanos, Op, Request, NS_PER_S};
use serde::Deserialize;

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ThrottleSpec {
    pub size: u64,
    #[serde(default)]
    pub read_iops: Option<f64>,
    #[serde(default)]
    pub write_iops: Option<f64>,
    #[serde(default)]
    pub read_bw: Option<f64>,
    #[serde(default)]
    pub write_bw: Option<f64>,
    #[serde(default)]
    pub latency_us: f64,
}

#[derive(Default)]
struct Direction {
    iops_free: Nanos,
    bw_free: Nanos,
}

pub struct Throttle {
    spec: ThrottleSpec,
    read: Direction,
    write: Direction,
}

impl Throttle {
    /// The model: the volume's timing, each completion held until it falls due.
    pub fn new(spec: &ThrottleSpec) -> Result<Timed<Throttle>, String> {
        let rates = [spec.read_iops, spec.write_iops, spec.read_bw, spec.write_bw];
        if rates.iter().flatten().any(|r| *r <= 0.0) || spec.latency_us < 0.0 {
            return Err("throttle: rates must be positive".into());
        }
        Ok(Timed::new(Throttle {
            spec: spec.clone(),
            read: Direction::default(),
            write: Direction::default(),
        }))
    }
}

impl Timing for Throttle {
    fn completion(&mut self, at: Nanos, req: Request) -> Nanos {
        let latency = (self.spec.latency_us * 1e3).round() as Nanos;
        let (dir, iops, bw) = match req.op {
            Op::Flush => return at,
            Op::Read => (&mut self.read, self.spec.read_iops, self.spec.read_bw),
            Op::Write => (&mut self.write, self.spec.write_iops, self.spec.write_bw),
        };
        let start = at.max(dir.iops_free).max(dir.bw_free);
        if let Some(iops) = iops {
            dir.iops_free = start + (NS_PER_S as f64 / iops).round() as Nanos;
        }
        if let Some(bw) = bw {
            dir.bw_free = start + transfer_ns(req.len, bw);
        }
        start + latency
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::simulate::{closed_loop, Workload};

    #[test]
    fn the_volume_gives_its_iops_and_no_more_at_any_depth() {
        let spec = ThrottleSpec {
            size: 1 << 30,
            read_iops: Some(180.0),
            write_iops: None,
            read_bw: None,
            write_bw: None,
            latency_us: 0.0,
        };
        let iops =
            closed_loop(&mut Throttle::new(&spec).unwrap(), &Workload::random_reads(4096, 32, 1 << 30), 10.0);
        assert!((iops - 180.0).abs() < 1.0, "{iops}");
    }

    #[test]
    fn large_requests_meet_the_bandwidth() {
        let spec = ThrottleSpec {
            size: 1 << 30,
            read_iops: Some(3000.0),
            write_iops: None,
            read_bw: Some(125e6),
            write_bw: None,
            latency_us: 0.0,
        };
        let iops = closed_loop(
            &mut Throttle::new(&spec).unwrap(),
            &Workload::random_reads(1 << 20, 4, 1 << 30),
            10.0,
        );
        assert!((iops * (1 << 20) as f64 - 125e6).abs() < 2e6, "{iops}");
    }
}

//! A hard disk: one head assembly over the whole served file, after Ruemmler & Wilkes ("An
//! introduction to disk drive modeling", IEEE Computer 1994).
//!
//! - Geometry: one track holds what passes under the head in one revolution at the media rate
//!   (150 MB/s at 7,200 rpm: 1.25 MB); the served file spans the full stroke.
//! - Seek: `a + b·√d` for short seeks (the arm accelerates the whole way) and `c + e·d` for long
//!   ones (it coasts), `d` the distance as a fraction of the stroke. The four constants are fixed
//!   by the drive's data-sheet figures: track-to-track (one track), full stroke, continuity at the
//!   knee, and an average over random seeks (mean of `t(d)` under d's density `2(1−d)`) equal to
//!   the data sheet's average seek.
//! - Rotation: a sector's angle is its offset within its track; the platter turns continuously,
//!   so after the seek the head waits for the sector to come round (half a turn on average for a
//!   random request, none for a request queued right behind the last, nearly a whole turn for a
//!   write that arrives just after the previous one ended — a log with its cache off).
//! - Read-ahead: after a read, an idle drive keeps reading into its buffer, so a read that
//!   continues the last is served at the media rate without losing a turn. (The buffer is not
//!   bounded: a stream that pauses for long still finds its next block read.)
//! - Queueing: `queue::CommandQueue` picks by positioning time (seek + rotational wait).
//! - Flush: nothing volatile to write with the cache off (a cache is `cache::Cached` in front).

use super::queue::CommandQueue;
use super::{Done, Model, Nanos, Op, Ready, Request, NS_PER_S};
use serde::Deserialize;

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct HddSpec {
    pub size: u64,
    #[serde(default = "default_rpm")]
    pub rpm: f64,
    #[serde(default = "default_avg_seek")]
    pub avg_seek_ms: f64,
    #[serde(default = "default_track_to_track")]
    pub track_to_track_ms: f64,
    #[serde(default = "default_full_stroke")]
    pub full_stroke_ms: f64,
    /// Bytes per second under the head.
    #[serde(default = "default_media_rate")]
    pub media_rate: f64,
    /// Commands the drive reorders among (NCQ); 1 serves in arrival order.
    #[serde(default = "default_queue_depth")]
    pub queue_depth: usize,
    /// Controller time per command, before the seek.
    #[serde(default = "default_overhead")]
    pub overhead_us: f64,
    /// The drive's own write cache (off when absent); `spec::DeviceSpec::build` puts it in front.
    #[serde(default)]
    pub cache: Option<super::cache::CacheSpec>,
}

fn default_rpm() -> f64 {
    7200.0
}
fn default_avg_seek() -> f64 {
    8.5
}
fn default_track_to_track() -> f64 {
    1.0
}
fn default_full_stroke() -> f64 {
    16.0
}
fn default_media_rate() -> f64 {
    150e6
}
fn default_queue_depth() -> usize {
    32
}
fn default_overhead() -> f64 {
    0.0
}

impl HddSpec {
    pub fn with_size(size: u64) -> HddSpec {
        HddSpec {
            size,
            rpm: default_rpm(),
            avg_seek_ms: default_avg_seek(),
            track_to_track_ms: default_track_to_track(),
            full_stroke_ms: default_full_stroke(),
            media_rate: default_media_rate(),
            queue_depth: default_queue_depth(),
            overhead_us: default_overhead(),
            cache: None,
        }
    }

    pub fn validate(&self) -> Result<(), String> {
        let ok = self.size > 0
            && self.rpm > 0.0
            && self.media_rate > 0.0
            && 0.0 < self.track_to_track_ms
            && self.track_to_track_ms < self.avg_seek_ms
            && self.avg_seek_ms < self.full_stroke_ms
            && self.overhead_us >= 0.0;
        if !ok {
            return Err("hdd: needs size, rpm, media_rate > 0 and 0 < track_to_track_ms < avg_seek_ms < full_stroke_ms".into());
        }
        SeekCurve::fit(self).map(|_| ())
    }
}

/// Seek time in seconds for a distance `d` (fraction of the stroke, 0…1).
#[derive(Clone, Copy, Debug)]
pub struct SeekCurve {
    a: f64,
    b: f64,
    c: f64,
    e: f64,
    knee: f64,
}

/// Where the curve turns from √d to linear, as a fraction of the stroke (Ruemmler & Wilkes's
/// HP 97560: 383 of 1,962 cylinders).
const KNEE: f64 = 0.2;

impl SeekCurve {
    pub fn fit(spec: &HddSpec) -> Result<SeekCurve, String> {
        let k = KNEE;
        let ft = (track_bytes(spec) as f64 / spec.size as f64).min(k / 2.0);
        let (tt, avg, full) = (spec.track_to_track_ms, spec.avg_seek_ms, spec.full_stroke_ms);
        // Rows: t(ft) = tt; t(1) = full; continuity at k; mean over random seeks = avg.
        let mean_sqrt = 2.0 * (2.0 / 3.0 * k.powf(1.5) - 2.0 / 5.0 * k.powf(2.5));
        let mean_lin = 2.0 * (1.0 / 6.0 - k * k / 2.0 + k * k * k / 3.0);
        let mut m = [
            [1.0, ft.sqrt(), 0.0, 0.0, tt],
            [0.0, 0.0, 1.0, 1.0, full],
            [1.0, k.sqrt(), -1.0, -k, 0.0],
            [2.0 * k - k * k, mean_sqrt, (1.0 - k) * (1.0 - k), mean_lin, avg],
        ];
        let x = solve4(&mut m).ok_or("hdd: the seek figures give no seek curve")?;
        let curve = SeekCurve { a: x[0] / 1e3, b: x[1] / 1e3, c: x[2] / 1e3, e: x[3] / 1e3, knee: k };
        if curve.b < 0.0 || curve.e < 0.0 || curve.seconds(ft) <= 0.0 {
            return Err(format!(
                "hdd: no rising seek curve through track-to-track {tt} ms, average {avg} ms, full stroke {full} ms"
            ));
        }
        Ok(curve)
    }

    pub fn seconds(&self, d: f64) -> f64 {
        if d <= self.knee {
            self.a + self.b * d.sqrt()
        } else {
            self.c + self.e * d
        }
    }
}

/// Gaussian elimination with partial pivoting on an augmented 4×5 matrix.
fn solve4(m: &mut [[f64; 5]; 4]) -> Option<[f64; 4]> {
    for col in 0..4 {
        let pivot = (col..4).max_by(|&i, &j| m[i][col].abs().total_cmp(&m[j][col].abs()))?;
        if m[pivot][col].abs() < 1e-12 {
            return None;
        }
        m.swap(col, pivot);
        let pivot_row = m[col];
        for (r, row) in m.iter_mut().enumerate() {
            if r != col {
                let f = row[col] / pivot_row[col];
                for (x, p) in row.iter_mut().zip(pivot_row.iter()).skip(col) {
                    *x -= f * p;
                }
            }
        }
    }
    Some([m[0][4] / m[0][0], m[1][4] / m[1][1], m[2][4] / m[2][2], m[3][4] / m[3][3]])
}

/// Nanoseconds per revolution.
pub fn rotation_ns(spec: &HddSpec) -> Nanos {
    (60.0 * NS_PER_S as f64 / spec.rpm).round() as Nanos
}

/// Bytes on one track: what passes under the head in one revolution.
pub fn track_bytes(spec: &HddSpec) -> u64 {
    ((spec.media_rate * 60.0 / spec.rpm) as u64).max(512)
}

pub struct Hdd {
    size: u64,
    curve: SeekCurve,
    rot_ns: Nanos,
    track: u64,
    overhead_ns: Nanos,
    queue: CommandQueue,
    /// Where the head is: the end of the last transfer.
    head: u64,
    /// The read the drive last served, and when it ended: read-ahead continues from there.
    read_ahead: Option<(u64, Nanos)>,
    /// The request in service and when it completes.
    busy: Option<Done>,
    flushed: Ready,
    free_at: Nanos,
}

/// Up to a second in the queue, then a request is served next whatever its position.
const MAX_WAIT_NS: Nanos = NS_PER_S;

impl Hdd {
    pub fn new(spec: &HddSpec) -> Result<Hdd, String> {
        spec.validate()?;
        Ok(Hdd {
            size: spec.size,
            curve: SeekCurve::fit(spec)?,
            rot_ns: rotation_ns(spec),
            track: track_bytes(spec),
            overhead_ns: (spec.overhead_us * 1e3).round() as Nanos,
            queue: CommandQueue::new(spec.queue_depth, MAX_WAIT_NS),
            head: 0,
            read_ahead: None,
            busy: None,
            flushed: Ready::default(),
            free_at: 0,
        })
    }

    /// Time under the head for `bytes` (integer-exact with the angle, so a request queued right
    /// behind the last finds its sector under the head).
    fn xfer_ns(&self, bytes: u64) -> Nanos {
        ((bytes as u128 * self.rot_ns as u128) / self.track as u128) as Nanos
    }

    fn angle_ns(&self, offset: u64) -> Nanos {
        self.xfer_ns(offset % self.track)
    }

    pub fn seek_ns(&self, from: u64, to: u64) -> Nanos {
        let distance = from.abs_diff(to);
        if distance < self.track {
            return 0;
        }
        (self.curve.seconds(distance as f64 / self.size as f64) * NS_PER_S as f64).round() as Nanos
    }

    /// When `req`, started at `t0`, completes.
    fn service_end(&self, t0: Nanos, req: &Request) -> Nanos {
        let start = t0 + self.overhead_ns;
        if req.op == Op::Read {
            if let Some((end, at)) = self.read_ahead {
                if req.offset == end {
                    return start.max(at + self.xfer_ns(req.len));
                }
            }
        }
        let on_track = start + self.seek_ns(self.head, req.offset);
        let platter = (on_track % self.rot_ns) as i128;
        let mut wait = (self.angle_ns(req.offset) as i128 - platter).rem_euclid(self.rot_ns as i128) as Nanos;
        if self.rot_ns - wait <= 2 {
            wait = 0; // rounding: the sector is under the head now
        }
        on_track + wait + self.xfer_ns(req.len)
    }

    fn start_next(&mut self, t: Nanos) {
        if self.busy.is_some() {
            return;
        }
        let mut queue = std::mem::replace(&mut self.queue, CommandQueue::new(1, 0));
        let picked = queue.pick(t, |r| self.service_end(t, r) - t);
        self.queue = queue;
        let Some(req) = picked else { return };
        let end = self.service_end(t, &req);
        self.read_ahead = (req.op == Op::Read).then_some((req.end(), end));
        self.head = req.end().min(self.size);
        self.busy = Some(Done { id: req.id, at: end });
    }
}

impl Model for Hdd {
    fn submit(&mut self, at: Nanos, req: Request) {
        if req.op == Op::Flush {
            self.flushed.push(Done { id: req.id, at });
            return;
        }
        self.queue.push(at, req);
        self.start_next(at.max(self.free_at));
    }

    fn advance(&mut self, now: Nanos, done: &mut Vec<Done>) {
        while let Some(d) = self.busy.filter(|d| d.at <= now) {
            done.push(d);
            self.busy = None;
            self.free_at = d.at;
            self.start_next(d.at);
        }
        self.flushed.drain_until(now, done);
    }

    fn next_event(&self) -> Option<Nanos> {
        super::earliest(self.busy.map(|d| d.at), self.flushed.next())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::simulate::{closed_loop, run, Pattern, Workload};

    const GIB: u64 = 1 << 30;

    fn disk() -> HddSpec {
        HddSpec::with_size(GIB)
    }

    #[test]
    fn the_seek_curve_meets_the_data_sheet() {
        let spec = disk();
        let c = SeekCurve::fit(&spec).unwrap();
        let ft = track_bytes(&spec) as f64 / GIB as f64;
        assert!((c.seconds(ft) - 1.0e-3).abs() < 1e-9);
        assert!((c.seconds(1.0) - 16.0e-3).abs() < 1e-9);
        // The mean over random seeks, numerically: ∫ t(d)·2(1−d) dd = 8.5 ms.
        let n = 200_000;
        let mean: f64 = (0..n)
            .map(|i| {
                let d = (i as f64 + 0.5) / n as f64;
                c.seconds(d) * 2.0 * (1.0 - d) / n as f64
            })
            .sum();
        assert!((mean - 8.5e-3).abs() < 2e-6, "mean seek {mean}");
        // Rising everywhere.
        let mut last = 0.0;
        for i in 1..=1000 {
            let t = c.seconds(i as f64 / 1000.0);
            assert!(t >= last);
            last = t;
        }
    }

    #[test]
    fn geometry_of_a_7200_rpm_disk_at_150_mb_s() {
        let spec = disk();
        assert_eq!(rotation_ns(&spec), 8_333_333); // 60 s / 7,200
        assert_eq!(track_bytes(&spec), 1_250_000); // 150 MB/s × 8.333 ms
    }

    #[test]
    fn one_read_at_the_head_costs_only_its_rotation_and_transfer() {
        // Head at 0, platter at angle 0 at t = 0; a 4 KiB read of offset 625,000 (half a track,
        // same track: no seek) waits half a turn (4,166,667 ns), then 4,096 B at 150 MB/s
        // (27,306 ns).
        let mut hdd = Hdd::new(&disk()).unwrap();
        let done = run(&mut hdd, &[(0, Request { id: 1, op: Op::Read, offset: 625_000, len: 4096 })]);
        assert_eq!(done, vec![Done { id: 1, at: 4_166_666 + 27_306 }]);
    }

    #[test]
    fn a_write_queued_behind_the_last_loses_no_turn_but_one_arriving_late_loses_almost_one() {
        let w = |id, offset| Request { id, op: Op::Write, offset, len: 4096 };
        let mut hdd = Hdd::new(&disk()).unwrap();
        let done = run(&mut hdd, &[(0, w(1, 0)), (0, w(2, 4096))]);
        assert_eq!(done[1].at - done[0].at, 27_306); // back to back: the transfer only
        let mut hdd = Hdd::new(&disk()).unwrap();
        let first = run(&mut hdd, &[(0, w(1, 0))])[0].at;
        let second = run(&mut hdd, &[(first + 50_000, w(2, 4096))])[0].at;
        // 50 µs late: the sector passed 50 µs ago and comes round a turn less 50 µs later; then
        // the transfer: a whole turn and a transfer after the first.
        assert_eq!(second - first, 8_333_333 + 27_306);
    }

    #[test]
    fn random_reads_at_depth_one_take_the_average_seek_and_half_a_turn() {
        // 1 / (8.5 ms + 4.167 ms + 0.027 ms) = 78.8 IOPS.
        let iops = closed_loop(&mut Hdd::new(&disk()).unwrap(), &Workload::random_reads(4096, 1, GIB), 60.0);
        assert!((iops - 78.8).abs() < 78.8 * 0.03, "{iops}");
    }

    #[test]
    fn reordering_at_depth_32_more_than_doubles_random_reads() {
        let qd1 = closed_loop(&mut Hdd::new(&disk()).unwrap(), &Workload::random_reads(4096, 1, GIB), 30.0);
        let qd32 = closed_loop(&mut Hdd::new(&disk()).unwrap(), &Workload::random_reads(4096, 32, GIB), 30.0);
        assert!(qd32 > 2.0 * qd1, "qd1 {qd1} qd32 {qd32}");
        let mut fifo = disk();
        fifo.queue_depth = 1;
        let fifo32 = closed_loop(&mut Hdd::new(&fifo).unwrap(), &Workload::random_reads(4096, 32, GIB), 30.0);
        assert!((fifo32 - qd1).abs() < qd1 * 0.05, "no reordering: as at depth 1 ({fifo32})");
    }

    #[test]
    fn sequential_reads_stream_at_the_media_rate_despite_gaps() {
        let w = Workload {
            pattern: Pattern::Sequential,
            op: Op::Read,
            block: 1 << 20,
            depth: 1,
            flush: false,
            gap_ns: 100_000,
            span: GIB,
        };
        let iops = closed_loop(&mut Hdd::new(&disk()).unwrap(), &w, 5.0);
        let rate = iops * (1 << 20) as f64;
        assert!((rate - 150e6).abs() < 150e6 * 0.02, "{rate}");
    }

    #[test]
    fn synchronous_appends_come_once_a_turn() {
        // Each 4 KiB write with a flush after it; the next arrives 20 µs after the last
        // completed: it waits a turn less 20 µs: 1 / 8.333 ms = 120 per second.
        let w = Workload::synchronous_appends(GIB);
        let iops = closed_loop(&mut Hdd::new(&disk()).unwrap(), &w, 5.0);
        assert!((iops - 120.0).abs() < 1.0, "{iops}");
    }
}

//! A write cache in front of a model: a drive's own, or a RAID controller's.
//!
//! - `off`, `write-through`: writes go to the device and complete when it has them (with the
//!   cache off a flush has nothing to write and returns at once). Write-through keeps what was
//!   written, up to its size, oldest out first: a read of it is a hit.
//! - `write-back`: a write completes once in the cache (the interface time); the cache drains to
//!   the device in the background; a flush waits until the cache is empty (a simplification:
//!   writes that came after the flush are waited for too).
//! - `battery-backed`: as write-back, but the cache survives a power loss, so a flush returns at
//!   once. In both, the drain goes in ascending offset order from where it last was (an
//!   elevator), adjacent writes merged, and a write waits while the cache is full.
//!
//! Reads of dirty data are served from the cache; other reads go to the device beside the drain.

use super::{transfer_ns, Done, Model, Nanos, Op, Ready, Request};
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap, VecDeque};

#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum CacheMode {
    Off,
    WriteThrough,
    WriteBack,
    BatteryBacked,
}

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CacheSpec {
    pub mode: CacheMode,
    /// Bytes the cache holds dirty.
    #[serde(default = "default_size")]
    pub size: u64,
    /// Command time of a cache hit.
    #[serde(default = "default_hit_us")]
    pub hit_us: f64,
    /// The interface between host and cache, bytes per second.
    #[serde(default = "default_interface_rate")]
    pub interface_rate: f64,
}

fn default_size() -> u64 {
    256 << 20
}
fn default_hit_us() -> f64 {
    20.0
}
fn default_interface_rate() -> f64 {
    600e6
}

impl CacheSpec {
    pub fn off() -> CacheSpec {
        CacheSpec { mode: CacheMode::Off, size: 0, hit_us: 0.0, interface_rate: 1.0 }
    }

    pub fn of(mode: CacheMode) -> CacheSpec {
        CacheSpec {
            mode,
            size: default_size(),
            hit_us: default_hit_us(),
            interface_rate: default_interface_rate(),
        }
    }
}

/// Most bytes one drain write carries (merged neighbours beyond are left for the next).
const MAX_DRAIN: u64 = 1 << 20;
/// Drain writes outstanding on the device at once.
const DRAIN_DEPTH: usize = 4;

pub struct Cached {
    inner: Box<dyn Model>,
    spec: CacheSpec,
    /// Dirty extents not yet sent to the device: offset → length, merged.
    dirty: BTreeMap<u64, u64>,
    /// Bytes held: dirty plus on their way to the device.
    held: u64,
    /// Drain writes on the device: inner id → (offset, bytes).
    draining: HashMap<u64, (u64, u64)>,
    drain_pos: u64,
    /// Writes waiting for room.
    waiting: VecDeque<Request>,
    /// Flushes waiting for the drain (write-back): their ids.
    flushes: Vec<u64>,
    /// Requests passed through: inner id → (outer id, the write's extent, kept once written).
    through: HashMap<u64, (u64, Option<(u64, u64)>)>,
    /// Write-through: extents written, offset → length, and their order of arrival.
    clean: BTreeMap<u64, u64>,
    clean_order: VecDeque<u64>,
    clean_bytes: u64,
    next_inner: u64,
    ready: Ready,
}

impl Cached {
    pub fn new(inner: Box<dyn Model>, spec: CacheSpec) -> Cached {
        Cached {
            inner,
            spec,
            dirty: BTreeMap::new(),
            held: 0,
            draining: HashMap::new(),
            drain_pos: 0,
            waiting: VecDeque::new(),
            flushes: Vec::new(),
            through: HashMap::new(),
            clean: BTreeMap::new(),
            clean_order: VecDeque::new(),
            clean_bytes: 0,
            next_inner: 1 << 62,
            ready: Ready::default(),
        }
    }

    fn caching(&self) -> bool {
        matches!(self.spec.mode, CacheMode::WriteBack | CacheMode::BatteryBacked)
    }

    fn hit_ns(&self, len: u64) -> Nanos {
        (self.spec.hit_us * 1e3).round() as Nanos + transfer_ns(len, self.spec.interface_rate)
    }

    fn pass(&mut self, at: Nanos, req: Request) {
        let id = self.new_inner_id();
        let keep = (self.spec.mode == CacheMode::WriteThrough && req.op == Op::Write)
            .then_some((req.offset, req.len));
        self.through.insert(id, (req.id, keep));
        self.inner.submit(at, Request { id, ..req });
    }

    /// Write-through: remembers a written extent, dropping the oldest beyond the cache's size.
    fn keep_clean(&mut self, offset: u64, len: u64) {
        if let Some(old) = self.clean.insert(offset, len) {
            self.clean_bytes -= old;
        } else {
            self.clean_order.push_back(offset);
        }
        self.clean_bytes += len;
        while self.clean_bytes > self.spec.size {
            let Some(oldest) = self.clean_order.pop_front() else { break };
            if let Some(l) = self.clean.remove(&oldest) {
                self.clean_bytes -= l;
            }
        }
    }

    fn in_clean(&self, req: &Request) -> bool {
        self.clean.range(..=req.offset).next_back().is_some_and(|(o, l)| o + l >= req.end())
    }

    fn new_inner_id(&mut self) -> u64 {
        self.next_inner += 1;
        self.next_inner
    }

    fn in_dirty(&self, req: &Request) -> bool {
        let covers = |o: u64, l: u64| o <= req.offset && o + l >= req.end();
        self.dirty.range(..=req.offset).next_back().is_some_and(|(o, l)| covers(*o, *l))
            || self.draining.values().any(|(o, l)| covers(*o, *l))
    }

    fn absorb(&mut self, at: Nanos, req: Request) {
        let (mut start, mut end) = (req.offset, req.end());
        let mut added = req.len;
        // Merge with overlapping or touching extents.
        let touching: Vec<(u64, u64)> = self
            .dirty
            .range(..=end)
            .rev()
            .take_while(|(o, l)| *o + *l >= start)
            .map(|(o, l)| (*o, *l))
            .collect();
        for (o, l) in touching {
            self.dirty.remove(&o);
            let overlap = (o + l).min(end).saturating_sub(o.max(start));
            added -= overlap.min(added);
            start = start.min(o);
            end = end.max(o + l);
        }
        self.dirty.insert(start, end - start);
        self.held += added;
        self.ready.push(Done { id: req.id, at: at + self.hit_ns(req.len) });
    }

    /// Admits waiting writes while there is room, starts drain writes, completes flushes.
    fn pump(&mut self, t: Nanos) {
        while let Some(w) = self.waiting.front().copied() {
            if self.held + w.len > self.spec.size && self.held > 0 {
                break;
            }
            self.waiting.pop_front();
            self.absorb(t, w);
        }
        while self.draining.len() < DRAIN_DEPTH {
            let next = self.dirty.range(self.drain_pos..).next().or_else(|| self.dirty.iter().next());
            let Some((&offset, &len)) = next else { break };
            self.dirty.remove(&offset);
            let take = len.min(MAX_DRAIN);
            if take < len {
                self.dirty.insert(offset + take, len - take);
            }
            self.drain_pos = offset + take;
            let id = self.new_inner_id();
            self.draining.insert(id, (offset, take));
            self.inner.submit(t, Request { id, op: Op::Write, offset, len: take });
        }
        if self.held == 0 && self.waiting.is_empty() {
            for id in self.flushes.drain(..) {
                self.ready.push(Done { id, at: t });
            }
        }
    }
}

impl Model for Cached {
    fn submit(&mut self, at: Nanos, req: Request) {
        if !self.caching() {
            if req.op == Op::Flush {
                self.ready.push(Done { id: req.id, at });
            } else if req.op == Op::Read && self.in_clean(&req) {
                self.ready.push(Done { id: req.id, at: at + self.hit_ns(req.len) });
            } else {
                self.pass(at, req);
            }
            return;
        }
        match req.op {
            Op::Read if self.in_dirty(&req) => {
                self.ready.push(Done { id: req.id, at: at + self.hit_ns(req.len) })
            }
            Op::Read => self.pass(at, req),
            Op::Write => self.waiting.push_back(req),
            Op::Flush if self.spec.mode == CacheMode::BatteryBacked => {
                self.ready.push(Done { id: req.id, at: at + self.hit_ns(0) })
            }
            Op::Flush => self.flushes.push(req.id),
        }
        self.pump(at);
    }

    fn advance(&mut self, now: Nanos, done: &mut Vec<Done>) {
        let mut inner_done = Vec::new();
        while let Some(t) = self.inner.next_event().filter(|t| *t <= now) {
            inner_done.clear();
            self.inner.advance(t, &mut inner_done);
            for d in &inner_done {
                if let Some((_, bytes)) = self.draining.remove(&d.id) {
                    self.held -= bytes;
                } else if let Some((outer, keep)) = self.through.remove(&d.id) {
                    if let Some((offset, len)) = keep {
                        self.keep_clean(offset, len);
                    }
                    self.ready.push(Done { id: outer, at: d.at });
                }
            }
            self.pump(t);
        }
        self.ready.drain_until(now, done);
    }

    fn next_event(&self) -> Option<Nanos> {
        super::earliest(self.inner.next_event(), self.ready.next())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::hdd::{Hdd, HddSpec};
    use crate::device::simulate::{closed_loop, run, Workload};

    const GIB: u64 = 1 << 30;

    fn disk(mode: CacheMode) -> Cached {
        Cached::new(Box::new(Hdd::new(&HddSpec::with_size(GIB)).unwrap()), CacheSpec::of(mode))
    }

    fn appends(mode: CacheMode) -> f64 {
        let w = Workload::synchronous_appends(GIB);
        closed_loop(&mut disk(mode), &w, 5.0)
    }

    #[test]
    fn synchronous_appends_once_a_turn_uncached_and_at_the_cache_s_speed_battery_backed() {
        assert!((appends(CacheMode::Off) - 120.0).abs() < 1.0);
        assert!((appends(CacheMode::WriteThrough) - 120.0).abs() < 1.0);
        // Battery-backed: write 20 µs + 4,096 B at 600 MB/s (6.8 µs), flush 20 µs, a 20 µs host
        // gap: 1 / 66.8 µs = 14,970 per second; the drain keeps up (the appends merge).
        let bbu = appends(CacheMode::BatteryBacked);
        assert!((bbu - 14_970.0).abs() < 100.0, "{bbu}");
        // Volatile write-back: each flush waits for the drain: at least a write's transfer and
        // most of a turn, so about as slow as no cache.
        let wb = appends(CacheMode::WriteBack);
        assert!(wb < 200.0, "{wb}");
    }

    #[test]
    fn a_flush_on_write_back_waits_for_the_drain_and_a_full_cache_holds_writes() {
        let mut spec = CacheSpec::of(CacheMode::WriteBack);
        spec.size = 8192;
        let mut c = Cached::new(Box::new(Hdd::new(&HddSpec::with_size(GIB)).unwrap()), spec);
        let w = |id, offset| Request { id, op: Op::Write, offset, len: 4096 };
        let done = run(
            &mut c,
            &[
                (0, w(1, 100 << 20)),
                (0, w(2, 500 << 20)),
                (0, w(3, 900 << 20)),
                (0, Request { id: 4, op: Op::Flush, offset: 0, len: 0 }),
            ],
        );
        let at = |id: u64| done.iter().find(|d| d.id == id).unwrap().at;
        assert_eq!(at(1), 26_827); // 20 µs + 4,096 B at 600 MB/s
                                   // The third waits for room: the first write's drain (a seek to 100 MiB and a turn, ms).
        assert!(at(3) > 1_000_000, "the third write waited for room: {}", at(3));
        assert!(at(4) >= at(3), "the flush waited for the drain");
    }

    #[test]
    fn write_through_waits_for_the_disk_on_writes_and_hits_on_reading_them_back() {
        let mut c = disk(CacheMode::WriteThrough);
        let w = Request { id: 1, op: Op::Write, offset: 625_000, len: 4096 };
        let written = run(&mut c, &[(0, w)])[0].at;
        assert_eq!(written, 4_166_666 + 27_306); // half a turn and the transfer, as uncached
        let r = Request { id: 2, op: Op::Read, offset: 625_000, len: 4096 };
        assert_eq!(run(&mut c, &[(written, r)])[0].at, written + 26_827); // 20 µs + 4 KiB at 600 MB/s
        let mut small = CacheSpec::of(CacheMode::WriteThrough);
        small.size = 4096;
        let mut c = Cached::new(Box::new(Hdd::new(&HddSpec::with_size(GIB)).unwrap()), small);
        let w2 = Request { id: 3, op: Op::Write, offset: 1 << 20, len: 4096 };
        let t = run(&mut c, &[(0, w), (0, w2)]).iter().map(|d| d.at).max().unwrap();
        // The second write pushed the first out: reading it goes to the disk.
        assert!(run(&mut c, &[(t, r)])[0].at > t + 1_000_000);
    }

    #[test]
    fn reads_of_dirty_data_are_hits() {
        let mut c = disk(CacheMode::BatteryBacked);
        let done = run(
            &mut c,
            &[
                (0, Request { id: 1, op: Op::Write, offset: 0, len: 8192 }),
                (100, Request { id: 2, op: Op::Read, offset: 4096, len: 4096 }),
            ],
        );
        assert_eq!(done.iter().find(|d| d.id == 2).unwrap().at, 100 + 26_827);
    }
}

//! RAID 0, 1 and 10 over member models. RAID 0 stripes: stripe unit `k` of the array is unit
//! `k / n` of member `k % n`. RAID 1 writes to every member and reads from the one with the
//! fewest requests outstanding (the nearer head on a tie: the last one it read near). RAID 10
//! stripes over mirrored pairs. A flush goes to every member. A controller cache, when there is
//! one, is a `cache::Cached` in front of the whole set.

use super::{Done, Model, Nanos, Op, Request};
use serde::Deserialize;
use std::collections::HashMap;

#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    Raid0,
    Raid1,
    Raid10,
}

impl Level {
    /// Members that hold distinct data.
    pub fn data_members(self, members: usize) -> usize {
        match self {
            Level::Raid0 => members,
            Level::Raid1 => 1,
            Level::Raid10 => members / 2,
        }
    }

    pub fn check(self, members: usize) -> Result<(), String> {
        let ok = match self {
            Level::Raid0 | Level::Raid1 => members >= 2,
            Level::Raid10 => members >= 4 && members.is_multiple_of(2),
        };
        ok.then_some(())
            .ok_or_else(|| format!("{self:?}: {members} members is not a valid set").to_lowercase())
    }
}

pub struct Raid {
    level: Level,
    stripe: u64,
    members: Vec<Box<dyn Model>>,
    /// Outer id → parts still outstanding, and when the last done so far completed.
    parts: HashMap<u64, (usize, Nanos)>,
    /// (member, sub id) → outer id.
    subs: HashMap<(usize, u64), u64>,
    outstanding: Vec<usize>,
    /// Where each member last read (a tie between mirrors goes to the nearer).
    last_read: Vec<u64>,
    next_sub: u64,
}

impl Raid {
    pub fn new(level: Level, stripe: u64, members: Vec<Box<dyn Model>>) -> Result<Raid, String> {
        level.check(members.len())?;
        if stripe == 0 || !stripe.is_multiple_of(512) {
            return Err(format!("stripe: a positive multiple of 512 bytes, not {stripe}"));
        }
        let n = members.len();
        Ok(Raid {
            level,
            stripe,
            members,
            parts: HashMap::new(),
            subs: HashMap::new(),
            outstanding: vec![0; n],
            last_read: vec![0; n],
            next_sub: 0,
        })
    }

    fn send(&mut self, at: Nanos, outer: u64, member: usize, req: Request) {
        self.next_sub += 1;
        let id = self.next_sub;
        self.subs.insert((member, id), outer);
        self.parts.entry(outer).or_insert((0, 0)).0 += 1;
        self.outstanding[member] += 1;
        if req.op == Op::Read {
            self.last_read[member] = req.offset;
        }
        self.members[member].submit(at, Request { id, ..req });
    }

    /// Of the mirrors `group`, the one to read `offset` from.
    fn reader(&self, group: &[usize], offset: u64) -> usize {
        *group
            .iter()
            .min_by_key(|&&m| (self.outstanding[m], self.last_read[m].abs_diff(offset)))
            .expect("a mirror group has members")
    }

    /// The array's range cut at stripe units: (stripe group, offset in the group's members, len).
    fn pieces(&self, req: &Request, groups: usize) -> Vec<(usize, u64, u64)> {
        let mut out = Vec::new();
        let mut pos = req.offset;
        while pos < req.end() {
            let unit = pos / self.stripe;
            let within = pos % self.stripe;
            let len = (self.stripe - within).min(req.end() - pos);
            out.push(((unit % groups as u64) as usize, (unit / groups as u64) * self.stripe + within, len));
            pos += len;
        }
        out
    }
}

impl Model for Raid {
    fn submit(&mut self, at: Nanos, req: Request) {
        let n = self.members.len();
        if req.op == Op::Flush || req.len == 0 {
            for m in 0..n {
                self.send(at, req.id, m, req);
            }
            return;
        }
        let groups: Vec<Vec<usize>> = match self.level {
            Level::Raid0 => (0..n).map(|m| vec![m]).collect(),
            Level::Raid1 => vec![(0..n).collect()],
            Level::Raid10 => (0..n / 2).map(|p| vec![2 * p, 2 * p + 1]).collect(),
        };
        let pieces = if self.level == Level::Raid1 {
            vec![(0, req.offset, req.len)]
        } else {
            self.pieces(&req, groups.len())
        };
        for (group, offset, len) in pieces {
            let part = Request { offset, len, ..req };
            if req.op == Op::Read {
                let m = self.reader(&groups[group], offset);
                self.send(at, req.id, m, part);
            } else {
                for &m in &groups[group] {
                    self.send(at, req.id, m, part);
                }
            }
        }
    }

    fn advance(&mut self, now: Nanos, done: &mut Vec<Done>) {
        let first = done.len();
        let mut member_done = Vec::new();
        for m in 0..self.members.len() {
            member_done.clear();
            self.members[m].advance(now, &mut member_done);
            for d in &member_done {
                self.outstanding[m] -= 1;
                let Some(outer) = self.subs.remove(&(m, d.id)) else { continue };
                let part = self.parts.get_mut(&outer).expect("parts of a known request");
                part.0 -= 1;
                part.1 = part.1.max(d.at);
                if part.0 == 0 {
                    done.push(Done { id: outer, at: part.1 });
                    self.parts.remove(&outer);
                }
            }
        }
        done[first..].sort_by_key(|d| d.at);
    }

    fn next_event(&self) -> Option<Nanos> {
        self.members.iter().filter_map(|m| m.next_event()).min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::hdd::{Hdd, HddSpec};
    use crate::device::simulate::{closed_loop, Pattern, Workload};

    const GIB: u64 = 1 << 30;

    fn disks(n: usize, size: u64) -> Vec<Box<dyn Model>> {
        (0..n).map(|_| Box::new(Hdd::new(&HddSpec::with_size(size)).unwrap()) as Box<dyn Model>).collect()
    }

    fn one_disk(w: &Workload) -> f64 {
        closed_loop(&mut Hdd::new(&HddSpec::with_size(GIB)).unwrap(), w, 30.0)
    }

    #[test]
    fn striping_cuts_at_stripe_units() {
        let r = Raid::new(Level::Raid0, 65536, disks(2, GIB)).unwrap();
        let req = Request { id: 1, op: Op::Read, offset: 60_000, len: 140_000 };
        // Units 0 (member 0), 1 (member 1), 2 (member 0, its second unit), 3 (member 1).
        assert_eq!(
            r.pieces(&req, 2),
            vec![(0, 60_000, 5_536), (1, 0, 65_536), (0, 65_536, 65_536), (1, 65_536, 3_392)]
        );
    }

    #[test]
    fn raid0_of_two_doubles_random_reads_at_depth_8() {
        // Each member serves its own queue of about four at once (SPTF gains with depth, so
        // the pair is compared with one disk at depth 4); a member spans its half of the array.
        let w = Workload::random_reads(4096, 8, 2 * GIB);
        let pair = closed_loop(&mut Raid::new(Level::Raid0, 65536, disks(2, GIB)).unwrap(), &w, 30.0);
        let single = one_disk(&Workload::random_reads(4096, 4, GIB));
        assert!((pair / single - 2.0).abs() < 0.3, "pair {pair} single {single}");
    }

    #[test]
    fn raid1_of_two_reads_twice_and_writes_once_as_fast_as_one_disk() {
        // Reads: each mirror serves half of the 8 outstanding, so against one disk at depth 4;
        // writes: both disks do every write, so against one disk at the same depth.
        let reads = Workload::random_reads(4096, 8, GIB);
        let writes = Workload { op: Op::Write, ..reads.clone() };
        let mirror =
            |w: &Workload| closed_loop(&mut Raid::new(Level::Raid1, 65536, disks(2, GIB)).unwrap(), w, 30.0);
        let half = Workload::random_reads(4096, 4, GIB);
        let (r, w) = (mirror(&reads) / one_disk(&half), mirror(&writes) / one_disk(&writes));
        assert!((r - 2.0).abs() < 0.3, "reads ×{r}");
        assert!((w - 1.0).abs() < 0.15, "writes ×{w}");
    }

    #[test]
    fn raid10_of_four_stripes_over_pairs() {
        let w = Workload { pattern: Pattern::Random, ..Workload::random_reads(4096, 16, 2 * GIB) };
        let r10 = closed_loop(&mut Raid::new(Level::Raid10, 65536, disks(4, GIB)).unwrap(), &w, 30.0);
        let single = one_disk(&Workload::random_reads(4096, 4, GIB));
        assert!((r10 / single - 4.0).abs() < 0.6, "×{}", r10 / single);
    }
}

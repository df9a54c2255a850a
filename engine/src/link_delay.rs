//! A link's latency without netem (a kernel built without it): the packets a role's link carries
//! are queued to user space by an iptables `NFQUEUE` rule, held here for a fixed time and then
//! let through, in the order they came. Each packet crosses the rule once in each direction, so a
//! delay of half the round trip on each makes the link's round-trip time longer by the whole.
//!
//! Only the packets' metadata is copied to user space (`NFQNL_COPY_META`), and the verdict carries
//! no payload, so the kernel sends the packet it holds unchanged. A packet held here is not yet in
//! the link's qdisc: the rate shaping (tbf) still applies after the delay, as on a real link where
//! propagation and serialisation add up.

use nfq::{Queue, Verdict};
use std::collections::VecDeque;
use std::io;
use std::time::{Duration, Instant};

/// How long to sleep between looks at the queue while it is empty: the most a packet can wait
/// beyond its delay for being noticed late (the kernel's socket offers no wake-up through this
/// library, so an idle link is polled; 10,000 looks a second cost about 1 % of a core).
pub const IDLE_POLL: Duration = Duration::from_micros(100);

/// What the delay did while it ran: packets let through and how late the latest one was.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct DelayStats {
    pub packets: u64,
    /// The largest time a packet was held beyond its delay (scheduling, the idle poll).
    pub late_max: Duration,
}

/// Binds NFQUEUE `queue_num` in the caller's network namespace, calls `ready` once bound (the
/// rules that feed it may be added then: a rule with no listener drops what it matches), and
/// holds each packet for `delay` before accepting it, until `stop` returns true.
pub fn delay_packets(
    queue_num: u16,
    delay: Duration,
    ready: impl FnOnce(),
    mut stop: impl FnMut() -> bool,
) -> io::Result<DelayStats> {
    let mut queue = Queue::open()?;
    queue.bind(queue_num)?;
    queue.set_copy_range(queue_num, 0)?;
    queue.set_nonblocking(true);
    fine_timer_slack();
    ready();
    let mut held: VecDeque<(Instant, nfq::Message)> = VecDeque::new();
    let mut stats = DelayStats::default();
    let mut last_look = Instant::now();
    while !stop() {
        // A packet found now came in since the last look: its delay runs from halfway between.
        let looked = Instant::now();
        let arrived = last_look + (looked - last_look) / 2;
        last_look = looked;
        loop {
            match queue.recv() {
                Ok(mut msg) => {
                    msg.set_verdict(Verdict::Accept);
                    held.push_back((arrived + delay, msg));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
        let now = Instant::now();
        while let Some((due, _)) = held.front() {
            if *due > now {
                break;
            }
            let late = now - *due;
            let (_, msg) = held.pop_front().expect("front exists");
            queue.verdict(msg)?;
            stats.packets += 1;
            stats.late_max = stats.late_max.max(late);
        }
        let wait = held.front().map_or(IDLE_POLL, |(due, _)| due.saturating_duration_since(now));
        std::thread::sleep(wait.min(IDLE_POLL));
    }
    Ok(stats)
}

/// Sleeps wake within a microsecond or so of their time, not the default 50 µs slack: the delay is
/// a few hundred microseconds to milliseconds, and the slack would be a sizeable part of it.
fn fine_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK takes the slack in nanoseconds and touches only this thread.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1_000 as libc::c_ulong, 0, 0, 0);
    }
}

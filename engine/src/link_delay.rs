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
use std::collections::{BTreeSet, VecDeque};
use std::io;
use std::time::{Duration, Instant};

/// The longest wait between two looks at `stop`: how soon a stop request is noticed.
pub const STOP_CHECK: Duration = Duration::from_millis(100);

/// Binds NFQUEUE `queue_num` in the caller's network namespace, calls `ready` once bound (the
/// rules that feed it may be added then: a rule with no listener drops what it matches), and
/// holds each packet for `delay` before accepting it, until `stop` returns true. The thread
/// sleeps in `ppoll` on the queue's socket until a packet arrives or the oldest one is due.
pub fn delay_packets(
    queue_num: u16,
    delay: Duration,
    ready: impl FnOnce(),
    mut stop: impl FnMut() -> bool,
) -> io::Result<()> {
    let before = open_sockets()?;
    let mut queue = Queue::open()?;
    let fd = new_socket(&before)?;
    queue.bind(queue_num)?;
    queue.set_copy_range(queue_num, 0)?;
    queue.set_nonblocking(true);
    fine_timer_slack();
    ready();
    let mut held: VecDeque<(Instant, nfq::Message)> = VecDeque::new();
    while !stop() {
        loop {
            match queue.recv() {
                Ok(mut msg) => {
                    msg.set_verdict(Verdict::Accept);
                    held.push_back((Instant::now() + delay, msg));
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
            let (_, msg) = held.pop_front().expect("front exists");
            queue.verdict(msg)?;
        }
        let wait = held.front().map_or(STOP_CHECK, |(due, _)| due.saturating_duration_since(now));
        wait_readable(fd, wait.min(STOP_CHECK))?;
    }
    Ok(())
}

/// The process's open sockets: descriptor and inode, from /proc/self/fd. (Reading the directory
/// takes a descriptor of its own, which the next socket may reuse: a socket is known by its inode.)
fn open_sockets() -> io::Result<BTreeSet<(i32, u64)>> {
    let mut sockets = BTreeSet::new();
    for entry in std::fs::read_dir("/proc/self/fd")? {
        let Some(fd) = entry?.file_name().to_str().and_then(|n| n.parse().ok()) else { continue };
        // SAFETY: fstat writes only into the zeroed struct we own; a closed fd just fails.
        let st = unsafe {
            let mut st: libc::stat = std::mem::zeroed();
            (libc::fstat(fd, &mut st) == 0).then_some(st)
        };
        if let Some(st) = st.filter(|st| (st.st_mode & libc::S_IFMT) == libc::S_IFSOCK) {
            sockets.insert((fd, st.st_ino));
        }
    }
    Ok(sockets)
}

/// The socket `Queue::open` just made: the one open now that was not before. (The library does not
/// hand out its descriptor; this process opens no other socket meanwhile.)
fn new_socket(before: &BTreeSet<(i32, u64)>) -> io::Result<i32> {
    let made: Vec<i32> = open_sockets()?.difference(before).map(|(fd, _)| *fd).collect();
    match made[..] {
        [fd] => Ok(fd),
        _ => {
            Err(io::Error::other(format!("cannot tell the queue's socket among {} new sockets", made.len())))
        }
    }
}

/// Sleeps until `fd` has something to read or `timeout` has passed (ppoll: microsecond timeouts).
fn wait_readable(fd: i32, timeout: Duration) -> io::Result<()> {
    let mut pfd = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    let ts = libc::timespec {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: one pollfd we own, a timespec we own, no signal mask.
    let rc = unsafe { libc::ppoll(&mut pfd, 1, &ts, std::ptr::null()) };
    if rc < 0 {
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    Ok(())
}

/// Wake-ups come within a microsecond or so of their time, not the default 50 µs slack: the delay
/// is a few hundred microseconds to milliseconds, and the slack would be a sizeable part of it.
fn fine_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK takes the slack in nanoseconds and touches only this thread.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1_000 as libc::c_ulong, 0, 0, 0);
    }
}

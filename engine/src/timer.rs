//! A microsecond-precise sleep for the open-model dispatcher.
//!
//! Tokio's timer wheel has millisecond granularity: at 20,000 requests/s it would release sends
//! in bursts of twenty and charge up to a millisecond of generator lateness to every latency. A
//! timerfd armed for the exact next send wakes the loop within microseconds, for one syscall.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};
use tokio::io::unix::AsyncFd;

pub struct PreciseTimer {
    fd: AsyncFd<OwnedFd>,
}

impl PreciseTimer {
    pub fn new() -> io::Result<PreciseTimer> {
        // SAFETY: timerfd_create returns a new descriptor we then own, or -1.
        let raw =
            unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_NONBLOCK | libc::TFD_CLOEXEC) };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is a fresh, valid descriptor owned by no one else.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: the AsyncFd owns `fd` for its whole life and never swaps it.
        let fd = unsafe { AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE) }
            .map_err(io::Error::from)?;
        Ok(PreciseTimer { fd })
    }

    /// Sleeps until `deadline`; returns at once if it has passed.
    pub async fn sleep_until(&self, deadline: Instant) -> io::Result<()> {
        let now = Instant::now();
        if deadline <= now {
            return Ok(());
        }
        self.arm(deadline - now)?;
        loop {
            let mut guard = self.fd.readable().await?;
            let mut expirations = [0u8; 8];
            // SAFETY: reading 8 bytes into an 8-byte buffer from our own descriptor.
            let n = unsafe { libc::read(self.fd.as_raw_fd(), expirations.as_mut_ptr().cast(), 8) };
            guard.clear_ready();
            if n == 8 {
                return Ok(());
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::WouldBlock {
                return Err(e);
            }
        }
    }

    fn arm(&self, after: Duration) -> io::Result<()> {
        let spec = libc::itimerspec {
            it_interval: libc::timespec { tv_sec: 0, tv_nsec: 0 },
            it_value: libc::timespec {
                tv_sec: after.as_secs() as libc::time_t,
                // A zero it_value would disarm the timer; wake after at least 1 ns.
                tv_nsec: (after.subsec_nanos().max(1)) as libc::c_long,
            },
        };
        // SAFETY: arming our own timer with a valid spec.
        let rc = unsafe { libc::timerfd_settime(self.fd.as_raw_fd(), 0, &spec, std::ptr::null_mut()) };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

//! The generator's own CPU use, from getrusage: the engine competes with the system it measures,
//! so what it burns is reported, not assumed.

fn rusage(who: libc::c_int) -> f64 {
    // SAFETY: getrusage only writes into the zeroed struct we pass it.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(who, &mut u) } != 0 {
        return 0.0;
    }
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(u.ru_utime) + secs(u.ru_stime)
}

/// User + system CPU seconds of the whole process so far.
pub fn process_cpu_s() -> f64 {
    rusage(libc::RUSAGE_SELF)
}

/// User + system CPU seconds of the calling thread so far.
pub fn thread_cpu_s() -> f64 {
    rusage(libc::RUSAGE_THREAD)
}

/// Raises the soft open-files limit to the hard limit and returns it: an open workload may need
/// one socket per request in flight.
pub fn raise_fd_limit() -> u64 {
    // SAFETY: plain syscalls on a stack struct.
    unsafe {
        let mut l: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut l) != 0 {
            return 1024;
        }
        if l.rlim_cur < l.rlim_max {
            let wanted = libc::rlimit { rlim_cur: l.rlim_max, rlim_max: l.rlim_max };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &wanted) == 0 {
                l.rlim_cur = l.rlim_max;
            }
        }
        l.rlim_cur
    }
}

//! The daemon: one file, `device`, served through FUSE from a backing file, each read, write and
//! fsync held until its model says it completes, then done on the backing file and answered.
//! A loop device with direct I/O over the served file carries the filesystem, so what reaches
//! here is what the filesystem sends its disk: reads and writes at their offsets, and a flush for
//! every fsync, O_DSYNC write or journal commit.
//!
//! The FUSE session's thread only stamps and forwards each request; this thread owns the model
//! and the clock: it sleeps (futex, 1 µs timer slack) until the next completion or arrival, runs
//! the model up to now and answers what is due. Model time is the arrival's own time, so a late
//! wake-up delays an answer but never shifts the model: lateness does not accumulate, and the
//! figures report it.
//!
//! The backing file is never fsynced: it is the device's platters, not a copy to protect; the
//! model alone decides how long a flush takes.

use super::spec::DeviceSpec;
use super::{Done, Model, Nanos, Op, Request};
use fuser::{
    Errno, FileAttr, FileHandle, FileType, FopenFlags, Generation, INodeNo, InitFlags, KernelConfig,
    LockOwner, MountOption, OpenFlags, ReplyAttr, ReplyData, ReplyDirectory, ReplyEmpty, ReplyEntry,
    ReplyOpen, ReplyWrite, WriteFlags,
};
use serde::Serialize;
use std::collections::HashMap;
use std::ffi::OsStr;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant, SystemTime};

/// The longest wait between two looks at `stop`.
pub const STOP_CHECK: Duration = Duration::from_millis(100);
/// The served file's name in the mount's root.
pub const FILE_NAME: &str = "device";
const FILE_INO: INodeNo = INodeNo(2);
const TTL: Duration = Duration::from_secs(3600);

enum Reply {
    Data(ReplyData),
    Write(ReplyWrite, Vec<u8>),
    Empty(ReplyEmpty),
}

struct Incoming {
    op: Op,
    offset: u64,
    len: u64,
    reply: Reply,
    arrived: Instant,
}

struct DeviceFs {
    tx: mpsc::Sender<Incoming>,
    size: u64,
    created: SystemTime,
}

impl DeviceFs {
    fn attr(&self, ino: INodeNo) -> FileAttr {
        let dir = ino == INodeNo::ROOT;
        FileAttr {
            ino,
            size: if dir { 0 } else { self.size },
            blocks: if dir { 0 } else { self.size / 512 },
            atime: self.created,
            mtime: self.created,
            ctime: self.created,
            crtime: self.created,
            kind: if dir { FileType::Directory } else { FileType::RegularFile },
            perm: if dir { 0o755 } else { 0o600 },
            nlink: if dir { 2 } else { 1 },
            uid: 0,
            gid: 0,
            rdev: 0,
            blksize: 4096,
            flags: 0,
        }
    }

    fn forward(&self, op: Op, offset: u64, len: u64, reply: Reply) {
        let incoming = Incoming { op, offset, len, reply, arrived: Instant::now() };
        if let Err(mpsc::SendError(i)) = self.tx.send(incoming) {
            match i.reply {
                Reply::Data(r) => r.error(Errno::EIO),
                Reply::Write(r, _) => r.error(Errno::EIO),
                Reply::Empty(r) => r.error(Errno::EIO),
            }
        }
    }
}

impl fuser::Filesystem for DeviceFs {
    fn init(&mut self, _req: &fuser::Request, config: &mut KernelConfig) -> io::Result<()> {
        // Direct I/O from the loop device in flight at once (not one at a time), as many as a
        // deep command queue holds, in requests of up to 1 MiB.
        let _ = config.add_capabilities(InitFlags::FUSE_ASYNC_DIO);
        let _ = config.set_max_background(256);
        let _ = config.set_congestion_threshold(192);
        let _ = config.set_max_write(1 << 20);
        Ok(())
    }

    fn lookup(&self, _req: &fuser::Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        if parent == INodeNo::ROOT && name == FILE_NAME {
            reply.entry(&TTL, &self.attr(FILE_INO), Generation(0));
        } else {
            reply.error(Errno::ENOENT);
        }
    }

    fn getattr(&self, _req: &fuser::Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        if ino == INodeNo::ROOT || ino == FILE_INO {
            reply.attr(&TTL, &self.attr(ino));
        } else {
            reply.error(Errno::ENOENT);
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn setattr(
        &self,
        _req: &fuser::Request,
        ino: INodeNo,
        _mode: Option<u32>,
        _uid: Option<u32>,
        _gid: Option<u32>,
        _size: Option<u64>,
        _atime: Option<fuser::TimeOrNow>,
        _mtime: Option<fuser::TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        // A device's size is fixed: a truncate (or a touch) changes nothing.
        reply.attr(&TTL, &self.attr(ino));
    }

    fn open(&self, _req: &fuser::Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        if ino == FILE_INO {
            reply.opened(FileHandle(0), FopenFlags::empty());
        } else {
            reply.error(Errno::EISDIR);
        }
    }

    fn read(
        &self,
        _req: &fuser::Request,
        _ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let len = u64::from(size).min(self.size.saturating_sub(offset));
        self.forward(Op::Read, offset, len, Reply::Data(reply));
    }

    fn write(
        &self,
        _req: &fuser::Request,
        _ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        if offset + data.len() as u64 > self.size {
            reply.error(Errno::ENOSPC);
            return;
        }
        self.forward(Op::Write, offset, data.len() as u64, Reply::Write(reply, data.to_vec()));
    }

    fn flush(
        &self,
        _req: &fuser::Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock: LockOwner,
        reply: ReplyEmpty,
    ) {
        reply.ok(); // a close, not a cache flush
    }

    fn fsync(
        &self,
        _req: &fuser::Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        self.forward(Op::Flush, 0, 0, Reply::Empty(reply));
    }

    fn readdir(
        &self,
        _req: &fuser::Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        if ino != INodeNo::ROOT {
            reply.error(Errno::ENOTDIR);
            return;
        }
        let entries = [
            (INodeNo::ROOT, FileType::Directory, "."),
            (INodeNo::ROOT, FileType::Directory, ".."),
            (FILE_INO, FileType::RegularFile, FILE_NAME),
        ];
        for (i, (ino, kind, name)) in entries.iter().enumerate().skip(offset as usize) {
            if reply.add(*ino, i as u64 + 1, *kind, name) {
                break;
            }
        }
        reply.ok();
    }
}

/// What the daemon served, and how close to the model's times.
#[derive(Debug, Default, Serialize)]
pub struct ServeStats {
    pub reads: u64,
    pub writes: u64,
    pub flushes: u64,
    pub read_bytes: u64,
    pub written_bytes: u64,
    pub io_errors: u64,
    /// How long after the model's completion time answers went out (the wake-up and the I/O on
    /// the backing file).
    pub late_mean_us: f64,
    pub late_max_us: f64,
    /// Of the lateness, what came before the answer began (the wake-up, other answers due at
    /// the same time): the rest is the I/O on the backing file and the reply.
    pub wake_mean_us: f64,
    /// Answers more than 100 µs after their time.
    pub late_over_100us: u64,
    /// Why the loop ended: "stopped" or "unmounted".
    pub ended: String,
}

struct Server {
    file: File,
    model: Box<dyn Model>,
    epoch: Instant,
    held: HashMap<u64, Incoming>,
    next_id: u64,
    /// Model time the model has been run to.
    clock: Nanos,
    done: Vec<Done>,
    stats: ServeStats,
    late_sum_ns: u128,
    wake_sum_ns: u128,
}

impl Server {
    fn now(&self) -> Nanos {
        self.epoch.elapsed().as_nanos() as Nanos
    }

    fn accept(&mut self, inc: Incoming) {
        let at = (inc.arrived.saturating_duration_since(self.epoch).as_nanos() as Nanos).max(self.clock);
        self.run_to(at);
        self.next_id += 1;
        let req = Request { id: self.next_id, op: inc.op, offset: inc.offset, len: inc.len };
        self.held.insert(req.id, inc);
        self.model.submit(at, req);
    }

    fn run_to(&mut self, t: Nanos) {
        self.clock = self.clock.max(t);
        let mut done = std::mem::take(&mut self.done);
        done.clear();
        self.model.advance(self.clock, &mut done);
        for d in &done {
            self.answer(*d);
        }
        self.done = done;
    }

    fn answer(&mut self, d: Done) {
        let Some(inc) = self.held.remove(&d.id) else { return };
        let woke = (self.epoch.elapsed().as_nanos() as Nanos).saturating_sub(d.at);
        self.wake_sum_ns += woke as u128;
        let s = &mut self.stats;
        match inc.reply {
            Reply::Data(r) => {
                let mut buf = vec![0u8; inc.len as usize];
                match self.file.read_at(&mut buf, inc.offset) {
                    Ok(_) => r.data(&buf), // a short read past the backing's end reads zeros
                    Err(_) => {
                        s.io_errors += 1;
                        r.error(Errno::EIO)
                    }
                }
                s.reads += 1;
                s.read_bytes += inc.len;
            }
            Reply::Write(r, data) => {
                match self.file.write_all_at(&data, inc.offset) {
                    Ok(()) => r.written(data.len() as u32),
                    Err(_) => {
                        s.io_errors += 1;
                        r.error(Errno::EIO)
                    }
                }
                s.writes += 1;
                s.written_bytes += inc.len;
            }
            Reply::Empty(r) => {
                r.ok();
                s.flushes += 1;
            }
        }
        let late = (self.epoch.elapsed().as_nanos() as Nanos).saturating_sub(d.at);
        self.late_sum_ns += late as u128;
        let late_us = late as f64 / 1e3;
        s.late_max_us = s.late_max_us.max(late_us);
        if late_us > 100.0 {
            s.late_over_100us += 1;
        }
    }
}

/// Serves `backing` as `mountpoint/device` through the model `spec` until `stop` returns true
/// or the file system is unmounted; `ready` is called once mounted.
pub fn serve(
    mountpoint: &Path,
    backing: &Path,
    spec: &DeviceSpec,
    ready: impl FnOnce(),
    mut stop: impl FnMut() -> bool,
) -> io::Result<ServeStats> {
    let model = spec.build().map_err(io::Error::other)?;
    let file = OpenOptions::new().read(true).write(true).open(backing)?;
    if file.metadata()?.len() < spec.size() {
        return Err(io::Error::other(format!(
            "{} is smaller than the device ({} bytes)",
            backing.display(),
            spec.size()
        )));
    }
    real_time_priority();
    let (tx, rx) = mpsc::channel();
    let fs = DeviceFs { tx, size: spec.size(), created: SystemTime::now() };
    let mut config = fuser::Config::default();
    config.mount_options =
        vec![MountOption::FSName("caplab-device".into()), MountOption::Subtype("caplab".into())];
    let session = fuser::spawn_mount(fs, mountpoint, &config)?;
    fine_timer_slack();
    ready();
    let mut server = Server {
        file,
        model,
        epoch: Instant::now(),
        held: HashMap::new(),
        next_id: 0,
        clock: 0,
        done: Vec::new(),
        stats: ServeStats::default(),
        late_sum_ns: 0,
        wake_sum_ns: 0,
    };
    let mut last_stop_check = Instant::now();
    let ended = loop {
        if last_stop_check.elapsed() >= STOP_CHECK {
            last_stop_check = Instant::now();
            if stop() {
                break "stopped";
            }
        }
        let now = server.now();
        let wait = match server.model.next_event() {
            Some(t) => Duration::from_nanos(t.saturating_sub(now)),
            None => STOP_CHECK,
        };
        // A sparse event (an HDD's milliseconds) is slept for up to SPIN before it, then waited
        // for on the CPU: a VM's timer wakes tens of microseconds late. At most a tenth of the
        // time is spent so; dense events (an SSD's) are slept for only.
        let received = if wait >= 10 * SPIN && wait < STOP_CHECK {
            match rx.recv_timeout(wait - SPIN) {
                Err(RecvTimeoutError::Timeout) => {
                    spin_until(&rx, server.epoch + Duration::from_nanos(now) + wait)
                }
                other => other,
            }
        } else {
            rx.recv_timeout(wait.min(STOP_CHECK))
        };
        match received {
            Ok(inc) => {
                server.accept(inc);
                while let Ok(inc) = rx.try_recv() {
                    server.accept(inc);
                }
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break "unmounted",
        }
        let now = server.now();
        server.run_to(now);
    };
    // Whatever is still held is answered now (its data done), then the mount goes.
    for (_, inc) in std::mem::take(&mut server.held) {
        let id = server.next_id + 1;
        server.next_id = id;
        server.held.insert(id, inc);
        server.answer(Done { id, at: server.now() });
    }
    drop(session);
    let answered = server.stats.reads + server.stats.writes + server.stats.flushes;
    if answered > 0 {
        server.stats.late_mean_us = server.late_sum_ns as f64 / answered as f64 / 1e3;
        server.stats.wake_mean_us = server.wake_sum_ns as f64 / answered as f64 / 1e3;
    }
    server.stats.ended = ended.into();
    Ok(server.stats)
}

/// How long before a sparse event the daemon stops sleeping and waits on the CPU.
const SPIN: Duration = Duration::from_micros(100);

/// Waits on the CPU until `deadline` for a request (returned) or the time (a timeout).
fn spin_until(rx: &mpsc::Receiver<Incoming>, deadline: Instant) -> Result<Incoming, RecvTimeoutError> {
    loop {
        match rx.try_recv() {
            Ok(inc) => return Ok(inc),
            Err(mpsc::TryRecvError::Disconnected) => return Err(RecvTimeoutError::Disconnected),
            Err(mpsc::TryRecvError::Empty) if Instant::now() >= deadline => {
                return Err(RecvTimeoutError::Timeout)
            }
            Err(mpsc::TryRecvError::Empty) => std::hint::spin_loop(),
        }
    }
}

/// The daemon stands for hardware, which does not wait for a CPU: SCHED_FIFO (a low real-time
/// priority, inherited by the FUSE thread started after it) lets its wake-ups preempt ordinary
/// work on a busy machine. It sleeps between requests, so it takes only what it uses (reported
/// as caplab's own CPU). Without the privilege it runs as an ordinary thread.
fn real_time_priority() {
    let param = libc::sched_param { sched_priority: 10 };
    // SAFETY: sets this thread's policy from a parameter we own; failure changes nothing.
    unsafe {
        libc::sched_setscheduler(0, libc::SCHED_FIFO, &param);
    }
}

/// Wake-ups within a microsecond or so of their time, not the default 50 µs slack.
fn fine_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK takes the slack in nanoseconds and touches only this thread.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1_000 as libc::c_ulong, 0, 0, 0);
    }
}

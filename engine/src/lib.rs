//! caplab's load engine. The modules are plain Rust (tested and benchmarked with cargo); the
//! `python` module at the bottom is the only binding, built into `caplab._engine` by maturin.

// The engine times sends with timerfd and measures its threads with per-thread rusage: both are
// Linux system calls. Elsewhere the build stops here with the reason, not deep inside libc.
#[cfg(not(target_os = "linux"))]
compile_error!("caplab's load engine runs on Linux only: it needs timerfd and RUSAGE_THREAD");

#[cfg(target_os = "linux")]
pub mod cpu;
#[cfg(target_os = "linux")]
pub mod device;
pub mod driver;
pub mod executor;
#[cfg(target_os = "linux")]
pub mod link_delay;
pub mod plan;
pub mod result;
pub mod run;
pub mod schedule;
pub mod stats;
#[cfg(target_os = "linux")]
pub mod timer;

pub use plan::{Plan, PlanError};
pub use result::{IntervalSnapshot, RunResult};
pub use run::{run, Hooks, RunError};

#[cfg(feature = "python")]
mod python;

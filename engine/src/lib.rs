//! caplab's load engine. The modules are plain Rust (tested and benchmarked with cargo); the
//! `python` module at the bottom is the only binding, built into `caplab._engine` by maturin.

pub mod cpu;
pub mod driver;
pub mod executor;
pub mod plan;
pub mod result;
pub mod run;
pub mod schedule;
pub mod stats;
pub mod timer;

pub use plan::{Plan, PlanError};
pub use result::{IntervalSnapshot, RunResult};
pub use run::{run, Hooks, RunError};

#[cfg(feature = "python")]
mod python;

//! The Python binding: JSON in, JSON out, the GIL released while the load runs.

use crate::plan::Plan;
use crate::run::{run, Hooks, RunError};
use crate::stats::{decode, encode, new_histogram, Summary};
use pyo3::exceptions::{PyConnectionError, PyKeyboardInterrupt, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

pyo3::create_exception!(
    _engine,
    PlanError,
    PyValueError,
    "The run plan is invalid; the message names the field."
);
pyo3::create_exception!(
    _engine,
    TargetUnreachable,
    PyConnectionError,
    "Nothing answers at the target address."
);
pyo3::create_exception!(
    _engine,
    WorkerFailed,
    PyRuntimeError,
    "A load-generating thread failed (the message says why); the run's counts are incomplete."
);

/// Runs a plan (JSON) and returns the result (JSON). `on_interval` receives each interval
/// snapshot as JSON and may return False to stop the run. Ctrl-C, or that, stops the run; the
/// result then has `"interrupted": true`.
#[pyfunction]
#[pyo3(signature = (plan_json, on_interval=None))]
fn run_plan(py: Python<'_>, plan_json: &str, on_interval: Option<Py<PyAny>>) -> PyResult<String> {
    let plan = Plan::from_json(plan_json).map_err(|e| PlanError::new_err(e.to_string()))?;
    // A callback that raises stops the run (its error is re-raised after); Ctrl-C landing inside
    // the callback is an interrupt like any other, not an error.
    let callback_error: Mutex<Option<PyErr>> = Mutex::new(None);
    let stop = AtomicBool::new(false);
    let outcome = py.detach(|| {
        let mut emit = |snap: &crate::IntervalSnapshot| {
            let Some(cb) = &on_interval else { return };
            if stop.load(Ordering::Relaxed) {
                return;
            }
            let text = serde_json::to_string(snap).expect("snapshots serialise");
            Python::attach(|py| {
                match cb.call1(py, (text,)) {
                    // Returning False asks for the run to stop, like Ctrl-C: the result is kept.
                    Ok(answer) => {
                        if let Ok(false) = answer.bind(py).extract::<bool>() {
                            stop.store(true, Ordering::Relaxed);
                        }
                    }
                    Err(e) => {
                        stop.store(true, Ordering::Relaxed);
                        if !e.is_instance_of::<PyKeyboardInterrupt>(py) {
                            *callback_error.lock().expect("not poisoned") = Some(e);
                        }
                    }
                }
            });
        };
        let mut abort = || stop.load(Ordering::Relaxed) || Python::attach(|py| py.check_signals().is_err());
        run(&plan, Hooks { on_interval: &mut emit, should_abort: &mut abort })
    });
    if let Some(e) = callback_error.into_inner().expect("not poisoned") {
        return Err(e);
    }
    match outcome {
        Ok(result) => Ok(serde_json::to_string(&result).expect("results serialise")),
        Err(RunError::Plan(e)) => Err(PlanError::new_err(e.to_string())),
        Err(RunError::Unreachable(m)) => Err(TargetUnreachable::new_err(m)),
        Err(RunError::WorkerFailed(m)) => Err(WorkerFailed::new_err(m)),
    }
}

/// Merges HdrHistogram V2 (base64) histograms into one.
#[pyfunction]
fn merge_histograms(encoded: Vec<String>) -> PyResult<String> {
    let mut total = new_histogram();
    for text in &encoded {
        let h = decode(text).map_err(PyValueError::new_err)?;
        total.add(&h).map_err(|e| PyValueError::new_err(format!("{e:?}")))?;
    }
    Ok(encode(&total))
}

/// Summarises a V2 histogram (µs values) as JSON: count, min, mean, p50 … max in milliseconds.
#[pyfunction]
fn summarize_histogram(encoded: &str) -> PyResult<String> {
    let h = decode(encoded).map_err(PyValueError::new_err)?;
    Ok(serde_json::to_string(&Summary::of(&h)).expect("summaries serialise"))
}

/// The two hooks a loop run without the GIL (the packet queue, the FUSE daemon) is given, the
/// same for each: `ready` calls `on_ready`; `stop` says to end once that call raised or a signal's
/// handler did (Ctrl-C: KeyboardInterrupt), the exception kept in `failed` for the caller. Looking
/// at signals takes the GIL, so a loop that wakes often looks at most once each `every`
/// (`Duration::ZERO`: at every call).
fn python_hooks<'a>(
    on_ready: &'a Py<PyAny>,
    failed: &'a Mutex<Option<PyErr>>,
    every: Duration,
) -> (impl FnOnce() + 'a, impl FnMut() -> bool + 'a) {
    let ready = move || {
        if let Err(e) = Python::attach(|py| on_ready.call0(py)) {
            *failed.lock().expect("not poisoned") = Some(e);
        }
    };
    let mut checked = Instant::now();
    let stop = move || {
        if failed.lock().expect("not poisoned").is_some() {
            return true;
        }
        if checked.elapsed() < every {
            return false;
        }
        checked = Instant::now();
        let signalled = Python::attach(|py| py.check_signals().err());
        let stopping = signalled.is_some();
        *failed.lock().expect("not poisoned") = signalled;
        stopping
    };
    (ready, stop)
}

/// Holds each packet NFQUEUE ``queue_num`` receives for ``delay_us`` microseconds, then lets it
/// through: a link's latency (see ``link_delay``). ``on_ready`` is called once the queue is bound.
/// Runs until Ctrl-C (KeyboardInterrupt) or another signal's exception; what the delay did is
/// read off the link itself (its measured round trip).
#[pyfunction]
fn delay_link(py: Python<'_>, queue_num: u16, delay_us: u64, on_ready: Py<PyAny>) -> PyResult<()> {
    let failed: Mutex<Option<PyErr>> = Mutex::new(None);
    let outcome = py.detach(|| {
        // The GIL only ten times a second: the loop wakes for every packet.
        let (ready, stop) = python_hooks(&on_ready, &failed, Duration::from_millis(100));
        crate::link_delay::delay_packets(queue_num, Duration::from_micros(delay_us), ready, stop)
    });
    if let Some(e) = failed.into_inner().expect("not poisoned") {
        return Err(e);
    }
    outcome.map_err(|e| PyRuntimeError::new_err(format!("NFQUEUE {queue_num}: {e}")))
}

/// Serves ``backing`` as the file ``device`` in the FUSE mount ``mountpoint``, every request held
/// for the time the device model ``model_json`` gives (see ``device::serve``). ``on_ready`` is
/// called once mounted. Runs until Ctrl-C (KeyboardInterrupt), another signal's exception or an
/// unmount; returns what it served, as JSON.
#[pyfunction]
fn serve_device(
    py: Python<'_>,
    mountpoint: &str,
    backing: &str,
    model_json: &str,
    on_ready: Py<PyAny>,
) -> PyResult<String> {
    let spec = crate::device::spec::DeviceSpec::from_json(model_json).map_err(PlanError::new_err)?;
    let failed: Mutex<Option<PyErr>> = Mutex::new(None);
    let outcome = py.detach(|| {
        let (ready, stop) = python_hooks(&on_ready, &failed, Duration::ZERO);
        crate::device::serve::serve(
            std::path::Path::new(mountpoint),
            std::path::Path::new(backing),
            &spec,
            ready,
            stop,
        )
    });
    let stats = outcome.map_err(|e| PyRuntimeError::new_err(format!("device at {mountpoint}: {e}")))?;
    if let Some(e) = failed.into_inner().expect("not poisoned") {
        if !e.is_instance_of::<pyo3::exceptions::PyKeyboardInterrupt>(py) {
            return Err(e);
        }
    }
    serde_json::to_string(&stats).map_err(|e| PyRuntimeError::new_err(e.to_string()))
}

/// The operations per second a closed-loop workload (``workload_json``: op, pattern, block,
/// depth, flush, gap_ns, span) completes on the device model ``model_json`` over ``seconds`` of
/// model time: the model's own figure, which fio through the kernel is checked against.
#[pyfunction]
fn simulate_device(py: Python<'_>, model_json: &str, workload_json: &str, seconds: f64) -> PyResult<f64> {
    let spec = crate::device::spec::DeviceSpec::from_json(model_json).map_err(PlanError::new_err)?;
    let workload: crate::device::simulate::Workload =
        serde_json::from_str(workload_json).map_err(|e| PlanError::new_err(format!("workload: {e}")))?;
    let mut model = spec.build().map_err(PlanError::new_err)?;
    Ok(py.detach(|| crate::device::simulate::closed_loop(model.as_mut(), &workload, seconds)))
}

#[pymodule]
fn _engine(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(run_plan, m)?)?;
    m.add_function(wrap_pyfunction!(merge_histograms, m)?)?;
    m.add_function(wrap_pyfunction!(summarize_histogram, m)?)?;
    m.add_function(wrap_pyfunction!(delay_link, m)?)?;
    m.add_function(wrap_pyfunction!(serve_device, m)?)?;
    m.add_function(wrap_pyfunction!(simulate_device, m)?)?;
    m.add("PlanError", m.py().get_type::<PlanError>())?;
    m.add("TargetUnreachable", m.py().get_type::<TargetUnreachable>())?;
    m.add("WorkerFailed", m.py().get_type::<WorkerFailed>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}

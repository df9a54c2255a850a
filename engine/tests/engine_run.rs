//! End-to-end runs of the engine against small servers started in-process on loopback.

use caplab_engine::{run, Hooks, Plan, RunError, RunResult};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

/// Serves each connection on its own thread with `reply`, counting connections.
fn serve(reply: fn(&mut BufReader<TcpStream>) -> Option<Vec<u8>>) -> (u16, Arc<AtomicU64>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let connections = Arc::new(AtomicU64::new(0));
    let counter = connections.clone();
    thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            counter.fetch_add(1, Ordering::Relaxed);
            thread::spawn(move || {
                let mut writer = stream.try_clone().unwrap();
                let mut reader = BufReader::new(stream);
                while let Some(bytes) = reply(&mut reader) {
                    if writer.write_all(&bytes).is_err() {
                        return;
                    }
                }
            });
        }
    });
    (port, connections)
}

/// A minimal HTTP/1.1 server: reads a head (and any Content-Length body), answers 200 "ok".
fn http_ok(reader: &mut BufReader<TcpStream>) -> Option<Vec<u8>> {
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = v.trim().parse().ok()?;
        }
        if line == "\r\n" {
            break;
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n".to_vec())
}

/// Answers chunked responses, to exercise the chunked body reader.
fn http_chunked(reader: &mut BufReader<TcpStream>) -> Option<Vec<u8>> {
    http_ok(reader)?;
    Some(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;x=y\r\nde\r\n0\r\n\r\n".to_vec(),
    )
}

fn line_echo(reader: &mut BufReader<TcpStream>) -> Option<Vec<u8>> {
    let mut line = Vec::new();
    if reader.read_until(b'\n', &mut line).ok()? == 0 {
        return None;
    }
    Some(line)
}

fn go(plan_json: &str) -> Result<RunResult, RunError> {
    let plan = Plan::from_json(plan_json).map_err(RunError::Plan)?;
    run(&plan, Hooks { on_interval: &mut |_| {}, should_abort: &mut || false })
}

#[test]
fn closed_http_reuses_one_connection_per_user() {
    let (port, connections) = serve(http_ok);
    let r = go(&format!(
        r#"{{"target": {{"url": "http://127.0.0.1:{port}/"}}, "load": {{"model": "closed", "users": 3}},
            "duration_s": 0.5, "threads": 2}}"#
    ))
    .unwrap();
    assert!(r.completed > 100, "{r:?}");
    assert_eq!(r.errors, 0);
    assert_eq!(r.generator.connections_opened, 3);
    // The pre-flight check opens one more.
    assert_eq!(connections.load(Ordering::Relaxed), 4);
    assert_eq!(r.sent, r.completed + r.errors);
}

#[test]
fn chunked_replies_are_read_whole() {
    let (port, _) = serve(http_chunked);
    let r = go(&format!(
        r#"{{"target": {{"url": "http://127.0.0.1:{port}/"}}, "load": {{"model": "closed", "users": 2}},
            "duration_s": 0.3, "threads": 1}}"#
    ))
    .unwrap();
    assert!(r.completed > 50 && r.errors == 0, "{r:?}");
    assert_eq!(r.generator.connections_opened, 2);
}

#[test]
fn open_model_keeps_the_rate_and_counts_per_interval() {
    let (port, _) = serve(line_echo);
    let r = go(&format!(
        r#"{{"target": {{"url": "tcp://127.0.0.1:{port}", "framing": "line"}},
            "requests": [{{"body": "hello {{seq}}", "template": true}}],
            "load": {{"model": "open", "profile": [{{"duration_s": 1.0, "rate_start": 400, "rate_end": 400}}]}},
            "duration_s": 1.0, "warmup_s": 0.5, "interval_s": 0.25}}"#
    ))
    .unwrap();
    assert!((r.sent as f64 - 400.0).abs() <= 4.0, "sent {} dropped {} {:?}", r.sent, r.dropped, r.generator);
    assert_eq!(r.completed, r.sent);
    assert!(!r.generator.saturated, "{:?}", r.generator);
    let warm: Vec<_> = r.intervals.iter().filter(|i| i.warmup).collect();
    assert_eq!(warm.len(), 2, "{:?}", r.intervals);
    let total_sent: u64 = r.intervals.iter().map(|i| i.sent).sum();
    assert!((total_sent as f64 - 600.0).abs() <= 4.0, "all sends, warm-up included: {total_sent}");
}

#[test]
fn a_cap_on_requests_in_flight_drops_instead_of_queueing() {
    // A server that accepts but never answers: every request stays in flight.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    thread::spawn(move || {
        let mut held = Vec::new();
        for s in listener.incoming().flatten() {
            held.push(s);
        }
    });
    let r = go(&format!(
        r#"{{"target": {{"url": "tcp://127.0.0.1:{port}", "framing": "u32"}},
            "load": {{"model": "open", "profile": [{{"duration_s": 0.5, "rate_start": 200, "rate_end": 200}}]}},
            "duration_s": 0.5, "max_in_flight": 4, "timeout_s": 0.2, "threads": 1}}"#
    ))
    .unwrap();
    assert!(r.dropped > 0, "{r:?}");
    assert_eq!(r.completed, 0);
    assert_eq!(r.errors_by_kind.get("timeout").copied().unwrap_or(0), r.errors);
    // Every scheduled request was either sent or dropped: none was delayed past its slot.
    assert!(((r.sent + r.dropped) as f64 - 100.0).abs() <= 2.0, "{} + {}", r.sent, r.dropped);
}

#[test]
fn max_requests_stops_the_run() {
    let (port, _) = serve(line_echo);
    let r = go(&format!(
        r#"{{"target": {{"url": "tcp://127.0.0.1:{port}", "framing": "line"}}, "load": {{"model": "closed", "users": 2}},
            "duration_s": 30, "max_requests": 500, "threads": 1}}"#
    ))
    .unwrap();
    assert!((500..=502).contains(&r.sent), "{}", r.sent);
    assert!(r.duration_s < 5.0);
}

#[test]
fn nothing_listening_is_unreachable() {
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let e = go(&format!(
        r#"{{"target": {{"url": "http://127.0.0.1:{port}/"}}, "load": {{"model": "closed", "users": 1}}, "duration_s": 1}}"#
    ))
    .unwrap_err();
    assert!(matches!(&e, RunError::Unreachable(m) if m.contains("refused")), "{e}");
}

#[test]
fn a_server_that_dies_mid_run_shows_as_errors_not_a_crash() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    thread::spawn(move || {
        // Answer the pre-flight and a few requests, then close everything and stop listening.
        let deadline = std::time::Instant::now() + Duration::from_millis(200);
        for s in listener.incoming().flatten() {
            thread::spawn(move || {
                let mut w = s.try_clone().unwrap();
                let mut r = BufReader::new(s);
                while std::time::Instant::now() < deadline {
                    match line_echo(&mut r) {
                        Some(b) => w.write_all(&b).unwrap_or(()),
                        None => return,
                    }
                }
            });
            if std::time::Instant::now() > deadline {
                break;
            }
        }
    });
    let r = go(&format!(
        r#"{{"target": {{"url": "tcp://127.0.0.1:{port}", "framing": "line"}}, "load": {{"model": "closed", "users": 2}},
            "duration_s": 0.6, "threads": 1}}"#
    ))
    .unwrap();
    assert!(r.completed > 0 && r.errors > 0, "{r:?}");
    assert!(
        r.errors_by_kind.keys().all(|k| ["reset", "connect"].contains(&k.as_str())),
        "{:?}",
        r.errors_by_kind
    );
}

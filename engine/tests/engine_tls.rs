//! HTTPS runs against an in-process rustls server whose certificate is signed by a CA made for
//! the test: handshakes counted, sessions resumed, untrusted certificates refused with a reason.

use caplab_engine::{run, Hooks, Plan, RunError, RunResult};
use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::{ServerConfig, ServerConnection, StreamOwned};
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::thread;

/// A test CA (its PEM) and a server configuration for `localhost` / 127.0.0.1 signed by it.
fn ca_and_server() -> (String, Arc<ServerConfig>) {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let leaf_key = KeyPair::generate().unwrap();
    let leaf_params = CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()]).unwrap();
    let leaf = leaf_params.signed_by(&leaf_key, &ca, &ca_key).unwrap();
    let chain = vec![CertificateDer::from(leaf.der().to_vec())];
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der()));
    let config = ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .unwrap();
    (ca.pem(), Arc::new(config))
}

/// Serves HTTPS, a thread per connection: 200 "ok" to each request, closing after one that
/// asked for `Connection: close`.
fn serve_https(config: Arc<ServerConfig>) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    thread::spawn(move || {
        for tcp in listener.incoming().flatten() {
            let config = config.clone();
            thread::spawn(move || {
                let Ok(conn) = ServerConnection::new(config) else { return };
                let mut reader = BufReader::new(StreamOwned::new(conn, tcp));
                while let Some(close) = read_request(&mut reader) {
                    let stream = reader.get_mut();
                    let head = if close { "Connection: close\r\n" } else { "" };
                    let reply = format!("HTTP/1.1 200 OK\r\n{head}Content-Length: 3\r\n\r\nok\n");
                    if stream.write_all(reply.as_bytes()).and_then(|_| stream.flush()).is_err() || close {
                        stream.conn.send_close_notify();
                        let _ = stream.flush();
                        return;
                    }
                }
            });
        }
    });
    port
}

/// Reads one request head and body; Some(true) when it asked to close the connection.
fn read_request(reader: &mut impl BufRead) -> Option<bool> {
    let (mut length, mut close) = (0usize, false);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let lower = line.to_ascii_lowercase();
        if let Some(v) = lower.strip_prefix("content-length:") {
            length = v.trim().parse().ok()?;
        }
        close |= lower.trim() == "connection: close";
        if line == "\r\n" {
            break;
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(close)
}

fn go(plan_json: &str) -> Result<RunResult, RunError> {
    let plan = Plan::from_json(plan_json).map_err(RunError::Plan)?;
    run(&plan, Hooks { on_interval: &mut |_| {}, should_abort: &mut || false })
}

fn plan(port: u16, tls: &str, headers: &str) -> String {
    format!(
        r#"{{"target": {{"url": "https://127.0.0.1:{port}/"}}, "tls": {tls},
            "requests": [{{"headers": {headers}}}],
            "load": {{"model": "closed", "users": 2}}, "duration_s": 0.5, "threads": 1}}"#
    )
}

#[test]
fn keep_alive_pays_one_handshake_per_connection() {
    let (_, config) = ca_and_server();
    let port = serve_https(config);
    let r = go(&plan(port, r#"{"insecure": true}"#, "[]")).unwrap();
    assert!(r.completed > 20 && r.errors == 0, "{} completed, {:?}", r.completed, r.errors_by_kind);
    assert_eq!(r.generator.connections_opened, 2);
    assert_eq!(r.generator.tls_handshakes, Some(2));
    assert_eq!(r.generator.tls_resumed, Some(0), "fresh sessions: nothing to resume yet");
}

#[test]
fn without_keep_alive_every_request_pays_a_handshake_and_later_ones_resume() {
    let (_, config) = ca_and_server();
    let port = serve_https(config);
    let r = go(&plan(port, r#"{"insecure": true}"#, r#"[["Connection", "close"]]"#)).unwrap();
    let handshakes = r.generator.tls_handshakes.unwrap();
    assert!(r.completed > 20 && r.errors == 0, "{} completed, {:?}", r.completed, r.errors_by_kind);
    assert!(handshakes.abs_diff(r.completed) <= 2, "{handshakes} handshakes for {} requests", r.completed);
    let resumed = r.generator.tls_resumed.unwrap();
    assert!(resumed + 2 >= handshakes, "only {resumed} of {handshakes} handshakes resumed a session");
    let per_s = r.generator.tls_handshakes_per_s.unwrap();
    assert!((per_s - handshakes as f64 / r.duration_s).abs() < 1e-6);
    let r =
        go(&plan(port, r#"{"insecure": true, "resume": false}"#, r#"[["Connection", "close"]]"#)).unwrap();
    assert!(r.completed > 20 && r.errors == 0, "{:?}", r.errors_by_kind);
    assert_eq!(r.generator.tls_resumed, Some(0), "without resumption every handshake is full");
}

#[test]
fn an_untrusted_certificate_fails_before_the_run_with_its_reason() {
    let (_, config) = ca_and_server();
    let port = serve_https(config);
    let Err(RunError::Unreachable(message)) = go(&plan(port, "null", "[]")) else {
        panic!("a certificate from an unknown CA must not be accepted")
    };
    assert!(message.contains("invalid peer certificate"), "{message}");
    assert!(message.contains("--insecure") && message.contains("--cacert"), "{message}");
}

#[test]
fn a_ca_file_makes_the_certificate_trusted_and_names_are_checked() {
    let (ca_pem, config) = ca_and_server();
    let port = serve_https(config);
    let dir = std::env::temp_dir().join(format!("caplab-tls-{}-{port}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ca_file = dir.join("ca.pem");
    std::fs::write(&ca_file, ca_pem).unwrap();
    let ca = ca_file.display();
    let r = go(&plan(port, &format!(r#"{{"ca_file": "{ca}"}}"#), "[]")).unwrap();
    assert!(r.completed > 20 && r.errors == 0, "{:?}", r.errors_by_kind);
    let r = go(&plan(port, &format!(r#"{{"ca_file": "{ca}", "server_name": "localhost"}}"#), "[]")).unwrap();
    assert!(r.completed > 20 && r.errors == 0, "{:?}", r.errors_by_kind);
    let Err(RunError::Unreachable(message)) =
        go(&plan(port, &format!(r#"{{"ca_file": "{ca}", "server_name": "other.example"}}"#), "[]"))
    else {
        panic!("a certificate for another name must not be accepted")
    };
    assert!(message.contains("not valid for name") && message.contains("server_name"), "{message}");
    let missing = go(&plan(port, r#"{"ca_file": "/nonexistent/ca.pem"}"#, "[]"));
    let Err(RunError::Plan(e)) = missing else { panic!("a missing CA file is a plan error") };
    assert_eq!(e.field, "tls.ca_file");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_plain_server_on_an_https_url_is_named_as_such() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    thread::spawn(move || {
        for mut tcp in listener.incoming().flatten() {
            let _ = tcp.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
        }
    });
    let Err(RunError::Unreachable(message)) = go(&plan(port, r#"{"insecure": true}"#, "[]")) else {
        panic!("a server without TLS must fail the handshake")
    };
    assert!(message.contains("speak TLS"), "{message}");
}

#[test]
fn tls_targets_speak_framed_tcp_inside_tls() {
    let (_, config) = ca_and_server();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    thread::spawn(move || {
        for tcp in listener.incoming().flatten() {
            let config = config.clone();
            thread::spawn(move || {
                let Ok(conn) = ServerConnection::new(config) else { return };
                let mut reader = BufReader::new(StreamOwned::new(conn, tcp));
                let mut line = Vec::new();
                while reader.read_until(b'\n', &mut line).is_ok_and(|n| n > 0) {
                    let stream = reader.get_mut();
                    if stream.write_all(&line).and_then(|_| stream.flush()).is_err() {
                        return;
                    }
                    line.clear();
                }
            });
        }
    });
    let r = go(&format!(
        r#"{{"target": {{"url": "tls://127.0.0.1:{port}", "framing": "line"}}, "tls": {{"insecure": true}},
            "requests": [{{"body": "MSH|{{seq}}", "template": true}}],
            "load": {{"model": "closed", "users": 2}}, "duration_s": 0.5, "threads": 1}}"#
    ))
    .unwrap();
    assert!(r.completed > 20 && r.errors == 0, "{} completed, {:?}", r.completed, r.errors_by_kind);
    assert_eq!(r.generator.tls_handshakes, Some(2));
}

//! TLS on rustls for the stream drivers (`https://`, and `tls://` for framed TCP): one client
//! configuration per run, so its session cache lets later connections resume instead of paying a
//! full handshake; which of the two each connection paid is reported, for handshakes/s.

use super::ErrorKind;
use crate::plan::{PlanError, TlsOptions};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, HandshakeKind, RootCertStore, SignatureScheme,
};
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

/// A connection's byte stream: plain TCP or TLS over it.
pub enum Stream {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::client::TlsStream<TcpStream>>),
}

impl AsyncRead for Stream {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

/// Which handshake a new TLS connection paid for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handshake {
    /// Certificate and key exchange in full.
    Full,
    /// Resumed from a session the server gave on an earlier connection (cheaper for both sides).
    Resumed,
}

/// The TLS side of one target: the run's shared client configuration and the name the server's
/// certificate must carry.
#[derive(Clone)]
pub struct TlsClient {
    connector: TlsConnector,
    server_name: ServerName<'static>,
}

impl TlsClient {
    pub fn new(config: Arc<ClientConfig>, options: &TlsOptions, host: &str) -> Result<TlsClient, PlanError> {
        let name = options.server_name.as_deref().unwrap_or(host);
        let server_name = ServerName::try_from(name.to_string()).map_err(|_| PlanError {
            field: "tls.server_name".into(),
            message: format!("{name:?} is not a DNS name or IP address"),
        })?;
        Ok(TlsClient { connector: TlsConnector::from(config), server_name })
    }

    /// Runs the handshake over an open TCP connection. On failure, the error's kind (`tls` when
    /// the TLS layer refused, e.g. an untrusted certificate) and rustls's words for it.
    pub async fn handshake(&self, tcp: TcpStream) -> Result<(Stream, Handshake), (ErrorKind, String)> {
        match self.connector.connect(self.server_name.clone(), tcp).await {
            Ok(tls) => {
                let kind = match tls.get_ref().1.handshake_kind() {
                    Some(HandshakeKind::Resumed) => Handshake::Resumed,
                    _ => Handshake::Full,
                };
                Ok((Stream::Tls(Box::new(tls)), kind))
            }
            Err(e) => {
                let kind = if tls_error(&e).is_some() { ErrorKind::Tls } else { ErrorKind::of_connect(&e) };
                Err((kind, format!("TLS handshake: {}", explain(&e))))
            }
        }
    }
}

impl TlsClient {
    /// One blocking handshake before the run, so that a certificate the client does not trust
    /// fails at once with its reason instead of as a run full of `tls` errors. It uses a
    /// configuration of its own: the run's first connection must not resume its session. A busy
    /// server may take longer than `timeout` to answer one handshake: a timed-out handshake is
    /// tried once more with `PREFLIGHT_RETRY_FACTOR` times the time before the run is refused.
    pub fn preflight(&self, options: &TlsOptions, addr: SocketAddr, timeout: Duration) -> Result<(), String> {
        match self.preflight_once(options, addr, timeout) {
            Err(Preflight::TimedOut) => {
                let longer = timeout * PREFLIGHT_RETRY_FACTOR;
                match self.preflight_once(options, addr, longer) {
                    Err(Preflight::TimedOut) => Err(format!(
                        "TLS handshake with {addr} timed out after {} s (and after {} s on a first try): \
                         is the server overloaded, or not speaking TLS on this port?",
                        seconds(longer),
                        seconds(timeout)
                    )),
                    Err(Preflight::Failed(why)) => Err(why),
                    Ok(()) => Ok(()),
                }
            }
            Err(Preflight::Failed(why)) => Err(why),
            Ok(()) => Ok(()),
        }
    }

    fn preflight_once(
        &self,
        options: &TlsOptions,
        addr: SocketAddr,
        timeout: Duration,
    ) -> Result<(), Preflight> {
        let config = client_config(options).map_err(|e| Preflight::Failed(e.to_string()))?;
        let failed = |e: io::Error| match e.kind() {
            // A socket timeout: SO_RCVTIMEO and SO_SNDTIMEO expire as EAGAIN (WouldBlock).
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => Preflight::TimedOut,
            _ => Preflight::Failed(format!("TLS handshake with {addr} failed: {}", explain(&e))),
        };
        let mut sock = std::net::TcpStream::connect_timeout(&addr, timeout).map_err(failed)?;
        let _ = sock.set_read_timeout(Some(timeout));
        let _ = sock.set_write_timeout(Some(timeout));
        let mut conn = rustls::ClientConnection::new(config, self.server_name.clone())
            .map_err(|e| Preflight::Failed(format!("TLS handshake with {addr} failed: {e}")))?;
        // The socket's timeouts bound each read and write; this bounds the handshake as a whole.
        let deadline = Instant::now() + timeout;
        while conn.is_handshaking() {
            if Instant::now() >= deadline {
                return Err(Preflight::TimedOut);
            }
            conn.complete_io(&mut sock).map_err(failed)?;
        }
        Ok(())
    }
}

/// How much longer the preflight's second handshake may take than its first.
const PREFLIGHT_RETRY_FACTOR: u32 = 3;

/// Why one preflight handshake did not finish.
enum Preflight {
    TimedOut,
    Failed(String),
}

/// A duration in seconds as people write it: `5`, `0.2`.
fn seconds(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{s:.0}")
    } else {
        format!("{}", (s * 1000.0).round() / 1000.0)
    }
}

/// A failed handshake in words a user can act on: what rustls refused, and the option that
/// fixes it (a CA file, the certificate's name, or `--insecure` for a test certificate).
pub fn explain(e: &io::Error) -> String {
    match tls_error(e) {
        Some(
            tls @ rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            ),
        ) => format!(
            "{tls}. Name the server as its certificate does with tls.server_name, or skip \
                         verification of a test certificate with tls.insecure (caplab load --insecure)"
        ),
        Some(tls) if is_certificate_error(tls) => format!(
            "{tls}. To trust a private CA give tls.ca_file (caplab load --cacert FILE); \
                         to skip verification of a test certificate, tls.insecure (--insecure)"
        ),
        Some(tls) => format!("{tls} (does the server speak TLS on this port?)"),
        None if e.kind() == io::ErrorKind::UnexpectedEof => {
            "the server closed the connection (does it speak TLS on this port?)".to_string()
        }
        None => e.to_string(),
    }
}

/// The rustls error inside an I/O error, if the TLS layer raised it.
pub fn tls_error(e: &io::Error) -> Option<&rustls::Error> {
    e.get_ref().and_then(|inner| inner.downcast_ref::<rustls::Error>())
}

/// Whether rustls refused the server's certificate (untrusted, expired, wrong name).
pub fn is_certificate_error(e: &rustls::Error) -> bool {
    matches!(e, rustls::Error::InvalidCertificate(_) | rustls::Error::NoCertificatesPresented)
}

/// The run's client configuration: the Mozilla roots (or only the CAs of `ca_file`), or no
/// verification at all with `insecure`. Each call makes a new session cache (none without `resume`).
pub fn client_config(options: &TlsOptions) -> Result<Arc<ClientConfig>, PlanError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| PlanError { field: "tls".into(), message: e.to_string() })?;
    let mut config = if options.insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAnyCertificate(provider)))
            .with_no_client_auth()
    } else {
        let mut roots = RootCertStore::empty();
        match &options.ca_file {
            Some(path) => {
                let field = || "tls.ca_file".to_string();
                let certs = CertificateDer::pem_file_iter(path)
                    .map_err(|e| PlanError { field: field(), message: format!("{path}: {e}") })?
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| PlanError { field: field(), message: format!("{path}: {e}") })?;
                let (added, _) = roots.add_parsable_certificates(certs);
                if added == 0 {
                    return Err(PlanError {
                        field: field(),
                        message: format!("{path}: no PEM certificate in it"),
                    });
                }
            }
            None => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
        }
        builder.with_root_certificates(roots).with_no_client_auth()
    };
    if !options.resume {
        config.resumption = rustls::client::Resumption::disabled();
    }
    Ok(Arc::new(config))
}

/// `insecure`: any certificate is taken (a test server's self-signed one), while the handshake's
/// signatures are still checked so that the connection really is TLS.
#[derive(Debug)]
struct AcceptAnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AcceptAnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    fn insecure() -> TlsOptions {
        TlsOptions { insecure: true, ..TlsOptions::default() }
    }

    #[test]
    fn preflight_against_a_silent_server_says_it_timed_out_after_one_retry() {
        // Accepts (the kernel completes the TCP handshake) and never answers the ClientHello.
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let options = insecure();
        let client = TlsClient::new(client_config(&options).unwrap(), &options, "localhost").unwrap();
        let why = client.preflight(&options, addr, Duration::from_millis(100)).unwrap_err();
        assert_eq!(
            why,
            format!(
                "TLS handshake with {addr} timed out after 0.3 s (and after 0.1 s on a first try): \
                 is the server overloaded, or not speaking TLS on this port?"
            )
        );
        assert!(!why.contains("os error"), "{why}");
        drop(listener);
    }

    #[test]
    fn preflight_against_a_server_that_hangs_up_says_so_without_retrying() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let closer = std::thread::spawn(move || {
            let (sock, _) = listener.accept().unwrap();
            drop(sock);
        });
        let options = insecure();
        let client = TlsClient::new(client_config(&options).unwrap(), &options, "localhost").unwrap();
        let why = client.preflight(&options, addr, Duration::from_secs(5)).unwrap_err();
        closer.join().unwrap();
        assert!(why.starts_with(&format!("TLS handshake with {addr} failed: ")), "{why}");
        assert!(!why.contains("timed out"), "{why}");
    }
}

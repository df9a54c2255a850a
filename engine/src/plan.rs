//! The run plan as received from Python: plain data, deserialised from JSON and validated.
//!
//! Errors name the field (`load.rate: must be > 0`) so a caller can point at what is wrong.

use serde::Deserialize;
use std::time::Duration;

/// Everything the engine needs to run one trial.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    pub target: Target,
    /// More targets of the same protocol (many databases, many mail hosts): users and arrivals
    /// are spread over `target` and these round-robin, and statistics are kept per target too.
    #[serde(default)]
    pub extra_targets: Vec<Target>,
    #[serde(default = "default_requests")]
    pub requests: Vec<RequestClass>,
    pub load: Load,
    /// Measured window length, after warm-up.
    pub duration_s: f64,
    #[serde(default)]
    pub warmup_s: f64,
    /// Stop after this many requests were sent in the measured window (optional second stop condition).
    #[serde(default)]
    pub max_requests: Option<u64>,
    /// Open model: most requests outstanding at once (one connection each). Default: the peak
    /// rate × 1 s (at least 100), within the descriptors the process may open.
    #[serde(default)]
    pub max_in_flight: Option<u32>,
    #[serde(default = "default_interval")]
    pub interval_s: f64,
    /// Worker threads; default: the CPUs this process may run on.
    #[serde(default)]
    pub threads: Option<u32>,
    #[serde(default = "default_timeout")]
    pub timeout_s: f64,
    /// Open model: a send later than this (p99) against its schedule marks the generator saturated.
    #[serde(default = "default_lateness")]
    pub saturation_lateness_ms: f64,
    /// Open model: sends due within this many µs of one another share one wake-up (the later ones
    /// leave early). Default: 0 (every send exact) below 4,000/s a thread; above, 20 arrivals'
    /// time within 250–1,000 µs (1 ms up to 20,000/s, 250 µs from 80,000/s).
    #[serde(default)]
    pub send_slack_us: Option<f64>,
    /// Closed model: how long a user whose connection attempt failed waits before retrying.
    #[serde(default = "default_reconnect_backoff")]
    pub reconnect_backoff_ms: f64,
    /// Seed for Poisson arrivals and the request mix, so runs can be repeated exactly.
    #[serde(default)]
    pub seed: u64,
    /// How `https://` and `tls://` targets verify the server (default: against the Mozilla roots).
    #[serde(default)]
    pub tls: Option<TlsOptions>,
    /// SMTP and IMAP targets: who logs in, who receives, what a message and a read are.
    #[serde(default)]
    pub mail: Option<MailOptions>,
}

/// A password as the plan carries it: never shown by `Debug`, so never in a log or an error.
#[derive(Clone, Deserialize, PartialEq, Eq)]
#[serde(transparent)]
pub struct Secret(pub String);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(***)")
    }
}

/// The mail drivers' settings (`smtp://`, `smtps://`, `imap://`, `imaps://`). A request's user is
/// `1 + seq % mailboxes`: `{user}` in `user` and `rcpt` (and in a message body) becomes it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MailOptions {
    /// The login name of user `{user}`.
    #[serde(default = "default_mail_user")]
    pub user: String,
    /// How many users (mailboxes) requests cycle over.
    #[serde(default = "default_mailboxes")]
    pub mailboxes: u32,
    /// SMTP: the recipient of user `{user}`'s messages.
    #[serde(default = "default_rcpt")]
    pub rcpt: String,
    /// SMTP: the envelope sender (`MAIL FROM`).
    #[serde(default = "default_sender")]
    pub sender: String,
    /// One password for every user.
    #[serde(default)]
    pub password: Option<Secret>,
    /// `user:password` lines, one per login name (the mail system's `DIR/passwords`).
    #[serde(default)]
    pub password_file: Option<String>,
    /// Plain `smtp://`/`imap://`: upgrade with STARTTLS (true: required; false: never). Default:
    /// when the plan has TLS options and the server offers it.
    #[serde(default)]
    pub starttls: Option<bool>,
    /// SMTP: pad each message (headers and body) to this many bytes.
    #[serde(default)]
    pub message_bytes: Option<u32>,
    /// IMAP: fetch the newest this many messages (0: every message, `1:*`).
    #[serde(default = "default_fetch_last")]
    pub fetch_last: u32,
    /// IMAP: the FETCH items.
    #[serde(default = "default_fetch_items")]
    pub fetch_items: String,
    /// Keep the session for the next request (SMTP: the next MAIL FROM; IMAP: SELECT again, as a
    /// polling client does); false ends each with QUIT or LOGOUT, so each pays connect and login.
    #[serde(default = "default_reuse")]
    pub reuse: bool,
}

impl Default for MailOptions {
    fn default() -> MailOptions {
        MailOptions {
            user: default_mail_user(),
            mailboxes: default_mailboxes(),
            rcpt: default_rcpt(),
            sender: default_sender(),
            password: None,
            password_file: None,
            starttls: None,
            message_bytes: None,
            fetch_last: default_fetch_last(),
            fetch_items: default_fetch_items(),
            reuse: default_reuse(),
        }
    }
}

fn default_mail_user() -> String {
    "user{user}".into()
}
fn default_mailboxes() -> u32 {
    1
}
fn default_rcpt() -> String {
    "user{user}@caplab.test".into()
}
fn default_sender() -> String {
    "caplab@caplab.test".into()
}
fn default_fetch_last() -> u32 {
    10
}
fn default_fetch_items() -> String {
    "(FLAGS BODY.PEEK[])".into()
}
fn default_reuse() -> bool {
    true
}

/// TLS settings for every target of a plan.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlsOptions {
    /// Take any certificate (a test server's self-signed one) without verifying it.
    #[serde(default)]
    pub insecure: bool,
    /// Trust only the CA certificates in this PEM file instead of the Mozilla roots.
    #[serde(default)]
    pub ca_file: Option<String>,
    /// The name the certificate must carry (and SNI), when the URL names the server otherwise
    /// (an IP address, a load balancer's alias).
    #[serde(default)]
    pub server_name: Option<String>,
    /// Offer sessions the server gave earlier, so new connections resume (the default, as
    /// browsers do); false makes every handshake a full one, to measure what that costs.
    #[serde(default = "default_resume")]
    pub resume: bool,
}

impl Default for TlsOptions {
    fn default() -> TlsOptions {
        TlsOptions { insecure: false, ca_file: None, server_name: None, resume: true }
    }
}

fn default_resume() -> bool {
    true
}

/// Where requests go and how they are framed on the wire.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Target {
    /// `http://host:port/path`, `https://…`, `tcp://host:port`, `tls://host:port` (framed TCP in
    /// TLS) or a libpq URL `postgresql://user@host:port/db` (several hosts allowed, with
    /// `target_session_attrs`).
    pub url: String,
    /// TCP (`tcp://`, `tls://`) only: `line`, `u32` or `mllp`.
    #[serde(default)]
    pub framing: Option<Framing>,
    /// PostgreSQL only: the password, kept out of the URL so that the URL may be shown.
    #[serde(default)]
    pub password: Option<String>,
    /// PostgreSQL only: the `:scale` of pgbench scripts (pgbench's scale factor).
    #[serde(default)]
    pub scale: Option<i64>,
}

/// Whether a target URL names a PostgreSQL server (libpq's two spellings).
pub fn is_postgres(url: &str) -> bool {
    url.starts_with("postgresql://") || url.starts_with("postgres://")
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Framing {
    Line,
    U32,
    Mllp,
}

/// One kind of request in the mix; statistics are kept per class.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestClass {
    #[serde(default = "default_class_name")]
    pub name: String,
    #[serde(default = "default_weight")]
    pub weight: f64,
    #[serde(default = "default_method")]
    pub method: String,
    /// HTTP path and query; default: the target URL's path.
    #[serde(default)]
    pub path: Option<String>,
    #[serde(default)]
    pub headers: Vec<(String, String)>,
    /// Request body (HTTP) or payload (TCP); `{seq}` is replaced by a sequence number when
    /// `template` is true.
    #[serde(default)]
    pub body: String,
    #[serde(default)]
    pub template: bool,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "model", rename_all = "lowercase", deny_unknown_fields)]
pub enum Load {
    /// Arrival rate: requests are sent on a schedule whatever the responses do.
    Open {
        #[serde(default)]
        arrivals: Arrivals,
        /// The rate profile over the measured window; warm-up runs at the first segment's start rate.
        profile: Vec<Segment>,
    },
    /// A fixed population of users, each sending, waiting for the reply, then thinking.
    Closed {
        users: u32,
        #[serde(default)]
        think: Think,
        /// Users open their sessions over the first `logon_s` seconds of the run: each user's
        /// first request falls at a uniform time in it, its later ones after its think times. With
        /// sessions kept (a mail login, a TLS connection), the measured window then sees sessions
        /// in use instead of one user in three still logging on. 0: each user first waits a think
        /// time (the population's steady state, for requests that need no session).
        #[serde(default)]
        logon_s: f64,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Arrivals {
    #[default]
    Constant,
    Poisson,
}

/// A stretch of the rate profile: the rate moves linearly from `rate_start` to `rate_end`.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Segment {
    pub duration_s: f64,
    pub rate_start: f64,
    pub rate_end: f64,
}

#[derive(Debug, Clone, Copy, Deserialize, Default)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum Think {
    #[default]
    None,
    Constant {
        mean_s: f64,
    },
    Exponential {
        mean_s: f64,
    },
}

fn default_requests() -> Vec<RequestClass> {
    vec![RequestClass {
        name: default_class_name(),
        weight: 1.0,
        method: default_method(),
        path: None,
        headers: Vec::new(),
        body: String::new(),
        template: false,
    }]
}
fn default_class_name() -> String {
    "default".into()
}
fn default_weight() -> f64 {
    1.0
}
fn default_method() -> String {
    "GET".into()
}
fn default_interval() -> f64 {
    1.0
}
fn default_timeout() -> f64 {
    30.0
}
fn default_reconnect_backoff() -> f64 {
    10.0
}
fn default_lateness() -> f64 {
    // On a shared two-core machine a healthy generator sees single sends a few ms late; falling
    // behind shows as tens or thousands of ms.
    20.0
}

/// A plan error: which field, and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanError {
    pub field: String,
    pub message: String,
}

impl std::fmt::Display for PlanError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.field.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "{}: {}", self.field, self.message)
        }
    }
}

impl std::error::Error for PlanError {}

fn err(field: impl Into<String>, message: impl Into<String>) -> PlanError {
    PlanError { field: field.into(), message: message.into() }
}

fn positive(field: &str, v: f64) -> Result<(), PlanError> {
    if v.is_finite() && v > 0.0 {
        Ok(())
    } else {
        Err(err(field, format!("must be > 0 (got {v})")))
    }
}

fn non_negative(field: &str, v: f64) -> Result<(), PlanError> {
    if v.is_finite() && v >= 0.0 {
        Ok(())
    } else {
        Err(err(field, format!("must be >= 0 (got {v})")))
    }
}

impl Plan {
    /// Parses and validates a plan from JSON.
    pub fn from_json(text: &str) -> Result<Plan, PlanError> {
        let de = &mut serde_json::Deserializer::from_str(text);
        let plan: Plan = serde_path_to_error::deserialize(de).map_err(|e| {
            let path = e.path().to_string();
            let field = if path == "." { String::new() } else { path };
            err(field, e.into_inner().to_string())
        })?;
        plan.validate()?;
        Ok(plan)
    }

    pub fn validate(&self) -> Result<(), PlanError> {
        positive("duration_s", self.duration_s)?;
        non_negative("warmup_s", self.warmup_s)?;
        positive("interval_s", self.interval_s)?;
        positive("timeout_s", self.timeout_s)?;
        positive("saturation_lateness_ms", self.saturation_lateness_ms)?;
        if let Some(slack) = self.send_slack_us {
            non_negative("send_slack_us", slack)?;
            if slack > 10_000.0 {
                return Err(err("send_slack_us", "must be <= 10000 (10 ms)"));
            }
        }
        if self.threads == Some(0) {
            return Err(err("threads", "must be >= 1"));
        }
        if self.max_in_flight == Some(0) {
            return Err(err("max_in_flight", "must be >= 1"));
        }
        if self.max_requests == Some(0) {
            return Err(err("max_requests", "must be >= 1"));
        }
        non_negative("reconnect_backoff_ms", self.reconnect_backoff_ms)?;
        if self.reconnect_backoff_ms > 60_000.0 {
            return Err(err("reconnect_backoff_ms", "must be <= 60000 (one minute)"));
        }
        self.target.validate("target")?;
        self.validate_tls()?;
        self.validate_mail()?;
        let protocol = protocol_of(&self.target.url);
        for (i, t) in self.extra_targets.iter().enumerate() {
            let field = format!("extra_targets[{i}]");
            t.validate(&field)?;
            if protocol_of(&t.url) != protocol {
                return Err(err(
                    format!("{field}.url"),
                    format!("must use the same protocol as target.url ({protocol}://)"),
                ));
            }
        }
        if self.requests.is_empty() {
            return Err(err("requests", "needs at least one request class"));
        }
        for (i, class) in self.requests.iter().enumerate() {
            positive(&format!("requests[{i}].weight"), class.weight)?;
            if class.method.is_empty() || !class.method.bytes().all(|b| b.is_ascii_alphabetic()) {
                return Err(err(format!("requests[{i}].method"), "must be an HTTP method such as GET"));
            }
            for (k, _) in &class.headers {
                if k.is_empty() || k.bytes().any(|b| b == b':' || b.is_ascii_whitespace()) {
                    return Err(err(format!("requests[{i}].headers"), format!("bad header name {k:?}")));
                }
            }
        }
        match &self.load {
            Load::Open { profile, .. } => {
                if profile.is_empty() {
                    return Err(err("load.profile", "needs at least one segment"));
                }
                for (i, s) in profile.iter().enumerate() {
                    positive(&format!("load.profile[{i}].duration_s"), s.duration_s)?;
                    non_negative(&format!("load.profile[{i}].rate_start"), s.rate_start)?;
                    non_negative(&format!("load.profile[{i}].rate_end"), s.rate_end)?;
                }
                if profile.iter().all(|s| s.rate_start == 0.0 && s.rate_end == 0.0) {
                    return Err(err("load.profile", "rate must be > 0 somewhere"));
                }
            }
            Load::Closed { users, think, logon_s } => {
                non_negative("load.logon_s", *logon_s)?;
                if *logon_s > self.warmup_s {
                    return Err(err(
                        "load.logon_s",
                        format!(
                            "{logon_s} s of logons outlast the {} s warm-up: they would be measured",
                            self.warmup_s
                        ),
                    ));
                }
                if *users == 0 {
                    return Err(err("load.users", "must be >= 1"));
                }
                let targets = self.target_count();
                if (*users as usize) < targets {
                    return Err(err(
                        "load.users",
                        format!("{users} users for {targets} targets would leave some without load: give at least one per target"),
                    ));
                }
                match think {
                    Think::None => {}
                    Think::Constant { mean_s } | Think::Exponential { mean_s } => {
                        non_negative("load.think.mean_s", *mean_s)?
                    }
                }
            }
        }
        Ok(())
    }

    /// TLS options apply to TLS targets only, and verify one way.
    fn validate_tls(&self) -> Result<(), PlanError> {
        let Some(tls) = &self.tls else { return Ok(()) };
        if !uses_tls(&self.target.url) && !is_mail(&self.target.url) {
            return Err(err("tls", "applies to https://, tls://, smtp(s):// and imap(s):// targets"));
        }
        if tls.insecure && tls.ca_file.is_some() {
            return Err(err(
                "tls.ca_file",
                "give ca_file (verify against it) or insecure (verify nothing), not both",
            ));
        }
        if tls.ca_file.as_deref() == Some("") {
            return Err(err("tls.ca_file", "must name a PEM file"));
        }
        if tls.server_name.as_deref() == Some("") {
            return Err(err("tls.server_name", "must not be empty"));
        }
        Ok(())
    }

    /// Mail options apply to mail targets only; IMAP logs in, so it needs a password; nothing a
    /// driver puts on a command line may break it (a line break, `<>` in an address).
    fn validate_mail(&self) -> Result<(), PlanError> {
        let scheme = Url::parse(&self.target.url).ok().map(|u| u.scheme);
        let Some(scheme) = scheme.filter(|s| s.is_mail()) else {
            return match self.mail {
                Some(_) => Err(err("mail", "applies to smtp://, smtps://, imap:// and imaps:// targets")),
                None => Ok(()),
            };
        };
        let defaults = MailOptions::default();
        let m = self.mail.as_ref().unwrap_or(&defaults);
        if m.mailboxes == 0 {
            return Err(err("mail.mailboxes", "must be >= 1"));
        }
        if m.password.is_some() && m.password_file.is_some() {
            return Err(err("mail.password_file", "give password or password_file, not both"));
        }
        if m.password_file.as_deref() == Some("") {
            return Err(err("mail.password_file", "must name a file"));
        }
        if scheme.is_imap() && m.password.is_none() && m.password_file.is_none() {
            return Err(err("mail.password", "imap:// targets log in: give password or password_file"));
        }
        if m.starttls == Some(true) && scheme.is_tls() {
            return Err(err(
                "mail.starttls",
                "smtps:// and imaps:// are TLS from the first byte; STARTTLS is for smtp:// and imap://",
            ));
        }
        let line_safe = |field: &str, v: &str, also: &[u8]| {
            if v.is_empty() || v.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0 || also.contains(&b)) {
                Err(err(format!("mail.{field}"), format!("{v:?} must be one line, without {also:?}")))
            } else {
                Ok(())
            }
        };
        line_safe("user", &m.user, b" \"")?;
        line_safe("rcpt", &m.rcpt, b" <>")?;
        line_safe("sender", &m.sender, b" <>")?;
        line_safe("fetch_items", &m.fetch_items, b"")?;
        if let Some(Secret(p)) = &m.password {
            if p.is_empty() || p.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
                return Err(err("mail.password", "must be one line, not empty"));
            }
        }
        let action = if scheme.is_smtp() { "SEND" } else { "READ" };
        for (i, class) in self.requests.iter().enumerate() {
            if !class.method.eq_ignore_ascii_case(action) {
                return Err(err(
                    format!("requests[{i}].method"),
                    format!("{} targets' action is {action} (got {:?})", scheme.name(), class.method),
                ));
            }
        }
        Ok(())
    }

    /// Plain `smtp://` and `imap://`: whether connections upgrade with STARTTLS (the plan's
    /// `mail.starttls`, else whenever it has TLS options).
    pub fn starttls(&self) -> bool {
        let plain_mail = Url::parse(&self.target.url).is_ok_and(|u| u.scheme.is_mail() && !u.scheme.is_tls());
        plain_mail && self.mail.as_ref().and_then(|m| m.starttls).unwrap_or(self.tls.is_some())
    }

    /// Whether connections are TLS, from the first byte or after STARTTLS.
    pub fn speaks_tls(&self) -> bool {
        uses_tls(&self.target.url) || self.starttls()
    }

    /// Every target, `target` first: a target's number is its place here.
    pub fn targets(&self) -> impl Iterator<Item = &Target> {
        std::iter::once(&self.target).chain(&self.extra_targets)
    }

    pub fn target_count(&self) -> usize {
        1 + self.extra_targets.len()
    }

    pub fn reconnect_backoff(&self) -> Duration {
        Duration::from_secs_f64(self.reconnect_backoff_ms / 1000.0)
    }

    pub fn duration(&self) -> Duration {
        Duration::from_secs_f64(self.duration_s)
    }

    pub fn warmup(&self) -> Duration {
        Duration::from_secs_f64(self.warmup_s)
    }

    /// The highest rate anywhere in the profile (open model): it sizes the default in-flight cap
    /// and decides whether sends share wake-ups. (The warm-up runs at the first segment's start
    /// rate instead; see `RateProfile::new`.)
    pub fn peak_rate(&self) -> Option<f64> {
        match &self.load {
            Load::Open { profile, .. } => {
                Some(profile.iter().map(|s| s.rate_start.max(s.rate_end)).fold(0.0, f64::max))
            }
            Load::Closed { .. } => None,
        }
    }

    /// Mean offered rate over the measured window (open model).
    pub fn offered_rate(&self) -> Option<f64> {
        match &self.load {
            Load::Open { profile, .. } => {
                let total: f64 = profile.iter().map(|s| s.duration_s).sum();
                let requests: f64 =
                    profile.iter().map(|s| s.duration_s * (s.rate_start + s.rate_end) / 2.0).sum();
                Some(requests / total)
            }
            Load::Closed { .. } => None,
        }
    }
}

/// Whether a target URL's connections are TLS from the first byte (`https://`, `tls://`,
/// `smtps://`, `imaps://`).
pub fn uses_tls(url: &str) -> bool {
    ["https://", "tls://", "smtps://", "imaps://"].iter().any(|p| url.starts_with(p))
}

/// Whether a target URL names a mail server (`smtp://`, `smtps://`, `imap://`, `imaps://`).
pub fn is_mail(url: &str) -> bool {
    ["smtp://", "smtps://", "imap://", "imaps://"].iter().any(|p| url.starts_with(p))
}

/// The protocol a target URL speaks, as its scheme (libpq's two spellings are one).
fn protocol_of(url: &str) -> &str {
    if is_postgres(url) {
        return "postgresql";
    }
    url.split_once("://").map_or("", |(scheme, _)| scheme)
}

impl Target {
    /// Checks one target; `field` is where it sits in the plan (`target`, `extra_targets[3]`).
    fn validate(&self, field: &str) -> Result<(), PlanError> {
        let framing = format!("{field}.framing");
        if is_postgres(&self.url) {
            return match self.framing {
                Some(_) => Err(err(framing, "only applies to tcp:// targets")),
                None => Ok(()),
            };
        }
        if self.password.is_some() || self.scale.is_some() {
            return Err(err(
                format!("{field}.password"),
                "password and scale apply to postgresql:// targets",
            ));
        }
        let url = Url::parse(&self.url).map_err(|m| err(format!("{field}.url"), m))?;
        match (url.scheme.is_tcp(), self.framing) {
            (false, Some(_)) => Err(err(framing, "only applies to tcp:// and tls:// targets")),
            (true, None) => Err(err(framing, "tcp:// and tls:// targets need a framing: line, u32 or mllp")),
            _ => Ok(()),
        }
    }

    /// The target as it may be shown and stored: its URL without any password in it (a
    /// PostgreSQL target's password is kept apart already).
    pub fn label(&self) -> String {
        let Some((scheme, rest)) = self.url.split_once("://") else { return self.url.clone() };
        let authority_end = rest.find('/').unwrap_or(rest.len());
        match rest[..authority_end].rfind('@') {
            Some(at) => {
                let user = rest[..at].split_once(':').map_or(&rest[..at], |(user, _)| user);
                format!("{scheme}://{user}@{}", &rest[at + 1..])
            }
            None => self.url.clone(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    Http,
    Https,
    Tcp,
    /// Framed TCP inside TLS from the first byte (implicit TLS).
    Tls,
    Smtp,
    /// SMTP inside TLS from the first byte (port 465).
    Smtps,
    Imap,
    Imaps,
}

impl Scheme {
    /// Framed request/reply (`tcp://`, `tls://`) rather than HTTP.
    pub fn is_tcp(self) -> bool {
        matches!(self, Scheme::Tcp | Scheme::Tls)
    }

    pub fn is_tls(self) -> bool {
        matches!(self, Scheme::Https | Scheme::Tls | Scheme::Smtps | Scheme::Imaps)
    }

    pub fn is_mail(self) -> bool {
        self.is_smtp() || self.is_imap()
    }

    pub fn is_smtp(self) -> bool {
        matches!(self, Scheme::Smtp | Scheme::Smtps)
    }

    pub fn is_imap(self) -> bool {
        matches!(self, Scheme::Imap | Scheme::Imaps)
    }

    /// The scheme as written in URLs, with its `://`.
    pub fn name(self) -> &'static str {
        match self {
            Scheme::Http => "http://",
            Scheme::Https => "https://",
            Scheme::Tcp => "tcp://",
            Scheme::Tls => "tls://",
            Scheme::Smtp => "smtp://",
            Scheme::Smtps => "smtps://",
            Scheme::Imap => "imap://",
            Scheme::Imaps => "imaps://",
        }
    }
}

/// The parts of a target URL the engine uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Url {
    pub scheme: Scheme,
    /// `host:port` as written (for the Host header).
    pub authority: String,
    pub host: String,
    pub port: u16,
    pub path: String,
}

impl Url {
    pub fn parse(text: &str) -> Result<Url, String> {
        let all = [
            Scheme::Http,
            Scheme::Https,
            Scheme::Tcp,
            Scheme::Tls,
            Scheme::Smtp,
            Scheme::Smtps,
            Scheme::Imap,
            Scheme::Imaps,
        ];
        let Some((scheme, rest)) = all.iter().find_map(|s| text.strip_prefix(s.name()).map(|r| (*s, r)))
        else {
            return Err(format!(
                "{text:?} is not an http://, https://, tcp://, tls://, smtp://, smtps://, imap:// or imaps:// URL"
            ));
        };
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        if authority.is_empty() {
            return Err(format!("{text:?} has no host"));
        }
        let (host, port) = if let Some(stripped) = authority.strip_prefix('[') {
            let end = stripped.find(']').ok_or_else(|| format!("{text:?}: unclosed [ in host"))?;
            let host = &stripped[..end];
            let port = stripped[end + 1..].strip_prefix(':');
            (host.to_string(), port)
        } else {
            match authority.rsplit_once(':') {
                Some((h, p)) => (h.to_string(), Some(p)),
                None => (authority.to_string(), None),
            }
        };
        let port = match (port, scheme) {
            (Some(p), _) => p.parse::<u16>().map_err(|_| format!("{text:?}: bad port {p:?}"))?,
            (None, Scheme::Http) => 80,
            (None, Scheme::Https) => 443,
            (None, Scheme::Smtp) => 25,
            (None, Scheme::Smtps) => 465,
            (None, Scheme::Imap) => 143,
            (None, Scheme::Imaps) => 993,
            (None, Scheme::Tcp | Scheme::Tls) => {
                return Err(format!("{text:?}: tcp:// and tls:// need a port"))
            }
        };
        Ok(Url { scheme, authority: authority.to_string(), host, port, path: path.to_string() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(load: &str) -> String {
        format!(r#"{{"target": {{"url": "http://127.0.0.1:8080/x"}}, "load": {load}, "duration_s": 1}}"#)
    }

    #[test]
    fn parses_open_and_closed() {
        let p = Plan::from_json(&plan(
            r#"{"model": "open", "profile": [{"duration_s": 1, "rate_start": 10, "rate_end": 30}]}"#,
        ))
        .unwrap();
        assert_eq!(p.offered_rate(), Some(20.0));
        let p = Plan::from_json(&plan(
            r#"{"model": "closed", "users": 3, "think": {"kind": "exponential", "mean_s": 0.1}}"#,
        ))
        .unwrap();
        assert!(matches!(p.load, Load::Closed { users: 3, .. }));
    }

    #[test]
    fn errors_name_the_field() {
        let e = Plan::from_json(&plan(r#"{"model": "closed", "users": 0}"#)).unwrap_err();
        assert_eq!(e.field, "load.users");
        let e = Plan::from_json(&plan(r#"{"model": "closed", "users": 1, "thinks": 1}"#)).unwrap_err();
        assert!(e.to_string().contains("thinks"), "{e}");
        // Logons longer than the warm-up would be measured.
        let e = Plan::from_json(&plan(r#"{"model": "closed", "users": 1, "logon_s": 2}"#)).unwrap_err();
        assert_eq!(e.field, "load.logon_s");
        assert!(e.message.contains("outlast the 0 s warm-up"), "{e}");
        let e = Plan::from_json(
            r#"{"target": {"url": "tcp://127.0.0.1:9"}, "load": {"model": "closed", "users": 1}, "duration_s": 1}"#,
        )
        .unwrap_err();
        assert_eq!(e.field, "target.framing");
    }

    #[test]
    fn extra_targets_are_checked_like_the_first_and_named_by_their_place() {
        let with = |extra: &str| {
            Plan::from_json(&format!(
                r#"{{"target": {{"url": "http://127.0.0.1:8080/x"}}, "extra_targets": {extra},
                    "load": {{"model": "closed", "users": 3}}, "duration_s": 1}}"#
            ))
        };
        let p = with(r#"[{"url": "http://127.0.0.1:8081/"}, {"url": "http://127.0.0.1:8082/"}]"#).unwrap();
        assert_eq!(p.target_count(), 3);
        assert_eq!(p.reconnect_backoff(), Duration::from_millis(10));
        let e = with(r#"[{"url": "http://127.0.0.1:8081/"}, {"url": "http://h:x/"}]"#).unwrap_err();
        assert_eq!(e.field, "extra_targets[1].url");
        let e = with(r#"[{"url": "tcp://127.0.0.1:9", "framing": "line"}]"#).unwrap_err();
        assert_eq!(e.field, "extra_targets[0].url");
        assert!(e.message.contains("same protocol"), "{e}");
        let e = with(r#"[{"url": "http://127.0.0.1:8081/", "framing": "line"}]"#).unwrap_err();
        assert_eq!(e.field, "extra_targets[0].framing");
        let three = r#"[{"url": "http://127.0.0.1:8081/"}, {"url": "http://127.0.0.1:8082/"}, {"url": "http://127.0.0.1:8083/"}]"#;
        let e = with(three).unwrap_err();
        assert_eq!(e.field, "load.users", "4 targets, 3 users: one target would get none");
    }

    #[test]
    fn reconnect_backoff_is_checked() {
        let e = Plan::from_json(
            r#"{"target": {"url": "http://127.0.0.1:8080/x"}, "load": {"model": "closed", "users": 1},
                "duration_s": 1, "reconnect_backoff_ms": -1}"#,
        )
        .unwrap_err();
        assert_eq!(e.field, "reconnect_backoff_ms");
    }

    #[test]
    fn a_label_never_holds_a_password() {
        let label =
            |url: &str| Target { url: url.into(), framing: None, password: None, scale: None }.label();
        assert_eq!(label("postgresql://bench@127.0.0.1:5432/ag_3"), "postgresql://bench@127.0.0.1:5432/ag_3");
        assert_eq!(label("postgresql://bench:secret@h:5432/db"), "postgresql://bench@h:5432/db");
        assert_eq!(label("http://u:p@h:80/a@b"), "http://u@h:80/a@b");
        assert_eq!(label("tcp://127.0.0.1:9"), "tcp://127.0.0.1:9");
    }

    #[test]
    fn parses_urls() {
        let u = Url::parse("http://localhost:8080/a?b=1").unwrap();
        assert_eq!((u.host.as_str(), u.port, u.path.as_str()), ("localhost", 8080, "/a?b=1"));
        let u = Url::parse("tcp://[::1]:2575").unwrap();
        assert_eq!((u.host.as_str(), u.port, u.scheme), ("::1", 2575, Scheme::Tcp));
        assert_eq!(Url::parse("http://h").unwrap().port, 80);
        assert!(Url::parse("tcp://h").is_err());
        assert!(Url::parse("ftp://h").is_err());
        let u = Url::parse("https://example.org/a").unwrap();
        assert_eq!((u.scheme, u.port, u.authority.as_str()), (Scheme::Https, 443, "example.org"));
        assert_eq!(Url::parse("tls://h:993").unwrap().scheme, Scheme::Tls);
        assert!(Url::parse("tls://h").is_err());
    }

    #[test]
    fn mail_options_are_checked_and_passwords_never_shown() {
        let with = |url: &str, method: &str, extra: &str| {
            Plan::from_json(&format!(
                r#"{{"target": {{"url": "{url}"}}, "requests": [{{"method": "{method}"}}], {extra}
                    "load": {{"model": "closed", "users": 1}}, "duration_s": 1}}"#
            ))
        };
        let p = with("smtp://127.0.0.1:2525", "SEND", r#""tls": {"insecure": true},"#).unwrap();
        assert!(p.starttls() && p.speaks_tls());
        let p = with("smtp://127.0.0.1:2525", "SEND", r#""mail": {"starttls": false}, "tls": {},"#).unwrap();
        assert!(!p.starttls());
        assert!(!with("smtp://h:25", "SEND", "").unwrap().speaks_tls());
        assert!(with("smtps://h", "SEND", "").unwrap().speaks_tls());
        assert_eq!(with("smtp://h:25", "GET", "").unwrap_err().field, "requests[0].method");
        assert_eq!(with("imap://h:143", "READ", "").unwrap_err().field, "mail.password");
        let p = with("imaps://h", "READ", r#""mail": {"password": "s3cret", "mailboxes": 5},"#).unwrap();
        assert!(!format!("{p:?}").contains("s3cret"));
        let e = with("imaps://h", "READ", r#""mail": {"password": "x", "starttls": true},"#).unwrap_err();
        assert_eq!(e.field, "mail.starttls");
        let e = with("smtp://h:25", "SEND", r#""mail": {"rcpt": "a@b>\r\nRSET"},"#).unwrap_err();
        assert_eq!(e.field, "mail.rcpt");
        assert_eq!(with("http://h/", "GET", r#""mail": {},"#).unwrap_err().field, "mail");
        let port = |u: &str| Url::parse(u).unwrap().port;
        assert_eq!(
            (port("smtp://h"), port("smtps://h"), port("imap://h"), port("imaps://h")),
            (25, 465, 143, 993)
        );
    }

    #[test]
    fn tls_options_are_checked() {
        let with = |url: &str, tls: &str| {
            Plan::from_json(&format!(
                r#"{{"target": {{"url": "{url}"}}, "tls": {tls}, "load": {{"model": "closed", "users": 1}}, "duration_s": 1}}"#
            ))
        };
        assert!(with("https://127.0.0.1:8443/", r#"{"insecure": true}"#).is_ok());
        assert_eq!(with("http://127.0.0.1:8080/", r#"{"insecure": true}"#).unwrap_err().field, "tls");
        let e = with("https://h/", r#"{"insecure": true, "ca_file": "ca.pem"}"#).unwrap_err();
        assert_eq!(e.field, "tls.ca_file");
        assert_eq!(with("https://h/", r#"{"server_name": ""}"#).unwrap_err().field, "tls.server_name");
        assert!(with("https://h/", r#"{"verify": false}"#).unwrap_err().to_string().contains("verify"));
    }
}

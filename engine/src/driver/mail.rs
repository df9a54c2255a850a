//! What the SMTP and IMAP drivers share: each request's user (`1 + seq % mailboxes`), login
//! names and passwords (one for all, or a `user:password` file such as the mail system's
//! `DIR/passwords`), the `{user}`/`{seq}` patterns, and the STARTTLS upgrade.
//!
//! Passwords stay inside `Mailboxes`: nothing here formats one into an error or a result.

use super::tls::{Handshake, Stream, TlsClient};
use super::ErrorKind;
use crate::plan::{MailOptions, PlanError, Secret};
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

/// The users requests cycle over, compiled once per run and shared by every thread's drivers.
pub struct Mailboxes {
    logins: Vec<String>,
    /// Each user's password, by user number − 1; empty without credentials.
    passwords: Vec<Secret>,
}

impl Mailboxes {
    pub fn new(options: &MailOptions) -> Result<Arc<Mailboxes>, PlanError> {
        let n = options.mailboxes.max(1);
        let logins: Vec<String> = (1..=n).map(|u| render(&options.user, u, 0)).collect();
        let passwords = match (&options.password, &options.password_file) {
            (Some(p), _) => vec![p.clone(); n as usize],
            (None, Some(path)) => {
                let field = || "mail.password_file".to_string();
                let text = std::fs::read_to_string(path)
                    .map_err(|e| PlanError { field: field(), message: format!("{path}: {e}") })?;
                let file = parse_password_file(&text);
                logins
                    .iter()
                    .map(|login| {
                        lookup(&file, login).ok_or_else(|| PlanError {
                            field: field(),
                            message: format!("{path} has no password for {login:?} (mailboxes: {n})"),
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()?
            }
            (None, None) => Vec::new(),
        };
        Ok(Arc::new(Mailboxes { logins, passwords }))
    }

    /// The user a request with sequence number `seq` acts as, from 1.
    pub fn user_of(&self, seq: u64) -> u32 {
        1 + (seq % self.logins.len() as u64) as u32
    }

    pub fn login(&self, user: u32) -> &str {
        &self.logins[user as usize - 1]
    }

    /// The user's password; None when the plan gives no credentials.
    pub fn password(&self, user: u32) -> Option<&str> {
        self.passwords.get(user as usize - 1).map(|s| s.0.as_str())
    }
}

/// `user:password` per line (the first colon splits); blank lines and `#` comments skipped.
fn parse_password_file(text: &str) -> HashMap<String, Secret> {
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .filter_map(|l| l.split_once(':'))
        .map(|(user, password)| {
            (user.trim().to_string(), Secret(password.trim_end_matches('\r').to_string()))
        })
        .collect()
}

/// A login's password: by the whole name, else by its local part (`user1@caplab.test` → `user1`).
fn lookup(file: &HashMap<String, Secret>, login: &str) -> Option<Secret> {
    file.get(login).or_else(|| login.split_once('@').and_then(|(local, _)| file.get(local))).cloned()
}

/// A pattern with `{user}` and `{seq}` replaced.
pub fn render(pattern: &str, user: u32, seq: u64) -> String {
    let mut out = pattern.replace("{user}", &user.to_string());
    if out.contains("{seq}") {
        out = out.replace("{seq}", &seq.to_string());
    }
    out
}

/// STARTTLS: the TLS handshake over a plain connection the server has just agreed to upgrade.
/// On failure the handshake's words (why the certificate was refused) are left in `detail`.
pub async fn upgrade(
    stream: Stream,
    tls: &TlsClient,
    detail: &RefCell<Option<String>>,
) -> Result<(Stream, Handshake), ErrorKind> {
    let Stream::Plain(tcp) = stream else {
        *detail.borrow_mut() = Some("STARTTLS on a connection that is TLS already".into());
        return Err(ErrorKind::Protocol);
    };
    tls.handshake(tcp).await.map_err(|(kind, words)| {
        *detail.borrow_mut() = Some(format!("STARTTLS: {words}"));
        kind
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn users_cycle_and_passwords_come_from_the_file_by_login_or_local_part() {
        let dir = std::env::temp_dir().join(format!("caplab-mail-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("passwords");
        std::fs::write(&file, "user1:one\n\nuser2:tw:o\n# note\n").unwrap();
        let options = MailOptions {
            user: "user{user}@caplab.test".into(),
            mailboxes: 2,
            password_file: Some(file.to_string_lossy().into()),
            ..MailOptions::default()
        };
        let m = Mailboxes::new(&options).unwrap();
        assert_eq!((m.user_of(0), m.user_of(1), m.user_of(2)), (1, 2, 1));
        assert_eq!(m.login(2), "user2@caplab.test");
        assert_eq!((m.password(1), m.password(2)), (Some("one"), Some("tw:o")));
        let e = Mailboxes::new(&MailOptions { mailboxes: 3, ..options }).err().unwrap();
        assert_eq!(e.field, "mail.password_file");
        assert!(e.message.contains("user3@caplab.test") && !e.message.contains("one"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn renders_user_and_seq() {
        assert_eq!(render("user{user}@x/{seq}/{user}", 7, 42), "user7@x/42/7");
    }
}

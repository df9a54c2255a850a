//! Transaction scripts in pgbench's own format, so pgbench's built-in workloads and a user's
//! pgbench script files run unchanged: `\set NAME EXPR` draws a variable per execution, every other
//! line is SQL up to a `;` at the end of a line, and `:NAME` in SQL becomes a bound parameter.
//!
//! Expressions are integers: literals, `:variables`, `+ - * / %`, parentheses, `random(lo, hi)`
//! (uniform) and `random_zipfian(lo, hi, s)` (Zipf with exponent s > 1 over lo..hi, drawn by
//! rejection-inversion, so no table of n values is built). Two variables are always defined:
//! `:scale` (given by the caller, pgbench's scale factor) and `:seq` (the request's sequence
//! number, unique across the run: a ledger of acknowledged transactions can be keyed by it).

use crate::schedule::Rng;
use std::collections::HashMap;

/// A parsed script: variable draws, then statements with their parameters in `$n` order.
#[derive(Debug, Clone, PartialEq)]
pub struct Script {
    pub sets: Vec<(String, Expr)>,
    pub statements: Vec<Statement>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Statement {
    /// The SQL with `:name` replaced by `$1`, `$2`, …
    pub sql: String,
    /// The variable bound to each `$n`, in order.
    pub params: Vec<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    Int(i64),
    Var(String),
    Binary(Box<Expr>, char, Box<Expr>),
    Random(Box<Expr>, Box<Expr>),
    Zipfian(Box<Expr>, Box<Expr>, f64),
}

impl Script {
    pub fn parse(text: &str) -> Result<Script, String> {
        let mut sets = Vec::new();
        let mut statements = Vec::new();
        let mut pending = String::new();
        for (number, raw) in text.lines().enumerate() {
            let line = raw.trim();
            let at = |m: String| format!("line {}: {m}", number + 1);
            if pending.is_empty() && (line.is_empty() || line.starts_with("--")) {
                continue;
            }
            if pending.is_empty() && line.starts_with('\\') {
                let rest = line.strip_prefix("\\set").ok_or_else(|| {
                    at(format!("{line:?}: only \\set is supported among pgbench's meta-commands"))
                })?;
                let mut parts = rest.trim().splitn(2, char::is_whitespace);
                let name = parts.next().unwrap_or_default().to_string();
                if !valid_name(&name) {
                    return Err(at(format!("\\set needs a variable name, got {name:?}")));
                }
                let expr = parse_expr(parts.next().unwrap_or_default()).map_err(at)?;
                sets.push((name, expr));
                continue;
            }
            pending.push_str(raw);
            pending.push('\n');
            if line.ends_with(';') {
                statements.push(bind(pending.trim().trim_end_matches(';')));
                pending.clear();
            }
        }
        if !pending.trim().is_empty() {
            statements.push(bind(pending.trim()));
        }
        if statements.is_empty() {
            return Err("the script has no SQL statement".into());
        }
        let script = Script { sets, statements };
        script.check_variables()?;
        Ok(script)
    }

    /// Every variable used is defined before use (by `\set`, or is `scale` / `seq`).
    fn check_variables(&self) -> Result<(), String> {
        let mut known: Vec<&str> = vec!["scale", "seq"];
        for (name, expr) in &self.sets {
            expr.check(&known)?;
            known.push(name);
        }
        for s in &self.statements {
            if let Some(p) = s.params.iter().find(|p| !known.contains(&p.as_str())) {
                return Err(format!("{:?} uses :{p}, which no \\set defines", s.sql));
            }
        }
        Ok(())
    }

    /// One execution's parameter values, statement by statement.
    pub fn draw(&self, rng: &mut Rng, scale: i64, seq: u64) -> Result<Vec<Vec<i64>>, String> {
        let mut vars: HashMap<&str, i64> = HashMap::with_capacity(self.sets.len() + 2);
        vars.insert("scale", scale);
        vars.insert("seq", seq as i64);
        for (name, expr) in &self.sets {
            let v = expr.eval(&vars, rng)?;
            vars.insert(name, v);
        }
        Ok(self.statements.iter().map(|s| s.params.iter().map(|p| vars[p.as_str()]).collect()).collect())
    }
}

fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Replaces `:name` (not `::cast`, not inside quotes) by `$n`, one number per distinct name.
fn bind(sql: &str) -> Statement {
    let mut out = String::with_capacity(sql.len());
    let mut params: Vec<String> = Vec::new();
    let chars: Vec<char> = sql.chars().collect();
    let mut i = 0;
    let mut quoted = false;
    while i < chars.len() {
        let c = chars[i];
        if c == '\'' {
            quoted = !quoted;
        }
        let prev_colon = i > 0 && chars[i - 1] == ':';
        let next_colon = chars.get(i + 1) == Some(&':');
        let starts_name = chars.get(i + 1).is_some_and(|n| n.is_ascii_alphabetic() || *n == '_');
        if c == ':' && !quoted && !prev_colon && !next_colon && starts_name {
            let mut j = i + 1;
            while j < chars.len() && (chars[j].is_ascii_alphanumeric() || chars[j] == '_') {
                j += 1;
            }
            let name: String = chars[i + 1..j].iter().collect();
            let n = match params.iter().position(|p| *p == name) {
                Some(k) => k + 1,
                None => {
                    params.push(name);
                    params.len()
                }
            };
            out.push_str(&format!("${n}"));
            i = j;
            continue;
        }
        out.push(c);
        i += 1;
    }
    Statement { sql: out, params }
}

// --- expressions --------------------------------------------------------------------------------

fn parse_expr(text: &str) -> Result<Expr, String> {
    let tokens = tokenize(text)?;
    let mut p = Parser { tokens, at: 0 };
    let e = p.sum()?;
    if p.at != p.tokens.len() {
        return Err(format!("{text:?}: unexpected {:?}", p.tokens[p.at]));
    }
    Ok(e)
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Num(f64),
    Name(String),
    Var(String),
    Op(char),
}

fn tokenize(text: &str) -> Result<Vec<Token>, String> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c.is_ascii_digit() || c == '.' {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_digit() || chars[i] == '.') {
                i += 1;
            }
            let s: String = chars[start..i].iter().collect();
            out.push(Token::Num(s.parse().map_err(|_| format!("{s:?} is not a number"))?));
        } else if c == ':' || c.is_ascii_alphabetic() || c == '_' {
            let start = if c == ':' { i + 1 } else { i };
            i = start;
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            let s: String = chars[start..i].iter().collect();
            out.push(if c == ':' { Token::Var(s) } else { Token::Name(s) });
        } else if "+-*/%(),".contains(c) {
            out.push(Token::Op(c));
            i += 1;
        } else {
            return Err(format!("{text:?}: unexpected {c:?}"));
        }
    }
    Ok(out)
}

struct Parser {
    tokens: Vec<Token>,
    at: usize,
}

impl Parser {
    fn peek_op(&self) -> Option<char> {
        match self.tokens.get(self.at) {
            Some(Token::Op(c)) => Some(*c),
            _ => None,
        }
    }

    fn expect(&mut self, op: char) -> Result<(), String> {
        if self.peek_op() == Some(op) {
            self.at += 1;
            Ok(())
        } else {
            Err(format!("expected {op:?}"))
        }
    }

    fn sum(&mut self) -> Result<Expr, String> {
        let mut left = self.product()?;
        while let Some(op @ ('+' | '-')) = self.peek_op() {
            self.at += 1;
            left = Expr::Binary(Box::new(left), op, Box::new(self.product()?));
        }
        Ok(left)
    }

    fn product(&mut self) -> Result<Expr, String> {
        let mut left = self.unary()?;
        while let Some(op @ ('*' | '/' | '%')) = self.peek_op() {
            self.at += 1;
            left = Expr::Binary(Box::new(left), op, Box::new(self.unary()?));
        }
        Ok(left)
    }

    fn unary(&mut self) -> Result<Expr, String> {
        if self.peek_op() == Some('-') {
            self.at += 1;
            return Ok(Expr::Binary(Box::new(Expr::Int(0)), '-', Box::new(self.unary()?)));
        }
        self.atom()
    }

    fn atom(&mut self) -> Result<Expr, String> {
        let token = self.tokens.get(self.at).cloned().ok_or("the expression ends too soon")?;
        self.at += 1;
        match token {
            Token::Num(n) if n.fract() == 0.0 => Ok(Expr::Int(n as i64)),
            Token::Num(n) => Err(format!("{n} is not an integer")),
            Token::Var(v) => Ok(Expr::Var(v)),
            Token::Op('(') => {
                let e = self.sum()?;
                self.expect(')')?;
                Ok(e)
            }
            Token::Name(f) => {
                self.expect('(')?;
                let lo = self.sum()?;
                let mut args = vec![lo];
                while self.peek_op() == Some(',') {
                    self.at += 1;
                    if f == "random_zipfian" && args.len() == 2 {
                        // The exponent: the one non-integer the grammar takes.
                        let s = match self.tokens.get(self.at) {
                            Some(Token::Num(s)) if *s > 1.0 => *s,
                            _ => return Err("random_zipfian's exponent must be a number above 1".into()),
                        };
                        self.at += 1;
                        self.expect(')')?;
                        let hi = args.pop().expect("two arguments");
                        let lo = args.pop().expect("two arguments");
                        return Ok(Expr::Zipfian(Box::new(lo), Box::new(hi), s));
                    }
                    args.push(self.sum()?);
                }
                self.expect(')')?;
                match (f.as_str(), args.as_slice()) {
                    ("random", [lo, hi]) => Ok(Expr::Random(Box::new(lo.clone()), Box::new(hi.clone()))),
                    _ => Err(format!("unknown function {f}() with {} argument(s)", args.len())),
                }
            }
            Token::Op(c) => Err(format!("unexpected {c:?}")),
        }
    }
}

impl Expr {
    fn check(&self, known: &[&str]) -> Result<(), String> {
        match self {
            Expr::Int(_) => Ok(()),
            Expr::Var(v) if known.contains(&v.as_str()) => Ok(()),
            Expr::Var(v) => Err(format!(":{v} is used before any \\set defines it")),
            Expr::Binary(a, _, b) | Expr::Random(a, b) | Expr::Zipfian(a, b, _) => {
                a.check(known)?;
                b.check(known)
            }
        }
    }

    fn eval(&self, vars: &HashMap<&str, i64>, rng: &mut Rng) -> Result<i64, String> {
        Ok(match self {
            Expr::Int(n) => *n,
            Expr::Var(v) => vars[v.as_str()],
            Expr::Binary(a, op, b) => {
                let (x, y) = (a.eval(vars, rng)?, b.eval(vars, rng)?);
                match op {
                    '+' => x.wrapping_add(y),
                    '-' => x.wrapping_sub(y),
                    '*' => x.wrapping_mul(y),
                    '/' | '%' if y == 0 => return Err("division by zero".into()),
                    '/' => x / y,
                    _ => x % y,
                }
            }
            Expr::Random(lo, hi) => {
                let (lo, hi) = (lo.eval(vars, rng)?, hi.eval(vars, rng)?);
                if hi < lo {
                    return Err(format!("random({lo}, {hi}): empty range"));
                }
                let span = (hi - lo) as u64 + 1;
                lo + (rng.next_u64() % span) as i64
            }
            Expr::Zipfian(lo, hi, s) => {
                let (lo, hi) = (lo.eval(vars, rng)?, hi.eval(vars, rng)?);
                if hi < lo {
                    return Err(format!("random_zipfian({lo}, {hi}): empty range"));
                }
                lo + zipf(rng, (hi - lo) as u64 + 1, *s) as i64 - 1
            }
        })
    }
}

/// A Zipf draw in 1..=n with exponent s > 1, by rejection-inversion (Hörmann and Derflinger,
/// 1996): constant time and memory whatever n.
fn zipf(rng: &mut Rng, n: u64, s: f64) -> u64 {
    let h = |x: f64| (-s * x.ln()).exp(); // the density, x^-s
    let h_integral = |x: f64| {
        let log_x = x.ln();
        let t = (1.0 - s) * log_x;
        (if t.abs() > 1e-8 { t.exp_m1() / t } else { 1.0 + t / 2.0 }) * log_x
    };
    let h_integral_inverse = |x: f64| {
        let t = (x * (1.0 - s)).max(-1.0);
        (if t.abs() > 1e-8 { t.ln_1p() / t } else { 1.0 - t / 2.0 } * x).exp()
    };
    let h_x1 = h_integral(1.5) - 1.0;
    let h_n = h_integral(n as f64 + 0.5);
    let squeeze = 2.0 - h_integral_inverse(h_integral(2.5) - h(2.0));
    loop {
        let u = h_n + rng.unit() * (h_x1 - h_n);
        let x = h_integral_inverse(u);
        let k = (x + 0.5).floor().clamp(1.0, n as f64);
        if k - x <= squeeze || u >= h_integral(k + 0.5) - h(k) {
            return k as u64;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TPCB: &str = "\\set aid random(1, 100000 * :scale)\n\\set bid random(1, 1 * :scale)\n\
        \\set tid random(1, 10 * :scale)\n\\set delta random(-5000, 5000)\nBEGIN;\n\
        UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;\n\
        SELECT abalance FROM pgbench_accounts WHERE aid = :aid;\n\
        INSERT INTO pgbench_history (tid, bid, aid, delta, mtime)\n  VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);\nEND;\n";

    #[test]
    fn pgbench_tpcb_parses_into_bound_statements() {
        let s = Script::parse(TPCB).unwrap();
        assert_eq!(s.sets.len(), 4);
        assert_eq!(s.statements.len(), 5);
        assert_eq!(
            s.statements[1].sql,
            "UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2"
        );
        assert_eq!(s.statements[1].params, ["delta", "aid"]);
        assert!(
            s.statements[3].sql.contains("VALUES ($1, $2, $3, $4, CURRENT_TIMESTAMP)"),
            "{}",
            s.statements[3].sql
        );
    }

    #[test]
    fn draws_stay_in_their_ranges_and_cover_them() {
        let s = Script::parse("\\set a random(1, 10 * :scale)\nSELECT :a, :seq;").unwrap();
        let mut rng = Rng::new(7);
        let mut seen = [false; 31];
        for seq in 0..2000 {
            let v = s.draw(&mut rng, 3, seq).unwrap();
            assert!((1..=30).contains(&v[0][0]));
            assert_eq!(v[0][1], seq as i64);
            seen[v[0][0] as usize] = true;
        }
        assert!(seen[1..].iter().all(|x| *x), "every value of 1..=30 drawn in 2,000 tries");
    }

    #[test]
    fn zipfian_favours_the_low_values_by_its_exponent() {
        let s = Script::parse("\\set a random_zipfian(1, 1000, 1.5)\nSELECT :a;").unwrap();
        let mut rng = Rng::new(11);
        let mut counts = [0u32; 1001];
        for seq in 0..20_000 {
            let v = s.draw(&mut rng, 1, seq).unwrap()[0][0];
            assert!((1..=1000).contains(&v));
            counts[v as usize] += 1;
        }
        // P(1)/P(2) = 2^1.5 ≈ 2.83 for Zipf(1.5).
        let ratio = f64::from(counts[1]) / f64::from(counts[2]);
        assert!((2.3..3.4).contains(&ratio), "P(1)/P(2) = {ratio}");
    }

    #[test]
    fn casts_and_quotes_are_not_variables() {
        let st = bind("SELECT ':x', '1'::int, :y");
        assert_eq!(st.sql, "SELECT ':x', '1'::int, $1");
        assert_eq!(st.params, ["y"]);
    }

    #[test]
    fn errors_say_what_and_where() {
        assert!(Script::parse("\\sleep 1\nSELECT 1;").unwrap_err().contains("line 1"));
        assert!(Script::parse("SELECT :nope;").unwrap_err().contains(":nope"));
        assert!(Script::parse("\\set a random(1)\nSELECT :a;").unwrap_err().contains("random()"));
        assert!(Script::parse("-- nothing\n").unwrap_err().contains("no SQL"));
    }
}

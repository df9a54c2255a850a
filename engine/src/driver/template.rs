//! Request payloads, optionally with a `{seq}` placeholder for a per-request sequence number.

/// A payload split at its `{seq}` placeholders; a payload without one is rendered by copying.
#[derive(Debug, Clone)]
pub struct Template {
    parts: Vec<Vec<u8>>,
}

impl Template {
    pub fn new(text: &str, substitute: bool) -> Template {
        let parts = if substitute {
            text.split("{seq}").map(|p| p.as_bytes().to_vec()).collect()
        } else {
            vec![text.as_bytes().to_vec()]
        };
        Template { parts }
    }

    pub fn is_static(&self) -> bool {
        self.parts.len() == 1
    }

    pub fn rendered_len(&self, seq: u64) -> usize {
        let fixed: usize = self.parts.iter().map(Vec::len).sum();
        fixed + (self.parts.len() - 1) * decimal_len(seq)
    }

    pub fn render_into(&self, seq: u64, out: &mut Vec<u8>) {
        let digits = seq.to_string();
        for (i, part) in self.parts.iter().enumerate() {
            if i > 0 {
                out.extend_from_slice(digits.as_bytes());
            }
            out.extend_from_slice(part);
        }
    }

    /// True when the rendered payload may contain `byte` (used to reject framings it would break).
    pub fn contains(&self, byte: u8) -> bool {
        self.parts.iter().any(|p| p.contains(&byte))
    }
}

fn decimal_len(mut n: u64) -> usize {
    let mut len = 1;
    while n >= 10 {
        n /= 10;
        len += 1;
    }
    len
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_sequence_numbers() {
        let t = Template::new("<id>{seq}</id><again>{seq}</again>", true);
        let mut out = Vec::new();
        t.render_into(1234, &mut out);
        assert_eq!(out, b"<id>1234</id><again>1234</again>");
        assert_eq!(t.rendered_len(1234), out.len());
        assert!(!t.is_static());
        let t = Template::new("{seq}", false);
        assert!(t.is_static());
        assert_eq!(t.rendered_len(99), 5);
    }
}

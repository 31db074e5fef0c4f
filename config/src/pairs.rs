//! The `key = value; key2 = value2` list of `wsrep_provider_options`.
//!
//! Rules (Galera's `gu::Config::parse`, checked on 26.4.23): pairs are
//! separated by `;`, key and value by `=`; whitespace around both is
//! trimmed; empty segments are skipped; `key=` gives an empty value; a key
//! without `=`, a second `=`, or an empty key is an error for the whole
//! list (nothing is applied). A backslash makes the next `;`, `=` or `\`
//! literal.
//!
//! Galera's own unescaping is inconsistent (an escape in the last pair is
//! kept verbatim, an escaped `=` is split again); lockstep applies the rule
//! above uniformly. A backslash before any other character is kept as is,
//! so paths and ciphers pass through untouched.

use crate::error::OptionError;

const ESCAPE: char = '\\';

/// Splits an option list into trimmed `(key, value)` pairs, in order.
/// Duplicates are kept: the later one wins when applied.
pub fn parse_pairs(list: &str) -> Result<Vec<(String, String)>, OptionError> {
    let mut pairs = Vec::new();
    for (position, segment) in split_unescaped(list, ';').into_iter().enumerate() {
        let parts = split_unescaped(segment, '=');
        let key = unescape(parts[0]).trim().to_string();
        match (key.is_empty(), parts.len()) {
            (true, 1) => continue, // blank segment, e.g. a trailing `;`
            (true, _) => {
                return Err(syntax(format!(
                    "Empty key at '{}' in parameter list.",
                    segment.trim()
                )))
            }
            (false, 1) => {
                return Err(syntax(format!(
                    "Key without value: '{key}' at position '{position}' in parameter list."
                )))
            }
            (false, 2) => pairs.push((key, unescape(parts[1]).trim().to_string())),
            (false, _) => {
                return Err(syntax(format!(
                    "More than one value for key '{key}' at '{}' in parameter list.",
                    segment.trim()
                )))
            }
        }
    }
    Ok(pairs)
}

fn syntax(msg: String) -> OptionError {
    OptionError::Syntax(msg)
}

/// Splits on `sep` where it is not escaped; the pieces keep their escapes.
fn split_unescaped(s: &str, sep: char) -> Vec<&str> {
    let mut pieces = Vec::new();
    let mut start = 0;
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        if escaped {
            escaped = false;
        } else if c == ESCAPE {
            escaped = true;
        } else if c == sep {
            pieces.push(&s[start..i]);
            start = i + c.len_utf8();
        }
    }
    pieces.push(&s[start..]);
    pieces
}

/// Removes the backslash of `\;`, `\=` and `\\`.
fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, chars.peek()) {
            (ESCAPE, Some(&next)) if matches!(next, ';' | '=' | ESCAPE) => {
                out.push(next);
                chars.next();
            }
            _ => out.push(c),
        }
    }
    out
}

/// Escapes a value so that `parse_pairs` gives it back unchanged.
pub fn escape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        if matches!(c, ';' | '=' | ESCAPE) {
            out.push(ESCAPE);
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(list: &str) -> Vec<(String, String)> {
        parse_pairs(list).unwrap()
    }

    fn pair(k: &str, v: &str) -> (String, String) {
        (k.to_string(), v.to_string())
    }

    #[test]
    fn splits_and_trims() {
        assert_eq!(ok("a=b; c = d"), vec![pair("a", "b"), pair("c", "d")]);
        assert_eq!(
            ok("  gcs.fc_limit = 200  "),
            vec![pair("gcs.fc_limit", "200")]
        );
    }

    #[test]
    fn empty_list_and_empty_segments_are_fine() {
        assert!(ok("").is_empty());
        assert!(ok("  ").is_empty());
        assert_eq!(ok(";;base_port=27010;;"), vec![pair("base_port", "27010")]); // observed
        assert_eq!(ok("a=1; ;b=2;"), vec![pair("a", "1"), pair("b", "2")]);
    }

    #[test]
    fn empty_value_is_allowed() {
        assert_eq!(
            ok("gmcast.mcast_addr="),
            vec![pair("gmcast.mcast_addr", "")]
        );
        assert_eq!(
            ok("evs.evict = ;x=1"),
            vec![pair("evs.evict", ""), pair("x", "1")]
        );
    }

    #[test]
    fn duplicates_are_kept_in_order() {
        assert_eq!(
            ok("gcs.fc_limit=20;gcs.fc_limit=30"),
            vec![pair("gcs.fc_limit", "20"), pair("gcs.fc_limit", "30")]
        );
    }

    #[test]
    fn syntax_errors_use_galera_wording() {
        // Messages observed in err.log of Galera 26.4.23.
        assert_eq!(
            parse_pairs("base_port").unwrap_err().to_string(),
            "Key without value: 'base_port' at position '0' in parameter list."
        );
        assert_eq!(
            parse_pairs("base_port=1=2").unwrap_err().to_string(),
            "More than one value for key 'base_port' at 'base_port=1=2' in parameter list."
        );
        assert_eq!(
            parse_pairs("=5").unwrap_err().to_string(),
            "Empty key at '=5' in parameter list."
        );
        assert!(parse_pairs("gcs.fc_limit=60;bad").is_err()); // nothing applied
    }

    #[test]
    fn backslash_escapes_separators_everywhere() {
        assert_eq!(
            ok(r"gcache.name=a\;b;x=1"),
            vec![pair("gcache.name", "a;b"), pair("x", "1")]
        );
        assert_eq!(
            ok(r"x=1;gcache.name=a\;b"),
            vec![pair("x", "1"), pair("gcache.name", "a;b")]
        );
        assert_eq!(ok(r"k=a\=b\\c"), vec![pair("k", r"a=b\c")]);
        assert_eq!(ok(r"k=C:\dir\n"), vec![pair("k", r"C:\dir\n")]);
        assert_eq!(ok(r"k=end\"), vec![pair("k", r"end\")]);
    }

    #[test]
    fn escape_round_trips() {
        for v in ["a;b", "x=y", r"back\slash", r"\;\=", "plain"] {
            let list = format!("k={}", escape(v));
            assert_eq!(ok(&list), vec![pair("k", v)], "{v}");
        }
    }
}

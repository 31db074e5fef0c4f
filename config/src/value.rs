//! Galera's value syntax: how option values are read from text and how
//! Galera writes them back when it normalises them.
//!
//! Galera does not have one syntax per type but one per module (facts
//! checked on Galera 26.4.23, see the tests):
//! * replicator, GCS and gcache integers are C `strtoll(.., 0)` numbers
//!   (decimal, `0x` hex, leading-`0` octal) with an optional K/M/G/T
//!   binary suffix: `1K` = 1024, `0x10` = 16;
//! * gcomm integers (`evs.*`, `pc.*`, `gmcast.*`) are plain decimals
//!   (`010` = 10, `1K` rejected); the EVS log masks are hexadecimal;
//! * durations are ISO-8601 (`PT30S`, `P1D`, `PT0.5S`) or plain seconds
//!   (`7`, `0.5`);
//! * booleans accept a generous word list (`yes`, `on`, `1`, `true`, ...).
//!
//! Where Galera accepts trailing garbage (its gcomm parser reads `8abc` as
//! 8) lockstep rejects the value: stricter, never looser.

use std::time::Duration;

/// Integer syntaxes used by the different Galera modules.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IntSyntax {
    /// `strtoll(s, 0)` plus an optional K/M/G/T (x1024) suffix.
    Galera,
    /// Decimal digits with an optional sign.
    Decimal,
    /// Hexadecimal, with or without `0x`.
    Hex,
}

/// Parses a boolean the way `gu_str2bool` does (case-insensitive).
pub fn parse_bool(s: &str) -> Option<bool> {
    const TRUE: [&str; 7] = ["1", "y", "on", "yes", "yep", "true", "sure"];
    const FALSE: [&str; 7] = ["0", "n", "no", "off", "none", "nope", "false"];
    // `yeah` is true as well; kept apart so the arrays stay the same size.
    let is = |words: &[&str]| words.iter().any(|w| w.eq_ignore_ascii_case(s));
    if is(&TRUE) || s.eq_ignore_ascii_case("yeah") {
        Some(true)
    } else if is(&FALSE) {
        Some(false)
    } else {
        None
    }
}

/// Parses an integer in the given syntax; `None` on syntax error or
/// overflow.
pub fn parse_int(s: &str, syntax: IntSyntax) -> Option<i64> {
    match syntax {
        IntSyntax::Galera => parse_galera_int(s),
        IntSyntax::Decimal => parse_signed(s, |d| digits(d, 10)),
        IntSyntax::Hex => {
            let d = s
                .strip_prefix("0x")
                .or_else(|| s.strip_prefix("0X"))
                .unwrap_or(s);
            digits(d, 16)
        }
    }
}

fn parse_galera_int(s: &str) -> Option<i64> {
    let (body, shift) = match s.as_bytes().last().map(u8::to_ascii_uppercase) {
        Some(b'K') => (&s[..s.len() - 1], 10),
        Some(b'M') => (&s[..s.len() - 1], 20),
        Some(b'G') => (&s[..s.len() - 1], 30),
        Some(b'T') => (&s[..s.len() - 1], 40),
        _ => (s, 0),
    };
    let n = parse_signed(body, strtoll_magnitude)?;
    n.checked_mul(1i64 << shift)
}

/// The unsigned part of a `strtoll(.., 0)` number: base from the prefix.
fn strtoll_magnitude(s: &str) -> Option<i64> {
    if let Some(hex) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        digits(hex, 16)
    } else if s.len() > 1 && s.starts_with('0') {
        digits(&s[1..], 8)
    } else {
        digits(s, 10)
    }
}

fn parse_signed(s: &str, magnitude: impl Fn(&str) -> Option<i64>) -> Option<i64> {
    if let Some(rest) = s.strip_prefix('-') {
        magnitude(rest).map(|m| -m)
    } else {
        magnitude(s.strip_prefix('+').unwrap_or(s))
    }
}

fn digits(s: &str, radix: u32) -> Option<i64> {
    if s.is_empty() || !s.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    i64::from_str_radix(s, radix).ok()
}

/// Parses a floating point number (`strtod` subset: no hex floats).
pub fn parse_double(s: &str) -> Option<f64> {
    if s.is_empty() || s.starts_with(char::is_whitespace) {
        return None;
    }
    s.parse::<f64>().ok()
}

/// Parses a duration: ISO-8601 `PnYnMnDTnHnMnS` (every part optional, the
/// `T` too, seconds may have up to 9 decimals; a year is 360 days and a
/// month 30, as in Galera) or else a plain number of seconds.
pub fn parse_duration(s: &str) -> Option<Duration> {
    let nanos = match s.strip_prefix('P').and_then(iso_nanos) {
        Some(n) => n,
        None => seconds_nanos(s)?,
    };
    Some(Duration::from_nanos(nanos))
}

const SEC: u64 = 1_000_000_000;
const MIN: u64 = 60 * SEC;
const HOUR: u64 = 60 * MIN;
const DAY: u64 = 24 * HOUR;
const MONTH: u64 = 30 * DAY;
const YEAR: u64 = 12 * MONTH;

/// Total nanoseconds of the ISO-8601 designators after `P`.
fn iso_nanos(s: &str) -> Option<u64> {
    // Units in the only order allowed; `M` is a month until a time unit
    // (`T` or `H`) has been seen, then a minute.
    let mut next_unit = 0usize; // index into the order below
    let order: [(char, u64); 6] = [
        ('Y', YEAR),
        ('M', MONTH),
        ('D', DAY),
        ('H', HOUR),
        ('M', MIN),
        ('S', SEC),
    ];
    let mut total: u64 = 0;
    let mut rest = s;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('T') {
            if next_unit > 3 {
                return None;
            }
            next_unit = 3;
            rest = r;
            continue;
        }
        let end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
        let (number, unit) = (&rest[..end], rest[end..].chars().next()?);
        let pos = (next_unit..order.len()).find(|&i| order[i].0 == unit)?;
        let part = if unit == 'S' {
            // the regex needs a digit before any decimal point
            if !number.starts_with(|c: char| c.is_ascii_digit()) {
                return None;
            }
            seconds_nanos(number)?
        } else {
            digits(number, 10)?
                .try_into()
                .ok()
                .and_then(|n: u64| n.checked_mul(order[pos].1))?
        };
        total = total.checked_add(part)?;
        next_unit = pos + 1;
        rest = &rest[end + 1..];
    }
    Some(total)
}

/// `[digits][.digits]` seconds, at most 9 decimals, as nanoseconds.
fn seconds_nanos(s: &str) -> Option<u64> {
    let (int, frac) = s.split_once('.').unwrap_or((s, ""));
    let all_digits = |p: &str| p.chars().all(|c| c.is_ascii_digit());
    if !all_digits(int) || !all_digits(frac) || frac.len() > 9 {
        return None;
    }
    let whole: u64 = if int.is_empty() { 0 } else { int.parse().ok()? };
    let frac_nanos: u64 = if frac.is_empty() {
        0
    } else {
        frac.parse::<u64>().ok()? * 10u64.pow(9 - frac.len() as u32)
    };
    whole.checked_mul(SEC)?.checked_add(frac_nanos)
}

/// Writes a duration as Galera's `Period` does: `P1D`, `PT1M30S`,
/// `PT7.5S`, `P` for zero.
pub fn format_duration(d: Duration) -> String {
    let mut nanos = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
    let mut out = String::from("P");
    let unit = |out: &mut String, nanos: &mut u64, size: u64, tag: char| {
        if *nanos / size > 0 {
            out.push_str(&format!("{}{}", *nanos / size, tag));
            *nanos %= size;
        }
    };
    unit(&mut out, &mut nanos, YEAR, 'Y');
    unit(&mut out, &mut nanos, MONTH, 'M');
    unit(&mut out, &mut nanos, DAY, 'D');
    if nanos > 0 {
        out.push('T');
    }
    unit(&mut out, &mut nanos, HOUR, 'H');
    unit(&mut out, &mut nanos, MIN, 'M');
    if nanos > 0 {
        out.push_str(&format_g(nanos as f64 / SEC as f64, 6));
        out.push('S');
    }
    out
}

/// Writes an integer with the largest binary suffix that divides it
/// exactly (`1024` -> `1K`, `16` -> `16`), as Galera's config does when a
/// module stores a number it parsed.
pub fn format_size(v: i64) -> String {
    if v == 0 {
        return "0".to_string();
    }
    for (shift, tag) in [(40, "T"), (30, "G"), (20, "M"), (10, "K")] {
        if v & ((1i64 << shift) - 1) == 0 {
            return format!("{}{}", v >> shift, tag);
        }
    }
    v.to_string()
}

/// Writes a double as C++ `ostream << setprecision(15)` does (`%.15g`):
/// `0.8`, `1`, `1e-07`.
pub fn format_double(v: f64) -> String {
    format_g(v, 15)
}

/// C's `%.<precision>g`.
pub fn format_g(v: f64, precision: usize) -> String {
    assert!(precision > 0);
    if v == 0.0 {
        return if v.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    if !v.is_finite() {
        return if v.is_nan() {
            "nan"
        } else if v > 0.0 {
            "inf"
        } else {
            "-inf"
        }
        .to_string();
    }
    // Round once to `precision` significant digits, then choose the form
    // from the exponent of the rounded value, as C does.
    let sci = format!("{:.*e}", precision - 1, v);
    let (mantissa, exp) = sci.split_once('e').expect("`{:e}` always has an exponent");
    let exp: i32 = exp.parse().expect("`{:e}` exponent is an integer");
    if exp < -4 || exp >= precision as i32 {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{}{:02}", trim_zeros(mantissa), sign, exp.abs())
    } else {
        let decimals = (precision as i32 - 1 - exp) as usize;
        trim_zeros(&format!("{:.*}", decimals, v)).to_string()
    }
}

fn trim_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// Writes a hex mask as C++ `showbase << hex` does: `0x1f`, but `0`.
pub fn format_hex(v: i64) -> String {
    if v == 0 {
        "0".to_string()
    } else {
        format!("{:#x}", v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn booleans_accept_galera_words_in_any_case() {
        for t in ["1", "Y", "on", "YES", "yep", "True", "sure", "yeah"] {
            assert_eq!(parse_bool(t), Some(true), "{t}");
        }
        for f in ["0", "N", "OFF", "no", "none", "nope", "FALSE"] {
            assert_eq!(parse_bool(f), Some(false), "{f}");
        }
        for bad in ["", "maybe", "2", "yess"] {
            assert_eq!(parse_bool(bad), None, "{bad}");
        }
    }

    #[test]
    fn galera_integers_are_strtoll_with_binary_suffixes() {
        let p = |s| parse_int(s, IntSyntax::Galera);
        assert_eq!(p("16"), Some(16));
        assert_eq!(p("0x10"), Some(16)); // observed: gcs.fc_limit=0x10 -> 16
        assert_eq!(p("010"), Some(8));
        assert_eq!(p("1K"), Some(1024));
        assert_eq!(p("10M"), Some(10 << 20));
        assert_eq!(p("128m"), Some(128 << 20));
        assert_eq!(p("2G"), Some(2 << 30));
        assert_eq!(p("1T"), Some(1 << 40));
        assert_eq!(p("-1"), Some(-1));
        assert_eq!(p("9223372036854775807"), Some(i64::MAX));
        for bad in ["", "abc", "1KB", "K", "1.5", "99999999999999999999", "8E"] {
            assert_eq!(p(bad), None, "{bad}");
        }
        assert_eq!(p("9223372036854775807K"), None); // overflow
    }

    #[test]
    fn gcomm_integers_are_decimal_and_masks_hex() {
        assert_eq!(parse_int("010", IntSyntax::Decimal), Some(10)); // observed
        assert_eq!(parse_int("+3", IntSyntax::Decimal), Some(3));
        assert_eq!(parse_int("0x2", IntSyntax::Decimal), None); // init fails
        assert_eq!(parse_int("1K", IntSyntax::Decimal), None);
        assert_eq!(parse_int("10", IntSyntax::Hex), Some(16)); // observed 0x10
        assert_eq!(parse_int("0x2", IntSyntax::Hex), Some(2));
    }

    #[test]
    fn doubles() {
        assert_eq!(parse_double("0.8"), Some(0.8));
        assert_eq!(parse_double(".5"), Some(0.5));
        assert_eq!(parse_double("1e-3"), Some(0.001));
        assert_eq!(parse_double("abc"), None);
        assert_eq!(parse_double(""), None);
    }

    #[test]
    fn durations_iso_and_plain_seconds() {
        let d = |s| parse_duration(s).map(|d| d.as_nanos());
        assert_eq!(d("PT30S"), Some(30 * SEC as u128));
        assert_eq!(d("PT0.5S"), Some(500_000_000));
        assert_eq!(d("P1D"), Some(DAY as u128));
        assert_eq!(d("PT1M"), Some(MIN as u128));
        assert_eq!(d("P1M"), Some(MONTH as u128)); // month before any time unit
        assert_eq!(d("P1H5M"), Some((HOUR + 5 * MIN) as u128)); // `T` optional
        assert_eq!(d("PT24H"), Some(DAY as u128));
        assert_eq!(
            d("P1DT2H3M4.25S"),
            Some((DAY + 2 * HOUR + 3 * MIN) as u128 + 4_250_000_000)
        );
        assert_eq!(d("7"), Some(7 * SEC as u128)); // observed: accepted, shown PT7S
        assert_eq!(d("7.5"), Some(7_500_000_000));
        assert_eq!(d(".5"), Some(500_000_000));
        assert_eq!(d("P"), Some(0));
        assert_eq!(d("0.000000001"), Some(1));
        for bad in [
            "abc",
            "PT",
            "PT-1S",
            "P1S1M",
            "PT.5S",
            "5S",
            "1.0000000001",
            "PT1X",
        ] {
            // `PT` alone is accepted by Galera's regex as zero
            if bad == "PT" {
                assert_eq!(d(bad), Some(0));
            } else {
                assert_eq!(d(bad), None, "{bad}");
            }
        }
    }

    #[test]
    fn durations_format_like_galera_period() {
        let f = |s| format_duration(parse_duration(s).unwrap());
        assert_eq!(f("PT24H"), "P1D"); // observed: default PT24H shown as P1D
        assert_eq!(f("PT60S"), "PT1M"); // observed
        assert_eq!(f("PT120S"), "PT2M"); // observed
        assert_eq!(f("7.5"), "PT7.5S"); // observed
        assert_eq!(f("PT0.5S"), "PT0.5S");
        assert_eq!(f("PT90S"), "PT1M30S");
        assert_eq!(f("P1DT1S"), "P1DT1S");
        assert_eq!(f("0"), "P");
        assert_eq!(f("0.000001"), "PT1e-06S");
    }

    #[test]
    fn sizes_format_with_largest_exact_suffix() {
        assert_eq!(format_size(16), "16");
        assert_eq!(format_size(1024), "1K"); // observed: keep_pages_size=1024 -> 1K
        assert_eq!(format_size(1 << 20), "1M");
        assert_eq!(format_size(1536), "1536");
        assert_eq!(format_size(3 << 30), "3G");
        assert_eq!(format_size(1 << 40), "1T");
        assert_eq!(format_size(0), "0");
        assert_eq!(format_size(i64::MAX), "9223372036854775807");
    }

    #[test]
    fn doubles_format_as_percent_15g() {
        assert_eq!(format_double(0.8), "0.8");
        assert_eq!(format_double(1.0), "1"); // observed: gcs.fc_factor=1 -> 1
        assert_eq!(format_double(0.5), "0.5"); // observed: 0.50 -> 0.5
        assert_eq!(format_double(0.1), "0.1");
        assert_eq!(format_double(1e-7), "1e-07");
        assert_eq!(format_double(123456789012345678.0), "1.23456789012346e+17");
        assert_eq!(format_double(100000.0), "100000");
        assert_eq!(format_g(3.797e-6, 6), "3.797e-06");
        assert_eq!(format_g(0.0001, 6), "0.0001");
    }

    #[test]
    fn hex_masks_format_with_base_prefix() {
        assert_eq!(format_hex(1), "0x1");
        assert_eq!(format_hex(3), "0x3"); // observed: evs.debug_log_mask=3 -> 0x3
        assert_eq!(format_hex(0), "0");
    }
}

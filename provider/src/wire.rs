//! The one bounds-checked reader and the string writer that every binary
//! format of lockstep uses: group entries and frames, writesets,
//! certification and group snapshots, handshakes, IST chunks. Bytes from
//! a peer or the disk are never trusted: a decode error is a value saying
//! what was wrong, never a panic (`decoders_fuzz` checks every decoder).
//! Integers are little-endian; a string is a u16 length and UTF-8 bytes.

use crate::gtid::Uuid;

#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub enum WireError {
    Empty,
    Truncated,
    /// Bytes left after what the format holds.
    Trailing,
    /// A format version this build does not speak.
    Version(u8),
    /// A type or kind byte this build does not know.
    Tag(u8),
    Text,
}

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WireError::Empty => write!(f, "empty"),
            WireError::Truncated => write!(f, "truncated"),
            WireError::Trailing => write!(f, "bytes after its end"),
            WireError::Version(v) => write!(f, "format version {} unknown to this build", v),
            WireError::Tag(t) => write!(f, "unknown type {}", t),
            WireError::Text => write!(f, "text is not UTF-8"),
        }
    }
}

impl From<WireError> for String {
    fn from(e: WireError) -> String {
        e.to_string()
    }
}

pub struct Reader<'a> {
    pub buf: &'a [u8],
    pub pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Reader<'a> {
        Reader { buf, pos: 0 }
    }
    pub fn take(&mut self, n: usize) -> Result<&'a [u8], WireError> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.buf.len()).ok_or(WireError::Truncated)?;
        let s = &self.buf[self.pos..end];
        self.pos = end;
        Ok(s)
    }
    fn array<const N: usize>(&mut self) -> Result<[u8; N], WireError> {
        Ok(self.take(N)?.try_into().expect("take returns N bytes"))
    }
    pub fn u8(&mut self) -> Result<u8, WireError> {
        Ok(self.take(1)?[0])
    }
    pub fn u16(&mut self) -> Result<u16, WireError> {
        Ok(u16::from_le_bytes(self.array()?))
    }
    pub fn u32(&mut self) -> Result<u32, WireError> {
        Ok(u32::from_le_bytes(self.array()?))
    }
    pub fn u64(&mut self) -> Result<u64, WireError> {
        Ok(u64::from_le_bytes(self.array()?))
    }
    pub fn i64(&mut self) -> Result<i64, WireError> {
        Ok(i64::from_le_bytes(self.array()?))
    }
    pub fn uuid(&mut self) -> Result<Uuid, WireError> {
        Ok(Uuid(self.array()?))
    }
    pub fn string(&mut self) -> Result<String, WireError> {
        let len = self.u16()? as usize;
        String::from_utf8(self.take(len)?.to_vec()).map_err(|_| WireError::Text)
    }
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }
    pub fn end(&self) -> Result<(), WireError> {
        if self.remaining() == 0 { Ok(()) } else { Err(WireError::Trailing) }
    }
}

/// Writes `s` as a string; one longer than a u16 length can say (names
/// and addresses never are) is cut at a char boundary rather than making
/// the whole message unreadable.
pub fn put_str(out: &mut Vec<u8>, s: &str) {
    let mut end = s.len().min(u16::MAX as usize);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    out.extend_from_slice(&(end as u16).to_le_bytes());
    out.extend_from_slice(&s.as_bytes()[..end]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_buffer_is_an_error_and_a_long_string_is_cut_at_a_char() {
        let mut r = Reader::new(&[1, 2, 3]);
        assert_eq!(r.u32(), Err(WireError::Truncated));
        assert_eq!(r.u16(), Ok(0x0201));
        assert_eq!(r.end(), Err(WireError::Trailing));
        let long = "é".repeat(40_000);
        let mut out = Vec::new();
        put_str(&mut out, &long);
        let back = Reader::new(&out).string().unwrap();
        assert!(long.starts_with(&back) && back.len() == 65534);
    }
}

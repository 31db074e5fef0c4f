//! The handshake that opens every connection, in frames of the reserved
//! kinds. The connecting side speaks first:
//!
//! * Hello   (HELLO):   cluster name str | member uuid 16 | raft id u64 |
//!   listen address str | nonce u64
//! * Welcome (WELCOME): member uuid 16 | raft id u64 | listen address str
//! * Refuse  (REFUSE):  reason str
//!
//! `str` is a u16 LE length and UTF-8 bytes. Bytes after the known fields
//! are ignored, so a later release may append fields without a version
//! bump. The nonce, random per connection, ranks two connections between
//! the same pair of members identically on both ends (see `peers`).

use std::io::{self, Read, Write};

use super::frame::{self, FrameError, HELLO, REFUSE, VERSION, WELCOME};
use super::PeerId;
use crate::gtid::Uuid;

/// Handshake frames carry a few names: anything bigger is not a peer, and
/// a stranger must not make us allocate the 64 MiB a link frame may have.
pub const LIMIT: usize = 64 << 10;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hello {
    pub cluster: String,
    pub uuid: Uuid,
    pub id: PeerId,
    pub listen: String,
    pub nonce: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Welcome {
    pub uuid: Uuid,
    pub id: PeerId,
    pub listen: String,
}

/// Why a handshake did not produce a link.
#[derive(Debug)]
pub enum Failure {
    /// The other side said no (or would have: another protocol version).
    Refused(String),
    /// The connection failed or spoke nonsense.
    Broken(String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Refused(r) => write!(f, "refused: {}", r),
            Failure::Broken(r) => write!(f, "{}", r),
        }
    }
}

impl Hello {
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(64 + self.cluster.len() + self.listen.len());
        put_str(&mut b, &self.cluster);
        b.extend_from_slice(&self.uuid.0);
        b.extend_from_slice(&self.id.to_le_bytes());
        put_str(&mut b, &self.listen);
        b.extend_from_slice(&self.nonce.to_le_bytes());
        b
    }

    pub fn decode(b: &[u8]) -> Option<Hello> {
        let mut c = Cursor(b);
        Some(Hello { cluster: c.str()?, uuid: c.uuid()?, id: c.u64()?, listen: c.str()?, nonce: c.u64()? })
    }
}

impl Welcome {
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(32 + self.listen.len());
        b.extend_from_slice(&self.uuid.0);
        b.extend_from_slice(&self.id.to_le_bytes());
        put_str(&mut b, &self.listen);
        b
    }

    pub fn decode(b: &[u8]) -> Option<Welcome> {
        let mut c = Cursor(b);
        Some(Welcome { uuid: c.uuid()?, id: c.u64()?, listen: c.str()? })
    }
}

pub fn encode_refuse(reason: &str) -> Vec<u8> {
    let mut b = Vec::new();
    put_str(&mut b, reason);
    b
}

/// The connecting side: sends Hello, reads Welcome or Refuse.
pub fn dial(s: &mut (impl Read + Write), hello: &Hello) -> Result<Welcome, Failure> {
    frame::write_frame(s, HELLO, &hello.encode()).map_err(|e| Failure::Broken(format!("cannot send hello: {}", e)))?;
    match frame::read_frame(s, LIMIT) {
        Ok((WELCOME, p)) => Welcome::decode(&p).ok_or_else(|| Failure::Broken("malformed welcome".into())),
        Ok((REFUSE, p)) => Err(Failure::Refused(Cursor(&p).str().unwrap_or_else(|| "no reason given".into()))),
        Ok((kind, _)) => Err(Failure::Broken(format!("unexpected frame kind {} in the handshake", kind))),
        Err(FrameError::Version { version, .. }) => {
            Err(Failure::Refused(format!("peer speaks protocol {}, this node {}", version, VERSION)))
        }
        Err(e) => Err(Failure::Broken(describe(e))),
    }
}

/// The accepting side's first step: the Hello, or why there is none. A
/// Hello of another protocol version is `Refused` so the caller answers it.
pub fn read_hello(s: &mut impl Read) -> Result<Hello, Failure> {
    match frame::read_frame(s, LIMIT) {
        Ok((HELLO, p)) => Hello::decode(&p).ok_or_else(|| Failure::Broken("malformed hello".into())),
        Ok((kind, _)) => Err(Failure::Broken(format!("expected a hello, got frame kind {}", kind))),
        Err(e @ FrameError::Version { kind: HELLO, .. }) => Err(Failure::Refused(e.to_string())),
        Err(e) => Err(Failure::Broken(describe(e))),
    }
}

fn describe(e: FrameError) -> String {
    match e {
        FrameError::Io(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {
            "no handshake in time".into()
        }
        FrameError::Closed => "closed during the handshake".into(),
        e => e.to_string(),
    }
}

fn put_str(b: &mut Vec<u8>, s: &str) {
    // Names and addresses are short; a longer string is cut at a char
    // boundary rather than making the frame unreadable.
    let mut end = s.len().min(u16::MAX as usize);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    b.extend_from_slice(&(end as u16).to_le_bytes());
    b.extend_from_slice(&s.as_bytes()[..end]);
}

/// Reads fields off a payload; None when it runs short.
struct Cursor<'a>(&'a [u8]);

impl Cursor<'_> {
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        if self.0.len() < n {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }

    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    fn uuid(&mut self) -> Option<Uuid> {
        Some(Uuid(self.take(16)?.try_into().ok()?))
    }

    fn str(&mut self) -> Option<String> {
        let len = u16::from_le_bytes(self.take(2)?.try_into().ok()?) as usize;
        String::from_utf8(self.take(len)?.to_vec()).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip_and_reject_short_input() {
        let h = Hello { cluster: "c".into(), uuid: Uuid::random(), id: 7, listen: "127.0.0.1:1".into(), nonce: 9 };
        let mut b = h.encode();
        assert_eq!(Hello::decode(&b), Some(h.clone()));
        b.extend_from_slice(b"future fields");
        assert_eq!(Hello::decode(&b), Some(h));
        for n in 0..b.len() - 13 {
            assert_eq!(Hello::decode(&b[..n]), None, "prefix {}", n);
        }
        let w = Welcome { uuid: Uuid::random(), id: 3, listen: String::new() };
        assert_eq!(Welcome::decode(&w.encode()), Some(w));
        assert_eq!(Cursor(&encode_refuse("no")).str().as_deref(), Some("no"));
    }
}

//! The handshake that opens every connection, in frames of the reserved
//! kinds. The connecting side speaks first:
//!
//! * Hello   (HELLO):   cluster name str | member uuid 16 | raft id u64 |
//!   listen address str | nonce u64 | segment u8 | features u8
//! * Welcome (WELCOME): member uuid 16 | raft id u64 | listen address str |
//!   segment u8 | features u8
//! * Refuse  (REFUSE):  reason str
//!
//! `str` is a u16 LE length and UTF-8 bytes. Bytes after the known fields
//! are ignored, so a later release may append fields without a version
//! bump. The nonce, random per connection, ranks two connections between
//! the same pair of members identically on both ends (see `peers`). The
//! segment (`gmcast.segment`) came later: a peer without it is of a build
//! that cannot relay (see `group::relay`), so it is `None`, not segment 0.
//! The features came after it (bits: `deflate::FEATURE_DEFLATE`,
//! `FEATURE_OWN_PAYLOADS`, `FEATURE_LEADER_WORDS`, `FEATURE_READ_ASK`);
//! none when absent.

use std::io::{self, Read, Write};

use super::frame::{self, FrameError, HELLO, REFUSE, VERSION, WELCOME};
use super::PeerId;
use crate::gtid::Uuid;
use crate::wire::{put_str, Reader};

/// The handshake's feature bit: this node takes an append whose entries
/// it originated without their payloads, from its own copies (see
/// `group::own_payloads`).
pub const FEATURE_OWN_PAYLOADS: u8 = 2;

/// The handshake's feature bit: this node reads a follower's word on its
/// leader (see `group::cut_off`); an older build would log the frame's
/// kind as unknown, so it gets none.
pub const FEATURE_LEADER_WORDS: u8 = 4;

/// The handshake's feature bit: this node, as leader, answers a causal
/// read's question with its commit index (see `group::shell::reads`);
/// an older build would log the frame's kind as unknown and never answer.
pub const FEATURE_READ_ASK: u8 = 8;

/// Every feature this build has, as its Hello and Welcome say.
pub const FEATURES: u8 = super::deflate::FEATURE_DEFLATE | FEATURE_OWN_PAYLOADS | FEATURE_LEADER_WORDS | FEATURE_READ_ASK;

/// How an allowlist refusal starts, in Galera's words: mtr tests suppress
/// the accepting side's line by them, and the refused side says it
/// quietly (it is the operator's choice, not a fault).
pub const NOT_ALLOWED: &str = "Connection not allowed";

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
    pub segment: Option<u8>,
    pub features: u8,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Welcome {
    pub uuid: Uuid,
    pub id: PeerId,
    pub listen: String,
    pub segment: Option<u8>,
    pub features: u8,
}

/// Why a handshake did not produce a link.
#[derive(Debug)]
pub enum Failure {
    /// The other side said no (or would have: another protocol version).
    Refused(String),
    /// The connection failed or spoke nonsense.
    Broken(String),
    /// The peer hung up before its first byte: a node that was stopping
    /// while it dialed, not a fault of anyone's.
    Gone,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Refused(r) => write!(f, "refused: {}", r),
            Failure::Broken(r) => write!(f, "{}", r),
            Failure::Gone => write!(f, "closed before the handshake"),
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
        put_tail(&mut b, self.segment, self.features);
        b
    }

    pub fn decode(b: &[u8]) -> Option<Hello> {
        let mut c = Reader::new(b);
        let (cluster, uuid, id, listen, nonce) = (c.string().ok()?, c.uuid().ok()?, c.u64().ok()?, c.string().ok()?, c.u64().ok()?);
        Some(Hello { cluster, uuid, id, listen, nonce, segment: c.u8().ok(), features: c.u8().unwrap_or(0) })
    }
}

impl Welcome {
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(32 + self.listen.len());
        b.extend_from_slice(&self.uuid.0);
        b.extend_from_slice(&self.id.to_le_bytes());
        put_str(&mut b, &self.listen);
        put_tail(&mut b, self.segment, self.features);
        b
    }

    pub fn decode(b: &[u8]) -> Option<Welcome> {
        let mut c = Reader::new(b);
        let (uuid, id, listen) = (c.uuid().ok()?, c.u64().ok()?, c.string().ok()?);
        Some(Welcome { uuid, id, listen, segment: c.u8().ok(), features: c.u8().unwrap_or(0) })
    }
}

/// The fields added after the first release, in order: a peer reads them
/// by position, so features go only after a segment.
fn put_tail(b: &mut Vec<u8>, segment: Option<u8>, features: u8) {
    if let Some(s) = segment {
        b.push(s);
        b.push(features);
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
        Ok((REFUSE, p)) => Err(Failure::Refused(Reader::new(&p).string().unwrap_or_else(|_| "no reason given".into()))),
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
        Err(FrameError::Closed) => Err(Failure::Gone),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip_and_reject_short_input() {
        let h = Hello { cluster: "c".into(), uuid: Uuid::random(), id: 7, listen: "127.0.0.1:1".into(), nonce: 9, segment: Some(2), features: 1 };
        let mut b = h.encode();
        assert_eq!(Hello::decode(&b), Some(h.clone()));
        b.extend_from_slice(b"future fields");
        assert_eq!(Hello::decode(&b), Some(h.clone()));
        // Builds before features, and before segments: the last one and
        // two bytes missing.
        let old = h.encode();
        assert_eq!(Hello::decode(&old[..old.len() - 1]), Some(Hello { features: 0, ..h.clone() }));
        assert_eq!(Hello::decode(&old[..old.len() - 2]), Some(Hello { segment: None, features: 0, ..h }));
        for n in 0..old.len() - 2 {
            assert_eq!(Hello::decode(&b[..n]), None, "prefix {}", n);
        }
        let w = Welcome { uuid: Uuid::random(), id: 3, listen: String::new(), segment: Some(0), features: 1 };
        assert_eq!(Welcome::decode(&w.encode()), Some(w.clone()));
        let old = w.encode();
        assert_eq!(Welcome::decode(&old[..old.len() - 1]), Some(Welcome { features: 0, ..w.clone() }));
        assert_eq!(Welcome::decode(&old[..old.len() - 2]), Some(Welcome { segment: None, features: 0, ..w }));
        assert_eq!(Reader::new(&encode_refuse("no")).string().as_deref(), Ok("no"));
    }

    #[test]
    fn a_peer_that_hangs_up_before_its_hello_is_gone_and_one_that_stops_halfway_broken() {
        assert!(matches!(read_hello(&mut &[][..]), Err(Failure::Gone)));
        let hello = Hello { cluster: "c".into(), uuid: Uuid::random(), id: 7, listen: String::new(), nonce: 1, segment: Some(0), features: 0 };
        let mut wire = Vec::new();
        frame::write_frame(&mut wire, HELLO, &hello.encode()).expect("to a Vec");
        assert!(matches!(read_hello(&mut &wire[..4]), Err(Failure::Broken(_))));
    }
}

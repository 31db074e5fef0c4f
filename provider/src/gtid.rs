//! Identities shared by every layer: UUIDs (group history, member), seqnos
//! and GTIDs, printed and parsed the way Galera and MariaDB write them.

use std::fmt;

/// A global sequence number. `-1` (UNDEFINED) means "none"; ordered actions
/// start at 1 in a new history.
pub type Seqno = i64;
pub const SEQNO_UNDEFINED: Seqno = -1;

/// 16 bytes, printed `8-4-4-4-12` in lowercase hex as Galera does.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Uuid(pub [u8; 16]);

impl Uuid {
    pub const NIL: Uuid = Uuid([0; 16]);

    /// A random (version 4) UUID. Member UUIDs are new at every process
    /// start, so they only need to be unique, not secret.
    pub fn random() -> Uuid {
        let mut b = random_bytes();
        b[6] = (b[6] & 0x0f) | 0x40;
        b[8] = (b[8] & 0x3f) | 0x80;
        Uuid(b)
    }

    /// A random UUID whose first 48 bits are the Unix time in ms,
    /// big-endian (RFC 9562's version 7): one made later sorts later, in
    /// its text form too. Member ids are made so because the server keeps
    /// a view's members sorted by id (`mysql.wsrep_cluster_members`) and a
    /// joiner takes its index, hence its `auto_increment_offset`, from
    /// that order after a state transfer: it must be the order the nodes
    /// connected in, as Galera's time-based ids give it.
    pub fn time_ordered() -> Uuid {
        let ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
        let mut b = random_bytes();
        b[..6].copy_from_slice(&ms.to_be_bytes()[2..]);
        b[6] = (b[6] & 0x0f) | 0x70;
        b[8] = (b[8] & 0x3f) | 0x80;
        Uuid(b)
    }

    pub fn is_nil(&self) -> bool {
        *self == Uuid::NIL
    }

    /// Parses `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` (case-insensitive).
    pub fn parse(s: &str) -> Option<Uuid> {
        let s = s.trim();
        if s.len() != 36 {
            return None;
        }
        let mut out = [0u8; 16];
        let mut nibbles = s.bytes().enumerate().filter(|(i, _)| ![8, 13, 18, 23].contains(i));
        for byte in out.iter_mut() {
            let hi = hex_value(nibbles.next()?.1)?;
            let lo = hex_value(nibbles.next()?.1)?;
            *byte = hi << 4 | lo;
        }
        let dashes_ok = [8, 13, 18, 23].iter().all(|&i| s.as_bytes()[i] == b'-');
        dashes_ok.then_some(Uuid(out))
    }

    /// The Raft node id of a member: its UUID folded to a non-zero u64
    /// (raft-rs reserves 0 for "none").
    pub fn raft_id(&self) -> u64 {
        let mut a = [0u8; 8];
        let mut b = [0u8; 8];
        a.copy_from_slice(&self.0[..8]);
        b.copy_from_slice(&self.0[8..]);
        let id = u64::from_le_bytes(a) ^ u64::from_le_bytes(b).rotate_left(17);
        if id == 0 { 1 } else { id }
    }
}

fn hex_value(c: u8) -> Option<u8> {
    (c as char).to_digit(16).map(|d| d as u8)
}

/// Random bytes from the kernel; falls back to time and address entropy if
/// /dev/urandom cannot be read (never fails: a UUID must always be made).
fn random_bytes() -> [u8; 16] {
    use std::io::Read;
    let mut b = [0u8; 16];
    let ok = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut b)).is_ok();
    if !ok {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let addr = &b as *const _ as usize as u128;
        b = (t ^ addr.rotate_left(64) ^ (std::process::id() as u128) << 32).to_le_bytes();
    }
    b
}

impl fmt::Display for Uuid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, byte) in self.0.iter().enumerate() {
            if [4, 6, 8, 10].contains(&i) {
                f.write_str("-")?;
            }
            write!(f, "{:02x}", byte)?;
        }
        Ok(())
    }
}

impl fmt::Debug for Uuid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// A position in a history: `uuid:seqno`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Gtid {
    pub uuid: Uuid,
    pub seqno: Seqno,
}

impl Gtid {
    pub const UNDEFINED: Gtid = Gtid { uuid: Uuid::NIL, seqno: SEQNO_UNDEFINED };

    pub fn new(uuid: Uuid, seqno: Seqno) -> Gtid {
        Gtid { uuid, seqno }
    }

    pub fn is_undefined(&self) -> bool {
        self.uuid.is_nil() && self.seqno == SEQNO_UNDEFINED
    }
}

impl fmt::Display for Gtid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.uuid, self.seqno)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuid_round_trips_through_text() {
        let u = Uuid::random();
        let s = u.to_string();
        assert_eq!(s.len(), 36);
        assert_eq!(Uuid::parse(&s), Some(u));
        assert_eq!(Uuid::parse(&s.to_uppercase()), Some(u));
    }

    #[test]
    fn uuid_parse_rejects_malformed() {
        assert_eq!(Uuid::parse(""), None);
        assert_eq!(Uuid::parse("74f67236-0000-0000-0000-00000000000g"), None);
        assert_eq!(Uuid::parse("74f672360000-0000-0000-0000-00000000000"), None);
        assert_eq!(Uuid::parse("00000000-0000-0000-0000-000000000000"), Some(Uuid::NIL));
    }

    #[test]
    fn random_uuids_differ_and_have_nonzero_raft_ids() {
        let a = Uuid::random();
        let b = Uuid::random();
        assert_ne!(a, b);
        assert_ne!(a.raft_id(), 0);
        assert_ne!(Uuid::NIL.raft_id(), 0);
    }

    #[test]
    fn time_ordered_uuids_sort_as_made_in_text_too() {
        let a = Uuid::time_ordered();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let b = Uuid::time_ordered();
        assert!(a.to_string() < b.to_string(), "{a} {b}");
        assert_eq!(&a.to_string()[14..15], "7", "version 7");
        assert_ne!(a.raft_id(), b.raft_id());
    }
}

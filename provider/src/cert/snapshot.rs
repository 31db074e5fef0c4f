//! The certification state as a joiner receives it with the group's Raft
//! snapshot: without it a joiner would certify differently from everyone
//! else. Only the certified writesets travel; the index is rebuilt from
//! them.
//!
//! ```text
//! version u8 (1) | position i64 | floor i64 | last_pa_unsafe i64 | count u32
//! | (seqno i64 | source 16 | toi u8 | key count u32 | (hash u64 | kind u8)*)*
//! | streaming count u32 | (source 16 | trx u64 | seqno i64)*
//! ```

use super::{Certification, Certified, KeyKind};
use crate::wire::Reader;

// 2: the open streaming transactions' last fragments.
const VERSION: u8 = 2;

impl Certification {
    pub fn encode(&self) -> Vec<u8> {
        // Sized up front: the index can hold millions of keys, and a
        // snapshot is taken while certification waits for this lock.
        let keys: usize = self.certified.values().map(|c| c.keys.len()).sum();
        let mut out = Vec::with_capacity(29 + self.certified.len() * 29 + keys * 9 + 4 + self.streaming.len() * 32);
        out.push(VERSION);
        for v in [self.position, self.floor, self.last_pa_unsafe] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&(self.certified.len() as u32).to_le_bytes());
        for (seqno, c) in &self.certified {
            out.extend_from_slice(&seqno.to_le_bytes());
            out.extend_from_slice(&c.source.0);
            out.push(c.toi as u8);
            out.extend_from_slice(&(c.keys.len() as u32).to_le_bytes());
            for (hash, kind) in &c.keys {
                out.extend_from_slice(&hash.to_le_bytes());
                out.push(*kind as u8);
            }
        }
        out.extend_from_slice(&(self.streaming.len() as u32).to_le_bytes());
        for ((source, trx), seqno) in &self.streaming {
            out.extend_from_slice(&source.0);
            out.extend_from_slice(&trx.to_le_bytes());
            out.extend_from_slice(&seqno.to_le_bytes());
        }
        out
    }

    /// Replaces this state with a decoded one; on a malformed buffer
    /// nothing changes and the error says why.
    pub fn restore(&mut self, buf: &[u8]) -> Result<(), String> {
        let mut r = Reader::new(buf);
        if r.u8()? != VERSION {
            return Err("certification snapshot of another version".into());
        }
        let (position, floor, last_pa_unsafe) = (r.i64()?, r.i64()?, r.i64()?);
        let count = r.u32()? as usize;
        let mut certified = Vec::with_capacity(count.min(buf.len() / 29));
        for _ in 0..count {
            let seqno = r.i64()?;
            let c = decode_certified(&mut r)?;
            certified.push((seqno, c));
        }
        let mut streaming = std::collections::BTreeMap::new();
        for _ in 0..r.u32()? {
            let source = r.uuid()?;
            let trx = r.u64()?;
            streaming.insert((source, trx), r.i64()?);
        }
        if r.end().is_err() {
            return Err("trailing bytes in certification snapshot".into());
        }
        let (pa, max) = (self.optimistic_pa, self.max_length);
        *self = Certification::new(position);
        (self.optimistic_pa, self.max_length, self.floor, self.last_pa_unsafe) = (pa, max, floor, last_pa_unsafe);
        self.streaming = streaming;
        for (seqno, c) in certified {
            self.index_keys(seqno, &c.keys);
            self.certified.insert(seqno, c);
        }
        Ok(())
    }
}

fn decode_certified(r: &mut Reader<'_>) -> Result<Certified, String> {
    let source = r.uuid()?;
    let toi = r.u8()? != 0;
    let n = r.u32()? as usize;
    let mut keys = Vec::with_capacity(n.min(r.remaining() / 9));
    for _ in 0..n {
        let hash = r.u64()?;
        let kind = KeyKind::from_wire(r.u8()?).ok_or("bad key kind in certification snapshot")?;
        keys.push((hash, kind));
    }
    Ok(Certified { source, toi, keys })
}


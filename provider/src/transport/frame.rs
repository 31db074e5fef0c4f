//! Frames on the wire, the same in the handshake and after it:
//!
//! | version u8 | kind u8 | length u32 LE | crc32c u32 LE | payload (length bytes) |
//!
//! The checksum covers the first six header bytes and the payload, so a
//! flipped kind or length is caught as surely as a flipped payload byte.
//! Integers are little-endian, like the writeset encoding.

use std::fmt;
use std::io::{self, IoSlice, Read, Write};

use bytes::Bytes;

/// The protocol this node speaks; the first byte of every frame. Peers of
/// another version are refused at the handshake: it covers the frames,
/// the group log's entries (2: a state request names the joiner's IST
/// address; 3: big writesets in pieces; 4: a writeset's entries carry
/// their header in the Raft entry's context) and the IST connection's
/// chunks.
pub const VERSION: u8 = 4;
pub const HEADER_LEN: usize = 10;

/// Kinds from here up belong to the transport itself; the owner's kinds are
/// below, so a handshake frame can never be mistaken for the owner's.
pub const RESERVED_KINDS: u8 = 0xF0;
pub const HELLO: u8 = 0xF0;
pub const WELCOME: u8 = 0xF1;
pub const REFUSE: u8 = 0xF2;
/// An owner's frame, compressed (see `deflate`): after the handshake.
pub const COMPRESSED: u8 = 0xF3;

/// Bytes of a payload allocated before they arrive. Larger frames grow
/// their buffer as data comes in, so a length field alone (a lie, or a
/// peer that stalls) never costs more memory than this.
pub(super) const PREALLOC: usize = 256 << 10;

#[derive(Debug)]
pub enum FrameError {
    /// The peer closed the connection between two frames.
    Closed,
    Io(io::Error),
    /// Another protocol version (`kind` tells a Hello from garbage).
    Version { version: u8, kind: u8 },
    TooLarge { len: u64, limit: usize },
    Checksum,
    Truncated { expected: usize, got: usize },
    /// A frame whose payload does not decode at this layer (a compressed
    /// one that does not inflate).
    Malformed(String),
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameError::Closed => write!(f, "closed by the peer"),
            FrameError::Io(e) => write!(f, "{}", e),
            FrameError::Version { version, kind } if *kind == HELLO => {
                write!(f, "speaks protocol {}, this node {}", version, VERSION)
            }
            FrameError::Version { version, .. } => {
                write!(f, "not a lockstep frame (version byte {}, expected {})", version, VERSION)
            }
            FrameError::TooLarge { len, limit } => write!(f, "frame of {} bytes exceeds the limit of {} bytes", len, limit),
            FrameError::Checksum => write!(f, "frame checksum mismatch"),
            FrameError::Truncated { expected, got } => write!(f, "truncated frame: {} of {} bytes", got, expected),
            FrameError::Malformed(why) => write!(f, "{}", why),
        }
    }
}

impl From<io::Error> for FrameError {
    fn from(e: io::Error) -> Self {
        FrameError::Io(e)
    }
}

pub fn header(kind: u8, payload: &[u8]) -> [u8; HEADER_LEN] {
    let mut h = [0u8; HEADER_LEN];
    h[0] = VERSION;
    h[1] = kind;
    h[2..6].copy_from_slice(&(payload.len() as u32).to_le_bytes());
    let crc = crc32c::crc32c_append(crc32c::crc32c(&h[..6]), payload);
    h[6..].copy_from_slice(&crc.to_le_bytes());
    h
}

/// Reads one frame; `limit` bounds the payload.
pub fn read_frame(r: &mut impl Read, limit: usize) -> Result<(u8, Bytes), FrameError> {
    let h = read_header(r)?;
    if h[0] != VERSION {
        return Err(FrameError::Version { version: h[0], kind: h[1] });
    }
    let len = u32::from_le_bytes([h[2], h[3], h[4], h[5]]) as usize;
    if len > limit {
        return Err(FrameError::TooLarge { len: len as u64, limit });
    }
    let mut payload = Vec::with_capacity(len.min(PREALLOC));
    r.take(len as u64).read_to_end(&mut payload)?;
    if payload.len() < len {
        return Err(FrameError::Truncated { expected: len, got: payload.len() });
    }
    let crc = crc32c::crc32c_append(crc32c::crc32c(&h[..6]), &payload);
    if crc.to_le_bytes() != h[6..] {
        return Err(FrameError::Checksum);
    }
    Ok((h[1], Bytes::from(payload)))
}

/// A clean end of stream is `Closed` only at a frame boundary.
fn read_header(r: &mut impl Read) -> Result<[u8; HEADER_LEN], FrameError> {
    let mut h = [0u8; HEADER_LEN];
    let mut got = 0;
    while got < HEADER_LEN {
        match r.read(&mut h[got..]) {
            Ok(0) if got == 0 => return Err(FrameError::Closed),
            Ok(0) => return Err(FrameError::Truncated { expected: HEADER_LEN, got }),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(h)
}

/// Writes one frame (handshake; tests) in one write: a node that stops
/// while it dials shuts its sockets down from another thread, and between
/// a header and its payload written apart that left the peer a truncated
/// hello, which it must take for a fault (mtr failed galera_3nodes.GAL-501
/// on the warning once). Handshake frames are small; the copy is cheap.
pub fn write_frame(w: &mut impl Write, kind: u8, payload: &[u8]) -> io::Result<()> {
    w.write_all(&[&header(kind, payload)[..], payload].concat())?;
    w.flush()
}

/// Writes a batch of frames with as few system calls as the kernel allows,
/// the payloads by reference (no copy into a staging buffer), after
/// `prefix` (raw bytes: the end of a frame already begun, or nothing).
/// `send` is one vectored write that may be partial. Returns the bytes
/// written.
pub fn write_batch(
    prefix: &[u8],
    frames: &[(u8, Bytes)],
    mut send: impl FnMut(&[IoSlice<'_>]) -> io::Result<usize>,
) -> io::Result<usize> {
    let headers: Vec<[u8; HEADER_LEN]> = frames.iter().map(|(k, p)| header(*k, p)).collect();
    let mut slices = Vec::with_capacity(frames.len() * 2 + 1);
    if !prefix.is_empty() {
        slices.push(IoSlice::new(prefix));
    }
    for (h, (_, p)) in headers.iter().zip(frames) {
        slices.push(IoSlice::new(h));
        if !p.is_empty() {
            slices.push(IoSlice::new(p));
        }
    }
    let total: usize = slices.iter().map(|s| s.len()).sum();
    let mut rest = &mut slices[..];
    while !rest.is_empty() {
        match send(rest) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => IoSlice::advance_slices(&mut rest, n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded(kind: u8, payload: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        write_frame(&mut v, kind, payload).expect("to a Vec");
        v
    }

    #[test]
    fn round_trip_and_batch_equals_single_frames() {
        let frames = vec![(1u8, Bytes::from_static(b"abc")), (2, Bytes::new()), (3, Bytes::from(vec![7u8; 70_000]))];
        let mut wire = Vec::new();
        // One byte per call: the partial-write path.
        let n = write_batch(&[], &frames, |s| wire.write(&s.iter().find(|s| !s.is_empty()).expect("data")[..1])).expect("write");
        assert_eq!(n, wire.len());
        let singles: Vec<u8> = frames.iter().flat_map(|(k, p)| encoded(*k, p)).collect();
        assert_eq!(wire, singles);
        let mut r = &wire[..];
        for (k, p) in &frames {
            let (k2, p2) = read_frame(&mut r, 1 << 20).expect("frame");
            assert_eq!((k2, &p2), (*k, p));
        }
        assert!(matches!(read_frame(&mut r, 1 << 20), Err(FrameError::Closed)));
    }

    #[test]
    fn corruption_is_detected() {
        let good = encoded(5, b"payload");
        let mut bad_crc = good.clone();
        bad_crc[HEADER_LEN + 2] ^= 1;
        assert!(matches!(read_frame(&mut &bad_crc[..], 100), Err(FrameError::Checksum)));
        let mut bad_kind = good.clone();
        bad_kind[1] = 6;
        assert!(matches!(read_frame(&mut &bad_kind[..], 100), Err(FrameError::Checksum)));
        let mut bad_version = good.clone();
        bad_version[0] = VERSION + 1;
        assert!(matches!(read_frame(&mut &bad_version[..], 100), Err(FrameError::Version { version, .. }) if version == VERSION + 1));
        assert!(matches!(read_frame(&mut &good[..good.len() - 1], 100), Err(FrameError::Truncated { .. })));
        assert!(matches!(read_frame(&mut &good[..4], 100), Err(FrameError::Truncated { .. })));
        assert!(matches!(read_frame(&mut &good[..], 6), Err(FrameError::TooLarge { len: 7, limit: 6 })));
    }

    /// Takes one write whole, then fails every later one, like a socket
    /// shut down by another thread.
    struct ShutAfterOneWrite(Vec<u8>);

    impl Write for ShutAfterOneWrite {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            if !self.0.is_empty() {
                return Err(io::ErrorKind::BrokenPipe.into());
            }
            self.0.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_frame_is_written_whole_or_not_at_all() {
        let mut w = ShutAfterOneWrite(Vec::new());
        write_frame(&mut w, 3, b"a hello's worth of payload").expect("one write");
        let (kind, payload) = read_frame(&mut &w.0[..], 100).expect("a whole frame");
        assert_eq!((kind, &payload[..]), (3, &b"a hello's worth of payload"[..]));
    }

    #[test]
    fn an_absurd_length_allocates_only_what_arrives() {
        let mut h = header(1, b"");
        h[2..6].copy_from_slice(&u32::MAX.to_le_bytes());
        let wire = [&h[..], b"short"].concat();
        let e = read_frame(&mut &wire[..], usize::MAX).expect_err("truncated");
        assert!(matches!(e, FrameError::Truncated { got: 5, .. }), "{e}");
    }
}

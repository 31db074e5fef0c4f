//! The IST connection's two ends: the joiner's receiver, a listener that
//! takes one connection and feeds what it reads into the `Incoming` queue,
//! and the donor's sender. Formats are in `ist`.

use std::io::{BufReader, BufWriter, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use super::inbox::Incoming;
use super::ist::{self, Chunk, Header};
use crate::gcache::Cached;
use crate::gtid::Seqno;
use crate::transport::frame::{self, FrameError};
use crate::transport::net;
use crate::transport::tls::{Tls, RECORD_HANDSHAKE};

/// A connection that moves nothing for this long is dead (the donor, the
/// joiner or the network): the transfer fails.
pub const STALL: Duration = Duration::from_secs(60);
/// How long the donor tries to reach the joiner's receiver.
const CONNECT_WAIT: Duration = Duration::from_secs(10);
/// How often the accepting thread looks whether it is still wanted.
const TICK: Duration = Duration::from_millis(200);
/// A writeset travels whole in one chunk, as the gcache holds it (at most
/// u32::MAX bytes); the reader's buffer grows only as its bytes arrive.
const MAX_CHUNK: usize = u32::MAX as usize;

/// The joiner's listener, serving one transfer. Dropping it stops the
/// transfer (if any) and frees the port.
pub struct Receiver {
    addr: String,
    listening: String,
    incoming: Arc<Incoming>,
    /// The accepted connection, so that a drop can wake a blocked reader.
    conn: Arc<Mutex<Option<TcpStream>>>,
    thread: Option<JoinHandle<()>>,
}

impl Receiver {
    /// Listens at `bind` (`tcp://host:port`) and feeds the first
    /// connection into `incoming`, which the caller has opened. `addr` is
    /// where donors reach it (the same, unless behind NAT).
    /// With `tls`, the donor must connect with TLS (or plain, with
    /// socket.dynamic), as on the group's connections, and `addr()` says
    /// so to donors with the `ssl://` scheme, as Galera's joiner does.
    pub fn start(addr: &str, bind: &str, incoming: Arc<Incoming>, tls: Option<Arc<Tls>>) -> Result<Receiver, String> {
        let addr = match tls {
            Some(_) => format!("ssl://{}", lockstep_config::node::split_scheme(addr).1),
            None => addr.to_string(),
        };
        let fail = |e: std::io::Error| format!("Failed to open IST listener at {}: {}", bind, e);
        let listener = TcpListener::bind(net::resolve(bind).map_err(fail)?).map_err(fail)?;
        let listening = format!("tcp://{}", listener.local_addr().map_err(fail)?);
        let conn = Arc::new(Mutex::new(None));
        let thread = {
            let (incoming, conn) = (incoming.clone(), conn.clone());
            std::thread::Builder::new()
                .name("lockstep-ist-recv".into())
                .spawn(move || serve(listener, &incoming, &conn, tls))
                .map_err(|e| format!("cannot start the IST receiver thread: {}", e))?
        };
        Ok(Receiver { addr, listening, incoming, conn, thread: Some(thread) })
    }

    /// Where donors connect (`tcp://host:port`, `ssl://` with TLS).
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// The socket actually bound (`tcp://host:port`).
    pub fn listening(&self) -> &str {
        &self.listening
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        // Closed first: the thread checks it after publishing its
        // connection, so either it sees the flag or we see the connection.
        self.incoming.close();
        if let Some(c) = self.conn.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
            let _ = c.shutdown(Shutdown::Both);
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn serve(listener: TcpListener, incoming: &Incoming, conn: &Mutex<Option<TcpStream>>, tls: Option<Arc<Tls>>) {
    let Some(stream) = accept_one(&listener, incoming) else { return };
    drop(listener); // one connection per transfer
    if let Ok(c) = stream.try_clone() {
        *conn.lock().unwrap_or_else(|e| e.into_inner()) = Some(c);
    }
    if incoming.is_closed() {
        return;
    }
    if let Err(e) = secure(stream, tls).and_then(|r| receive(r, incoming)) {
        incoming.fail(e);
    }
}

fn accept_one(listener: &TcpListener, incoming: &Incoming) -> Option<TcpStream> {
    while !incoming.is_closed() {
        if !net::wait_readable(listener, TICK) {
            continue;
        }
        match listener.accept() {
            Ok((s, _)) => return Some(s),
            Err(e) => {
                incoming.fail(format!("cannot accept the donor's IST connection: {}", e));
                return None;
            }
        }
    }
    None
}

/// The donor's connection, decrypted when TLS is on.
fn secure(stream: TcpStream, tls: Option<Arc<Tls>>) -> Result<Box<dyn std::io::Read>, String> {
    stream.set_read_timeout(Some(STALL)).map_err(|e| e.to_string())?;
    let Some(tls) = tls else { return Ok(Box::new(stream)) };
    let mut first = [0u8; 1];
    let speaks_tls = matches!(stream.peek(&mut first), Ok(1)) && first[0] == RECORD_HANDSHAKE;
    if !speaks_tls {
        if tls.settings.dynamic {
            return Ok(Box::new(stream));
        }
        return Err("the donor's IST connection is not TLS and this node accepts TLS only (socket.ssl)".into());
    }
    net::prepare_handshake(&stream).map_err(|e| e.to_string())?;
    let session = tls.accept(&stream).map_err(|e| format!("IST: TLS handshake with the donor failed: {}", e))?;
    stream.set_read_timeout(Some(STALL)).map_err(|e| e.to_string())?;
    Ok(Box::new(Arc::new(session).reader(stream)))
}

/// Reads the header and exactly the seqnos it announces.
fn receive(stream: Box<dyn std::io::Read>, incoming: &Incoming) -> Result<(), String> {
    let mut r = BufReader::new(stream);
    let header = match read_chunk(&mut r)? {
        Chunk::Header(h) => h,
        Chunk::Item { .. } => return Err("the donor sent a seqno before its header".into()),
    };
    incoming.header(header)?;
    for _ in 0..header.len() {
        match read_chunk(&mut r)? {
            Chunk::Item { seqno, item } => incoming.push(seqno, item)?,
            Chunk::Header(_) => return Err("the donor sent a second header".into()),
        }
    }
    Ok(())
}

fn read_chunk(r: &mut impl std::io::Read) -> Result<Chunk, String> {
    let (kind, payload) = frame::read_frame(r, MAX_CHUNK).map_err(describe)?;
    ist::decode(kind, &payload)
}

fn describe(e: FrameError) -> String {
    match e {
        // A lockstep donor's first frame is a header; anything else is
        // not a donor at all.
        FrameError::Version { version, kind } if kind == ist::HEADER => {
            format!("the donor speaks protocol {}, this node {}", version, frame::VERSION)
        }
        FrameError::Version { version, .. } => {
            format!("not a lockstep IST stream (first byte {}, expected {})", version, frame::VERSION)
        }
        FrameError::Closed => "the donor closed the connection before the transfer ended".into(),
        FrameError::Checksum => "corrupt IST chunk (checksum mismatch)".into(),
        FrameError::Io(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
            format!("no data from the donor for {:?}", STALL)
        }
        e => format!("IST connection: {}", e),
    }
}

/// The donor's side: connects to the joiner's receiver at `addr` and sends
/// the header, then `items` (which must be the header's range, in order).
pub fn send(addr: &str, header: Header, items: impl IntoIterator<Item = (Seqno, Cached)>, tls: Option<&Tls>) -> Result<(), String> {
    let (scheme, rest) = lockstep_config::node::split_scheme(addr);
    let tls = match (scheme, tls) {
        // A joiner turned to TLS before its donor (a rolling switch to
        // TLS): only plain can be offered. Its receiver takes it with
        // socket.dynamic and otherwise refuses, saying so in its log.
        (Some("ssl"), None) => {
            crate::log::info!("{} asks for TLS and this node has none (socket.ssl_*): IST goes plain, which a joiner with socket.dynamic accepts", addr);
            None
        }
        // A plain receiver (`tcp://`): with socket.dynamic, a TLS donor
        // serves it plain, as it accepts plain members (a rolling switch
        // to TLS). Without, TLS: a joiner of an older build says tcp://
        // whatever its receiver speaks.
        (Some("tcp") | None, Some(t)) if t.settings.dynamic => None,
        (_, t) => t,
    };
    // resolve() knows tcp:// alone, and still refuses any other scheme.
    let plain = match scheme {
        Some("ssl") => format!("tcp://{}", rest),
        _ => addr.to_string(),
    };
    let to = net::resolve(&plain).map_err(|e| e.to_string())?;
    let stream = TcpStream::connect_timeout(&to, CONNECT_WAIT).map_err(|e| format!("cannot connect to {}: {}", addr, e))?;
    let session = match tls {
        None => None,
        Some(t) => {
            net::prepare_handshake(&stream).map_err(|e| e.to_string())?;
            Some(t.connect(&stream, to.ip()).map_err(|e| format!("TLS handshake with {} failed: {}", addr, e))?)
        }
    };
    stream.set_write_timeout(Some(STALL)).map_err(|e| e.to_string())?;
    let out: Box<dyn Write + '_> = match &session {
        Some(s) => Box::new(s.stream(&stream)),
        None => Box::new(&stream),
    };
    let mut w = BufWriter::with_capacity(256 << 10, out);
    let io = |e: std::io::Error| format!("sending to {}: {}", addr, e);
    write_chunk(&mut w, &Chunk::Header(header)).map_err(io)?;
    let mut next = header.first;
    for (seqno, item) in items {
        if seqno != next || seqno > header.last {
            // The joiner would refuse it anyway; say why here.
            return Err(format!("seqno {} where {} was due (range {}-{})", seqno, next, header.first, header.last));
        }
        write_chunk(&mut w, &Chunk::Item { seqno, item }).map_err(io)?;
        next += 1;
    }
    if next != header.last + 1 {
        return Err(format!("only seqnos {}-{} of {}-{} to send", header.first, next - 1, header.first, header.last));
    }
    w.flush().map_err(io)
}

fn write_chunk(w: &mut impl Write, chunk: &Chunk) -> std::io::Result<()> {
    let (kind, payload) = ist::encode(chunk);
    w.write_all(&frame::header(kind, &payload))?;
    w.write_all(&payload)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gtid::Uuid;
    use bytes::Bytes;

    const SOON: Duration = Duration::from_secs(5);

    fn ws(b: &'static [u8]) -> Cached {
        Cached::Writeset { payload: Bytes::from_static(b), certified: true }
    }

    fn receiver(h: Header) -> (Receiver, Arc<Incoming>) {
        let incoming = Arc::new(Incoming::default());
        incoming.open(h.history, h.joiner);
        let r = Receiver::start("tcp://127.0.0.1:0", "tcp://127.0.0.1:0", incoming.clone(), None).unwrap();
        (r, incoming)
    }

    fn header(first: Seqno, last: Seqno) -> Header {
        Header { history: Uuid::random(), joiner: Uuid::random(), first, last }
    }

    #[test]
    fn a_transfer_crosses_the_connection_in_order() {
        let h = header(5, 7);
        let (r, incoming) = receiver(h);
        assert!(r.listening().starts_with("tcp://127.0.0.1:"));
        send(r.listening(), h, [(5, ws(b"a")), (6, Cached::View { conf: Bytes::from_static(b"view") }), (7, ws(b"c"))], None).unwrap();
        assert_eq!(incoming.wait_header(SOON), Ok(h));
        let got: Vec<_> = std::iter::from_fn(|| incoming.next(SOON).unwrap()).collect();
        assert_eq!(got, [(5, ws(b"a")), (6, Cached::View { conf: Bytes::from_static(b"view") }), (7, ws(b"c"))]);
    }

    #[test]
    fn an_ipv6_receiver_takes_an_empty_transfer() {
        let h = header(10, 9);
        let incoming = Arc::new(Incoming::default());
        incoming.open(h.history, h.joiner);
        let Ok(r) = Receiver::start("tcp://[::1]:0", "tcp://[::1]:0", incoming.clone(), None) else {
            return; // no IPv6 loopback here
        };
        assert!(r.listening().starts_with("tcp://[::1]:"), "{}", r.listening());
        send(r.listening(), h, [], None).unwrap();
        assert_eq!(incoming.next(SOON), Ok(None));
    }

    #[test]
    fn a_transfer_for_another_joiner_or_history_is_refused() {
        let h = header(1, 1);
        let (r, incoming) = receiver(h);
        let _ = send(r.listening(), Header { joiner: Uuid::random(), ..h }, [(1, ws(b"x"))], None);
        assert!(incoming.next(SOON).unwrap_err().contains("for member"));
        let (r, incoming) = receiver(h);
        let _ = send(r.listening(), Header { history: Uuid::random(), ..h }, [(1, ws(b"x"))], None);
        assert!(incoming.next(SOON).unwrap_err().contains("history"));
    }

    /// Raw bytes to a receiver, as a broken or foreign donor would send.
    fn raw(r: &Receiver, bytes: &[u8]) {
        let mut s = TcpStream::connect(net::resolve(r.listening()).unwrap()).unwrap();
        s.write_all(bytes).unwrap();
    }

    fn framed(chunk: &Chunk) -> Vec<u8> {
        let (kind, payload) = ist::encode(chunk);
        [&frame::header(kind, &payload)[..], &payload].concat()
    }

    #[test]
    fn corruption_another_version_or_a_short_stream_fail_the_transfer() {
        let h = header(1, 2);
        let good = [framed(&Chunk::Header(h)), framed(&Chunk::Item { seqno: 1, item: ws(b"abc") })].concat();
        let mut flipped = good.clone();
        *flipped.last_mut().unwrap() ^= 1;
        let mut old_peer = good.clone();
        old_peer[0] = frame::VERSION - 1;
        for (wire, why) in [
            (flipped, "checksum"),
            (old_peer, &format!("speaks protocol {}, this node {}", frame::VERSION - 1, frame::VERSION)),
            (good, "closed the connection before the transfer ended"),
            (b"GET / HTTP/1.0\r\n\r\n".to_vec(), "not a lockstep IST stream"),
        ] {
            let (r, incoming) = receiver(h);
            raw(&r, &wire);
            let e = std::iter::from_fn(|| incoming.next(SOON).transpose()).find_map(Result::err).unwrap();
            assert!(e.contains(why), "{} in {}", why, e);
        }
    }

    #[test]
    fn dropping_the_receiver_frees_its_port_and_stops_a_transfer() {
        let h = header(1, 3);
        let (r, incoming) = receiver(h);
        let addr = r.listening().to_string();
        let mut s = TcpStream::connect(net::resolve(&addr).unwrap()).unwrap();
        s.write_all(&framed(&Chunk::Header(h))).unwrap();
        assert_eq!(incoming.wait_header(SOON), Ok(h));
        drop(r);
        assert!(incoming.next(SOON).unwrap_err().contains("closed"));
        let port = addr.rsplit(':').next().unwrap();
        TcpListener::bind(format!("127.0.0.1:{}", port)).expect("the port is free again");
    }

    #[test]
    fn with_tls_the_transfer_is_encrypted_and_a_plain_donor_refused() {
        use crate::transport::tls::testing::{ca, node_files};
        let dir = tempfile::tempdir().expect("dir");
        let ca = ca("cluster");
        let tls = |name: &str| Arc::new(Tls::load(&node_files(dir.path(), name, &ca, "")).expect("load"));
        let h = header(1, 2);
        let incoming = Arc::new(Incoming::default());
        incoming.open(h.history, h.joiner);
        let r = Receiver::start("tcp://127.0.0.1:0", "tcp://127.0.0.1:0", incoming.clone(), Some(tls("joiner"))).unwrap();
        send(r.listening(), h, [(1, ws(b"a")), (2, ws(b"b"))], Some(&tls("donor"))).unwrap();
        assert_eq!(incoming.wait_header(SOON), Ok(h));
        let got: Vec<_> = std::iter::from_fn(|| incoming.next(SOON).unwrap()).collect();
        assert_eq!(got, [(1, ws(b"a")), (2, ws(b"b"))]);
        let incoming = Arc::new(Incoming::default());
        incoming.open(h.history, h.joiner);
        let r = Receiver::start("tcp://127.0.0.1:0", "tcp://127.0.0.1:0", incoming.clone(), Some(tls("joiner2"))).unwrap();
        let _ = send(r.listening(), h, [(1, ws(b"a")), (2, ws(b"b"))], None);
        let failed = incoming.wait_header(SOON).unwrap_err();
        assert!(failed.contains("accepts TLS only"), "{}", failed);
    }

    /// galera_3nodes.galera_dynamic_protocol: a TLS donor with
    /// socket.dynamic serves a plain joiner plain, and a TLS joiner, which
    /// says `ssl://`, with TLS; a plain donor serves a joiner with
    /// socket.dynamic plain.
    #[test]
    fn the_joiners_scheme_says_whether_a_dynamic_donor_speaks_tls() {
        use crate::transport::tls::testing::{ca, node_files};
        let dir = tempfile::tempdir().expect("dir");
        let ca = ca("cluster");
        let settings = |name: &str, dynamic: bool| crate::transport::tls::TlsSettings { dynamic, ..node_files(dir.path(), name, &ca, "") };
        let donor = Tls::load(&settings("donor", true)).expect("load");
        for joiner_tls in [None, Some(Arc::new(Tls::load(&settings("joiner", false)).expect("load")))] {
            let h = header(1, 1);
            let incoming = Arc::new(Incoming::default());
            incoming.open(h.history, h.joiner);
            let r = Receiver::start("tcp://127.0.0.1:0", "tcp://127.0.0.1:0", incoming.clone(), joiner_tls.clone()).unwrap();
            let scheme = if joiner_tls.is_some() { "ssl" } else { "tcp" };
            assert!(r.addr().starts_with(&format!("{}://", scheme)), "{}", r.addr());
            let to = format!("{}://{}", scheme, lockstep_config::node::split_scheme(r.listening()).1);
            send(&to, h, [(1, ws(b"a"))], Some(&donor)).unwrap_or_else(|e| panic!("{}: {}", to, e));
            assert_eq!(incoming.wait_header(SOON), Ok(h), "{}", to);
        }
        // The other way round: a joiner turned to TLS first (socket.dynamic)
        // asks its plain donor for ssl:// and takes plain.
        let h = header(1, 1);
        let incoming = Arc::new(Incoming::default());
        incoming.open(h.history, h.joiner);
        let joiner = Arc::new(Tls::load(&settings("joiner-dynamic", true)).expect("load"));
        let r = Receiver::start("tcp://127.0.0.1:0", "tcp://127.0.0.1:0", incoming.clone(), Some(joiner)).unwrap();
        assert!(r.addr().starts_with("ssl://"), "{}", r.addr());
        let to = format!("ssl://{}", lockstep_config::node::split_scheme(r.listening()).1);
        send(&to, h, [(1, ws(b"a"))], None).unwrap_or_else(|e| panic!("{}: {}", to, e));
        assert_eq!(incoming.wait_header(SOON), Ok(h), "{}", to);
        let failed = send("udp://127.0.0.1:1", header(1, 1), [], Some(&donor)).unwrap_err();
        assert!(failed.contains("scheme 'udp' is not supported"), "{}", failed);
    }
}

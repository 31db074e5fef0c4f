//! Sockets: addresses as Galera writes them, connection options, the
//! system calls std does not offer, and the registry of open sockets that
//! lets stop() and isolation cut every connection at once.

use std::collections::HashMap;
use std::io::{self, IoSlice};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::os::fd::AsRawFd;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use lockstep_config::node::{split_host_port, split_scheme, DEFAULT_PORT};

/// A connect that takes longer is a dead host. It also bounds stop(): a
/// connect in progress cannot be interrupted.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);
/// The whole handshake, each way.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(2);
/// A write that makes no progress this long means the peer stopped reading:
/// the link is closed (Galera's evs.suspect_timeout default). The bounded
/// queue drops meanwhile.
pub const WRITE_STALL: Duration = Duration::from_secs(5);

/// `tcp://host:port`, `host:port`, `host`, `[v6]:port` → a socket address
/// (port 4567 when none is given, as Galera does).
pub fn resolve(addr: &str) -> io::Result<SocketAddr> {
    let bad = |why: String| io::Error::new(io::ErrorKind::InvalidInput, format!("address '{}': {}", addr, why));
    let (scheme, rest) = split_scheme(addr.trim());
    if let Some(s) = scheme.filter(|s| *s != "tcp") {
        return Err(bad(format!("scheme '{}' is not supported (only tcp)", s)));
    }
    let (host, port) = split_host_port(rest).map_err(bad)?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    (host, port.unwrap_or(DEFAULT_PORT))
        .to_socket_addrs()?
        .next()
        .ok_or_else(|| bad("resolves to no address".into()))
}

/// Connects to `to` from `from` when given (this node's listen address):
/// peers' allowlists (wsrep_allowlist) then see the node's own address, as
/// with Galera, whose connections leave from it, rather than whatever the
/// routing table picks (127.0.0.1 for every node of a loopback cluster).
pub fn connect_from(from: Option<std::net::IpAddr>, to: &SocketAddr, timeout: Duration) -> io::Result<TcpStream> {
    let Some(ip) = from.filter(|ip| ip.is_ipv4() == to.is_ipv4()) else {
        return TcpStream::connect_timeout(to, timeout);
    };
    let s = socket2::Socket::new(socket2::Domain::for_address(*to), socket2::Type::STREAM, Some(socket2::Protocol::TCP))?;
    s.bind(&SocketAddr::new(ip, 0).into())?;
    s.connect_timeout(&(*to).into(), timeout)?;
    Ok(s.into())
}

/// Options every link socket gets: no Nagle delay (Raft messages are small
/// and latency is the commit path), and TCP keepalive so a peer whose host
/// vanished is noticed in seconds even when no data is flowing.
pub fn tune(s: &TcpStream) -> io::Result<()> {
    s.set_nodelay(true)?;
    set_opt(s, libc::SOL_SOCKET, libc::SO_KEEPALIVE, 1)?;
    set_opt(s, libc::IPPROTO_TCP, libc::TCP_KEEPIDLE, 5)?;
    set_opt(s, libc::IPPROTO_TCP, libc::TCP_KEEPINTVL, 1)?;
    set_opt(s, libc::IPPROTO_TCP, libc::TCP_KEEPCNT, 5)
}

/// Blocking, with the handshake's time limit, tuned for a link.
pub fn prepare_handshake(s: &TcpStream) -> io::Result<()> {
    s.set_nonblocking(false)?;
    s.set_read_timeout(Some(HANDSHAKE_TIMEOUT))?;
    s.set_write_timeout(Some(HANDSHAKE_TIMEOUT))?;
    tune(s)
}

fn set_opt(s: &TcpStream, level: libc::c_int, name: libc::c_int, value: libc::c_int) -> io::Result<()> {
    let len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: a valid socket and a c_int option value of the given length.
    let r = unsafe { libc::setsockopt(s.as_raw_fd(), level, name, (&value as *const libc::c_int).cast(), len) };
    if r == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
}

/// A vectored write with MSG_NOSIGNAL: std's write_vectored is writev,
/// which raises SIGPIPE on a closed connection, and inside mariadbd nobody
/// promised us SIGPIPE is ignored.
pub fn send_vectored(s: &TcpStream, slices: &[IoSlice<'_>]) -> io::Result<usize> {
    sendmsg(s, slices, 0)
}

/// All of `buf`, blocking (within the socket's write timeout).
pub fn send_all(s: &TcpStream, mut buf: &[u8]) -> io::Result<()> {
    while !buf.is_empty() {
        match sendmsg(s, &[IoSlice::new(buf)], 0) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => buf = &buf[n..],
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// `send_vectored` that never waits: what the socket's buffer does not
/// take now is left (WouldBlock when nothing fits), even on a blocking
/// socket (MSG_DONTWAIT is per call).
pub fn send_vectored_now(s: &TcpStream, slices: &[IoSlice<'_>]) -> io::Result<usize> {
    sendmsg(s, slices, libc::MSG_DONTWAIT)
}

fn sendmsg(s: &TcpStream, slices: &[IoSlice<'_>], flags: libc::c_int) -> io::Result<usize> {
    // SAFETY: msghdr is plain data; zeroed is a valid empty header.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    // IoSlice is ABI-compatible with iovec on Unix (documented); the kernel
    // only reads through this pointer. IOV_MAX is 1024 on Linux: the rest
    // goes in the next call.
    msg.msg_iov = slices.as_ptr() as *mut libc::iovec;
    msg.msg_iovlen = slices.len().min(1024) as _;
    // SAFETY: msg points at live slices for the duration of the call.
    let n = unsafe { libc::sendmsg(s.as_raw_fd(), &msg, libc::MSG_NOSIGNAL | flags) };
    if n < 0 { Err(io::Error::last_os_error()) } else { Ok(n as usize) }
}

/// Waits up to `timeout` for a connection to accept.
pub fn wait_readable(l: &TcpListener, timeout: Duration) -> bool {
    let mut fd = libc::pollfd { fd: l.as_raw_fd(), events: libc::POLLIN, revents: 0 };
    // SAFETY: one valid pollfd.
    let n = unsafe { libc::poll(&mut fd, 1, timeout.as_millis() as libc::c_int) };
    n > 0
}

/// Every socket this transport has open, so stop() and isolation can shut
/// them all down: that wakes any thread blocked reading or writing them.
#[derive(Default)]
pub struct Sockets {
    open: Mutex<SocketTable>,
}

#[derive(Default)]
struct SocketTable {
    by_id: HashMap<u64, TcpStream>,
    next: u64,
    /// After stop(), nothing new is registered (so nothing escapes the sweep).
    closed: bool,
}

/// Unregisters its socket when dropped.
pub struct Registered {
    sockets: Arc<Sockets>,
    id: u64,
}

impl Sockets {
    pub fn register(self: &Arc<Self>, s: &TcpStream) -> io::Result<Registered> {
        let clone = s.try_clone()?;
        let mut t = self.open.lock().unwrap_or_else(|e| e.into_inner());
        if t.closed {
            return Err(io::Error::new(io::ErrorKind::NotConnected, "transport stopped"));
        }
        t.next += 1;
        let id = t.next;
        t.by_id.insert(id, clone);
        Ok(Registered { sockets: self.clone(), id })
    }

    /// Shuts every socket down; with `close_for_good`, refuses new ones.
    pub fn shutdown_all(&self, close_for_good: bool) {
        let mut t = self.open.lock().unwrap_or_else(|e| e.into_inner());
        t.closed |= close_for_good;
        for s in t.by_id.values() {
            let _ = s.shutdown(Shutdown::Both);
        }
    }

    #[cfg(test)]
    pub fn count(&self) -> usize {
        self.open.lock().unwrap_or_else(|e| e.into_inner()).by_id.len()
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.sockets.open.lock().unwrap_or_else(|e| e.into_inner()).by_id.remove(&self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_in_galera_forms() {
        assert_eq!(resolve("tcp://127.0.0.1:4568").ok(), "127.0.0.1:4568".parse().ok());
        assert_eq!(resolve("127.0.0.1").ok(), "127.0.0.1:4567".parse().ok());
        assert_eq!(resolve("[::1]:9").ok(), "[::1]:9".parse().ok());
        assert!(resolve("ssl://127.0.0.1:1").is_err());
        assert!(resolve("127.0.0.1:99999").is_err());
    }
}

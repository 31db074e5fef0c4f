//! The metrics endpoint (`lockstep.metrics_addr`): Prometheus text on
//! `GET /metrics`, for operators who scrape a node directly rather than
//! through mysqld_exporter, and for what the exporter cannot carry (text
//! values, a latency histogram).
//!
//! One thread serves one connection at a time, each with read and write
//! timeouts, and reads the node only through `stats()`, as SHOW STATUS
//! does: a malformed, slow or hostile client costs this thread, never
//! replication. The server holds the node weakly: it never keeps a
//! closed provider alive.

mod text;

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::log;
use crate::node::Node;

pub use text::render;

/// How long a client may take to send its request or read the answer.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(2);
/// The longest request head read: a GET needs a few hundred bytes.
const MAX_REQUEST: usize = 8192;

pub struct MetricsServer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl MetricsServer {
    /// Listens on `addr` (host:port) and serves `node` until dropped.
    pub fn start(addr: &str, node: Weak<Node>) -> io::Result<MetricsServer> {
        let listener = TcpListener::bind(addr)?;
        let addr = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new().name("lockstep-metrics".into()).spawn(move || serve(listener, &flag, &node))?;
        log::info!("serving Prometheus metrics on http://{}/metrics", addr);
        Ok(MetricsServer { addr, stop, thread: Some(thread) })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the blocking accept; it sees the flag and returns.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn serve(listener: TcpListener, stop: &AtomicBool, node: &Weak<Node>) {
    for conn in listener.incoming() {
        if stop.load(Ordering::SeqCst) {
            return;
        }
        let Ok(stream) = conn else { continue };
        let page = || node.upgrade().map(|n| render(&n));
        if let Err(e) = answer(stream, page) {
            log::debug!("metrics client: {}", e);
        }
    }
}

/// Reads one request and answers it; the connection then closes.
fn answer(mut stream: TcpStream, page: impl FnOnce() -> Option<String>) -> io::Result<()> {
    stream.set_write_timeout(Some(CLIENT_TIMEOUT))?;
    let head = read_head(&mut stream)?;
    let (status, body) = match route(&head) {
        Ok(()) => match page() {
            Some(body) => ("200 OK", body),
            None => ("503 Service Unavailable", "the provider is closing\n".into()),
        },
        Err(status) => (status, format!("{status}\n")),
    };
    let kind = if status.starts_with("200") { "application/openmetrics-text; version=1.0.0; charset=utf-8" } else { "text/plain; charset=utf-8" };
    let reply = format!("HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len());
    stream.write_all(reply.as_bytes())
}

/// The request up to its blank line (or what fits in `MAX_REQUEST`),
/// within `CLIENT_TIMEOUT` in all: a client that sends a byte now and
/// then does not hold the thread for longer than one that sends nothing.
fn read_head(stream: &mut TcpStream) -> io::Result<Vec<u8>> {
    let deadline = std::time::Instant::now() + CLIENT_TIMEOUT;
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < MAX_REQUEST {
        let left = deadline.checked_duration_since(std::time::Instant::now()).filter(|d| !d.is_zero());
        let Some(left) = left else { return Err(io::Error::new(io::ErrorKind::TimedOut, "request not complete in time")) };
        stream.set_read_timeout(Some(left))?;
        let n = stream.read(&mut buf)?;
        if n == 0 {
            break;
        }
        head.extend_from_slice(&buf[..n]);
    }
    Ok(head)
}

/// Only `GET /metrics` (with or without a query) has a page.
fn route(head: &[u8]) -> Result<(), &'static str> {
    let line = head.split(|&b| b == b'\n').next().unwrap_or_default();
    let line = std::str::from_utf8(line).map_err(|_| "400 Bad Request")?.trim_end();
    let mut parts = line.split(' ');
    let (method, target, version) = (parts.next(), parts.next(), parts.next());
    if !version.is_some_and(|v| v.starts_with("HTTP/")) || parts.next().is_some() {
        return Err("400 Bad Request");
    }
    if method != Some("GET") {
        return Err("405 Method Not Allowed");
    }
    match target.map(|t| t.split('?').next().unwrap_or_default()) {
        Some("/metrics") => Ok(()),
        _ => Err("404 Not Found"),
    }
}

#[cfg(test)]
mod tests;

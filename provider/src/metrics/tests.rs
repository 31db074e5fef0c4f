use super::*;

fn fetch(addr: SocketAddr, request: &[u8]) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(request).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

#[test]
fn requests_other_than_get_metrics_are_refused_by_their_status() {
    assert_eq!(route(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"), Ok(()));
    assert_eq!(route(b"GET /metrics?x=1 HTTP/1.0\r\n\r\n"), Ok(()));
    assert_eq!(route(b"GET / HTTP/1.1\r\n\r\n"), Err("404 Not Found"));
    assert_eq!(route(b"POST /metrics HTTP/1.1\r\n\r\n"), Err("405 Method Not Allowed"));
    assert_eq!(route(b"\xff\xfe garbage"), Err("400 Bad Request"));
    assert_eq!(route(b""), Err("400 Bad Request"));
}

#[test]
fn a_silent_client_does_not_keep_the_next_one_waiting_past_the_timeout() {
    let server = MetricsServer::start("127.0.0.1:0", Weak::new()).unwrap();
    let addr = server.addr();
    // Connects and says nothing.
    let _silent = TcpStream::connect(addr).unwrap();
    let started = std::time::Instant::now();
    let reply = fetch(addr, b"GET /metrics HTTP/1.1\r\n\r\n");
    // No node behind it: the provider is closing.
    assert!(reply.starts_with("HTTP/1.1 503"), "{reply}");
    assert!(started.elapsed() < CLIENT_TIMEOUT * 3, "{:?}", started.elapsed());
    let reply = fetch(addr, b"BREW /coffee HTCPCP/1.0\r\n\r\n");
    assert!(reply.starts_with("HTTP/1.1 400"), "{reply}");
    drop(server);
    assert!(TcpStream::connect(addr).is_err(), "still listening after drop");
}

#[test]
fn a_client_that_trickles_its_request_is_cut_off_at_the_timeout() {
    let server = MetricsServer::start("127.0.0.1:0", Weak::new()).unwrap();
    let addr = server.addr();
    let trickle = std::thread::spawn(move || {
        let mut s = TcpStream::connect(addr).unwrap();
        // A byte every half second, never the blank line.
        for _ in 0..12 {
            if s.write_all(b"G").is_err() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(500));
        }
    });
    std::thread::sleep(std::time::Duration::from_millis(100));
    let started = std::time::Instant::now();
    let reply = fetch(addr, b"GET /metrics HTTP/1.1\r\n\r\n");
    assert!(reply.starts_with("HTTP/1.1 503"), "{reply}");
    assert!(started.elapsed() < CLIENT_TIMEOUT + std::time::Duration::from_secs(1), "{:?}", started.elapsed());
    let _ = trickle.join();
}

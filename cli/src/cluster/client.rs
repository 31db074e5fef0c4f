//! A small MySQL/MariaDB client: text protocol over the server's unix
//! socket, user root with an empty password (mariadb-install-db
//! `--auth-root-authentication-method=normal`), no TLS, no prepared
//! statements, no compression. That is all a local test cluster needs, and
//! it costs no dependency: the `mysql` crate (minimal features) brings ~100
//! crates and ~30 s of CI build time.
//!
//! Protocol reference: MariaDB's "Client/Server Protocol" pages (packets,
//! handshake v10, HandshakeResponse41, text resultset, OK/ERR/EOF).

use super::{Error, Result};
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

const MAX_PAYLOAD: usize = 0xFF_FFFF;
const COM_QUIT: u8 = 0x01;
const COM_QUERY: u8 = 0x03;
const COM_PING: u8 = 0x0e;

// Capability flags we ask for.
const CLIENT_LONG_PASSWORD: u32 = 1;
const CLIENT_LONG_FLAG: u32 = 4;
const CLIENT_PROTOCOL_41: u32 = 0x200;
const CLIENT_TRANSACTIONS: u32 = 0x2000;
const CLIENT_SECURE_CONNECTION: u32 = 0x8000;
const CLIENT_MULTI_STATEMENTS: u32 = 0x1_0000;
const CLIENT_MULTI_RESULTS: u32 = 0x2_0000;
const CLIENT_PLUGIN_AUTH: u32 = 0x8_0000;
const CAPABILITIES: u32 = CLIENT_LONG_PASSWORD
    | CLIENT_LONG_FLAG
    | CLIENT_PROTOCOL_41
    | CLIENT_TRANSACTIONS
    | CLIENT_SECURE_CONNECTION
    | CLIENT_MULTI_STATEMENTS
    | CLIENT_MULTI_RESULTS
    | CLIENT_PLUGIN_AUTH;
/// utf8mb4_general_ci
const CHARSET: u8 = 45;
/// Server status flag: another result set follows this one.
const SERVER_MORE_RESULTS_EXISTS: u16 = 0x0008;
/// Default socket read/write timeout: long enough for a commit that waits
/// on flow control, short enough that a frozen node fails a test clearly.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// The outcome of one statement: rows for a SELECT-like statement, counts
/// for the rest.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QueryResult {
    pub columns: Vec<String>,
    /// `None` is SQL NULL.
    pub rows: Vec<Vec<Option<String>>>,
    pub affected_rows: u64,
    pub last_insert_id: u64,
    pub warnings: u16,
}

impl QueryResult {
    /// Rows with NULL spelled `NULL`, as the mariadb client prints it.
    pub fn text_rows(&self) -> Vec<Vec<String>> {
        let cell = |c: &Option<String>| c.clone().unwrap_or_else(|| "NULL".into());
        self.rows
            .iter()
            .map(|row| row.iter().map(cell).collect())
            .collect()
    }
}

/// One persistent client connection. `Send`, so a workload thread can own one.
#[derive(Debug)]
pub struct Conn {
    stream: UnixStream,
    socket: PathBuf,
    /// Set after an I/O error or timeout: the protocol state is unknown,
    /// so every later call fails instead of reading a stale reply.
    broken: bool,
    seq: u8,
    pub server_version: String,
    pub connection_id: u32,
}

impl Conn {
    /// Connects as root over the unix socket, with [`DEFAULT_TIMEOUT`].
    pub fn connect(socket: &Path) -> Result<Conn> {
        Conn::connect_timeout(socket, DEFAULT_TIMEOUT)
    }

    /// Connects with `timeout` for every socket read and write.
    pub fn connect_timeout(socket: &Path, timeout: Duration) -> Result<Conn> {
        let context = || format!("connecting to {}", socket.display());
        let stream = UnixStream::connect(socket).map_err(|e| Error::io(context(), e))?;
        let mut conn = Conn {
            stream,
            socket: socket.to_path_buf(),
            broken: false,
            seq: 0,
            server_version: String::new(),
            connection_id: 0,
        };
        conn.set_timeout(timeout)?;
        conn.handshake().map_err(|e| match e {
            Error::Io { context: c, source } => Error::io(format!("{} ({c})", context()), source),
            other => other,
        })?;
        Ok(conn)
    }

    pub fn set_timeout(&self, timeout: Duration) -> Result<()> {
        let set = self
            .stream
            .set_read_timeout(Some(timeout))
            .and_then(|_| self.stream.set_write_timeout(Some(timeout)));
        set.map_err(|e| Error::io("setting socket timeouts", e))
    }

    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// Runs statements, returns the affected rows of the last one.
    pub fn execute(&mut self, sql: &str) -> Result<u64> {
        Ok(self.last_result(sql)?.affected_rows)
    }

    /// Runs statements, returns the rows of the last one (NULL as `NULL`).
    pub fn query(&mut self, sql: &str) -> Result<Vec<Vec<String>>> {
        Ok(self.last_result(sql)?.text_rows())
    }

    /// The first column of the first row of the last statement, if any.
    pub fn query_value(&mut self, sql: &str) -> Result<Option<String>> {
        let result = self.last_result(sql)?;
        Ok(result
            .rows
            .into_iter()
            .next()
            .and_then(|row| row.into_iter().next())
            .flatten())
    }

    /// Runs one or more `;`-separated statements; one result per statement.
    /// Stops at the first statement the server refuses (its error).
    pub fn query_results(&mut self, sql: &str) -> Result<Vec<QueryResult>> {
        self.guard(|c| c.run_query(sql))
    }

    /// COM_PING: whether the server still answers on this connection.
    pub fn ping(&mut self) -> Result<()> {
        self.guard(|c| {
            c.seq = 0;
            c.write_packet(&[COM_PING])?;
            let reply = c.read_packet()?;
            parse_ok_or_err(&reply).map(|_| ())
        })
    }

    fn last_result(&mut self, sql: &str) -> Result<QueryResult> {
        let mut results = self.query_results(sql)?;
        Ok(results.pop().unwrap_or_default())
    }

    /// Marks the connection broken on transport errors (not on SQL errors,
    /// after which the server is ready for the next statement).
    fn guard<T>(&mut self, f: impl FnOnce(&mut Conn) -> Result<T>) -> Result<T> {
        if self.broken {
            return Err(Error::msg(format!(
                "connection to {} is unusable after an earlier I/O error or timeout: reconnect",
                self.socket.display()
            )));
        }
        let result = f(self);
        if matches!(
            result,
            Err(Error::Io { .. }) | Err(Error::Msg(_)) | Err(Error::Timeout(_))
        ) {
            self.broken = true;
        }
        result
    }

    fn handshake(&mut self) -> Result<()> {
        let greeting = self.read_packet()?;
        if greeting.first() == Some(&0xFF) {
            return Err(parse_err(&greeting));
        }
        let hello = parse_greeting(&greeting)?;
        self.server_version = hello.server_version;
        self.connection_id = hello.connection_id;
        self.write_packet(&handshake_response())?;
        self.finish_auth()
    }

    /// OK ends authentication; an auth-switch request (0xFE) asks for the
    /// answer of another plugin, which for an empty password is empty.
    fn finish_auth(&mut self) -> Result<()> {
        for _ in 0..4 {
            let reply = self.read_packet()?;
            match reply.first() {
                Some(0x00) => return Ok(()),
                Some(0xFF) => return Err(parse_err(&reply)),
                Some(0xFE) => self.write_packet(&[])?,
                _ => return Err(protocol("unexpected packet during authentication")),
            }
        }
        Err(protocol("authentication did not finish after 4 rounds"))
    }

    fn run_query(&mut self, sql: &str) -> Result<Vec<QueryResult>> {
        self.seq = 0;
        let mut packet = Vec::with_capacity(sql.len() + 1);
        packet.push(COM_QUERY);
        packet.extend_from_slice(sql.as_bytes());
        self.write_packet(&packet)?;
        let mut results = Vec::new();
        // Each loop reads one statement's result; the server says whether
        // more follow. Bounded by the number of statements it can send back.
        loop {
            let (result, more) = self.read_result()?;
            results.push(result);
            if !more {
                return Ok(results);
            }
            if results.len() > 100_000 {
                return Err(protocol("more than 100000 results for one query"));
            }
        }
    }

    /// One result: OK packet, or column count + columns + rows. Returns it
    /// and whether another result follows.
    fn read_result(&mut self) -> Result<(QueryResult, bool)> {
        let first = self.read_packet()?;
        match first.first() {
            Some(0x00) => {
                let ok = parse_ok_or_err(&first)?;
                let more = ok.status & SERVER_MORE_RESULTS_EXISTS != 0;
                let result = QueryResult {
                    affected_rows: ok.affected_rows,
                    last_insert_id: ok.last_insert_id,
                    warnings: ok.warnings,
                    ..QueryResult::default()
                };
                Ok((result, more))
            }
            Some(0xFF) => Err(parse_err(&first)),
            Some(0xFB) => Err(protocol(
                "LOAD DATA LOCAL INFILE is not supported by this client",
            )),
            Some(_) => self.read_rows(&first),
            None => Err(protocol("empty reply to a query")),
        }
    }

    fn read_rows(&mut self, first: &[u8]) -> Result<(QueryResult, bool)> {
        let mut cursor = Cursor::new(first);
        let count = cursor.lenenc_int()? as usize;
        let mut result = QueryResult::default();
        for _ in 0..count {
            let def = self.read_packet()?;
            result.columns.push(column_name(&def)?);
        }
        let eof = self.read_packet()?;
        if !is_eof(&eof) {
            return Err(protocol("missing EOF after column definitions"));
        }
        // Bounded by what the server sends: it ends every result with EOF.
        loop {
            let row = self.read_packet()?;
            if is_eof(&row) {
                let status = u16::from_le_bytes([row[3], row[4]]);
                result.warnings = u16::from_le_bytes([row[1], row[2]]);
                return Ok((result, status & SERVER_MORE_RESULTS_EXISTS != 0));
            }
            if row.first() == Some(&0xFF) {
                return Err(parse_err(&row));
            }
            result.rows.push(parse_row(&row, count)?);
        }
    }

    /// Reads one logical packet (joining 16 MiB continuation packets).
    fn read_packet(&mut self) -> Result<Vec<u8>> {
        let mut payload = Vec::new();
        for _ in 0..1024 {
            let mut header = [0u8; 4];
            self.read_exact(&mut header)?;
            let len = u32::from_le_bytes([header[0], header[1], header[2], 0]) as usize;
            self.seq = header[3].wrapping_add(1);
            let start = payload.len();
            payload.resize(start + len, 0);
            self.read_exact(&mut payload[start..])?;
            if len < MAX_PAYLOAD {
                return Ok(payload);
            }
        }
        Err(protocol("packet larger than 16 GiB"))
    }

    fn read_exact(&mut self, buf: &mut [u8]) -> Result<()> {
        self.stream
            .read_exact(buf)
            .map_err(|e| self.transport_error("reading from", e))
    }

    fn write_packet(&mut self, payload: &[u8]) -> Result<()> {
        let mut out = Vec::with_capacity(payload.len() + 8);
        // A payload that is an exact multiple of the maximum ends with an
        // empty packet, so the server knows it is complete.
        let needs_empty_tail = payload.len().is_multiple_of(MAX_PAYLOAD);
        for chunk in payload.chunks(MAX_PAYLOAD) {
            self.push_header(&mut out, chunk.len());
            out.extend_from_slice(chunk);
        }
        if needs_empty_tail {
            self.push_header(&mut out, 0);
        }
        self.stream
            .write_all(&out)
            .map_err(|e| self.transport_error("writing to", e))
    }

    fn push_header(&mut self, out: &mut Vec<u8>, len: usize) {
        out.extend_from_slice(&(len as u32).to_le_bytes()[..3]);
        out.push(self.seq);
        self.seq = self.seq.wrapping_add(1);
    }

    fn transport_error(&self, doing: &str, e: std::io::Error) -> Error {
        let timed_out = matches!(
            e.kind(),
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
        );
        if timed_out {
            return Error::Timeout(format!(
                "no answer from the server at {} (socket timeout)",
                self.socket.display()
            ));
        }
        Error::io(format!("{doing} {}", self.socket.display()), e)
    }
}

impl Drop for Conn {
    /// Says goodbye so the server does not log "Aborted connection".
    fn drop(&mut self) {
        if !self.broken {
            self.seq = 0;
            let _ = self
                .stream
                .set_write_timeout(Some(Duration::from_millis(200)));
            let _ = self.write_packet(&[COM_QUIT]);
        }
    }
}

struct Greeting {
    server_version: String,
    connection_id: u32,
}

fn parse_greeting(packet: &[u8]) -> Result<Greeting> {
    let mut c = Cursor::new(packet);
    let protocol_version = c.u8()?;
    if protocol_version != 10 {
        return Err(protocol("server speaks an unknown handshake version"));
    }
    let server_version = c.nul_str()?;
    let connection_id = c.u32()?;
    Ok(Greeting {
        server_version,
        connection_id,
    })
}

/// HandshakeResponse41 for root with an empty password.
fn handshake_response() -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    out.extend_from_slice(&CAPABILITIES.to_le_bytes());
    out.extend_from_slice(&(MAX_PAYLOAD as u32).to_le_bytes());
    out.push(CHARSET);
    out.extend_from_slice(&[0u8; 23]); // filler (MariaDB's extended caps: none)
    out.extend_from_slice(b"root\0");
    out.push(0); // auth response length: empty password
    out.extend_from_slice(b"mysql_native_password\0");
    out
}

struct OkPacket {
    affected_rows: u64,
    last_insert_id: u64,
    status: u16,
    warnings: u16,
}

fn parse_ok_or_err(packet: &[u8]) -> Result<OkPacket> {
    if packet.first() == Some(&0xFF) {
        return Err(parse_err(packet));
    }
    let mut c = Cursor::new(packet);
    if c.u8()? != 0x00 {
        return Err(protocol("expected an OK packet"));
    }
    let affected_rows = c.lenenc_int()?;
    let last_insert_id = c.lenenc_int()?;
    let status = c.u16()?;
    let warnings = c.u16()?;
    Ok(OkPacket {
        affected_rows,
        last_insert_id,
        status,
        warnings,
    })
}

/// ERR packet: 0xFF, code, '#', 5-byte SQLSTATE, message.
fn parse_err(packet: &[u8]) -> Error {
    if packet.len() < 3 {
        return protocol("truncated error packet");
    }
    let code = u16::from_le_bytes([packet[1], packet[2]]);
    let rest = &packet[3..];
    let (state, message) = match rest.first() {
        Some(b'#') if rest.len() >= 6 => (&rest[1..6], &rest[6..]),
        _ => (&b"HY000"[..], rest),
    };
    Error::Sql {
        code,
        state: String::from_utf8_lossy(state).into_owned(),
        message: String::from_utf8_lossy(message).into_owned(),
    }
}

/// EOF packets start with 0xFE and are short; a row can also start with
/// 0xFE (a lenenc string of 2^24+ bytes) but is then long.
fn is_eof(packet: &[u8]) -> bool {
    packet.first() == Some(&0xFE) && packet.len() < 9 && packet.len() >= 5
}

/// Column definition 41: catalog, schema, table, org_table, name, ...
fn column_name(def: &[u8]) -> Result<String> {
    let mut c = Cursor::new(def);
    for _ in 0..4 {
        c.lenenc_bytes()?;
    }
    Ok(String::from_utf8_lossy(c.lenenc_bytes()?).into_owned())
}

fn parse_row(packet: &[u8], columns: usize) -> Result<Vec<Option<String>>> {
    let mut c = Cursor::new(packet);
    let mut row = Vec::with_capacity(columns);
    for _ in 0..columns {
        if c.peek() == Some(0xFB) {
            c.u8()?;
            row.push(None);
        } else {
            row.push(Some(
                String::from_utf8_lossy(c.lenenc_bytes()?).into_owned(),
            ));
        }
    }
    Ok(row)
}

fn protocol(what: &str) -> Error {
    Error::msg(format!("MySQL protocol error: {what}"))
}

/// Reads little-endian integers and strings out of one packet.
struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn new(data: &'a [u8]) -> Self {
        Cursor { data, pos: 0 }
    }

    fn peek(&self) -> Option<u8> {
        self.data.get(self.pos).copied()
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|end| *end <= self.data.len());
        let end = end.ok_or_else(|| protocol("truncated packet"))?;
        let bytes = &self.data[self.pos..end];
        self.pos = end;
        Ok(bytes)
    }

    fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }

    fn u16(&mut self) -> Result<u16> {
        let b = self.take(2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }

    fn u32(&mut self) -> Result<u32> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn uint(&mut self, n: usize) -> Result<u64> {
        let bytes = self.take(n)?;
        Ok(bytes
            .iter()
            .rev()
            .fold(0u64, |acc, b| (acc << 8) | *b as u64))
    }

    fn lenenc_int(&mut self) -> Result<u64> {
        match self.u8()? {
            n @ 0..=0xFA => Ok(n as u64),
            0xFC => self.uint(2),
            0xFD => self.uint(3),
            0xFE => self.uint(8),
            _ => Err(protocol("bad length-encoded integer")),
        }
    }

    fn lenenc_bytes(&mut self) -> Result<&'a [u8]> {
        let len = self.lenenc_int()? as usize;
        self.take(len)
    }

    fn nul_str(&mut self) -> Result<String> {
        let rest = &self.data[self.pos..];
        let len = rest
            .iter()
            .position(|b| *b == 0)
            .ok_or_else(|| protocol("unterminated string"))?;
        self.pos += len + 1;
        Ok(String::from_utf8_lossy(&rest[..len]).into_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lenenc_integers() {
        let data = [
            0x05, 0xFC, 0x34, 0x12, 0xFD, 1, 2, 3, 0xFE, 1, 0, 0, 0, 0, 0, 0, 0x80,
        ];
        let mut c = Cursor::new(&data);
        assert_eq!(c.lenenc_int().unwrap(), 5);
        assert_eq!(c.lenenc_int().unwrap(), 0x1234);
        assert_eq!(c.lenenc_int().unwrap(), 0x030201);
        assert_eq!(c.lenenc_int().unwrap(), 0x8000_0000_0000_0001);
        assert!(c.lenenc_int().is_err());
    }

    #[test]
    fn rows_with_null() {
        let packet = [1, b'7', 0xFB, 3, b'a', b'b', b'c'];
        assert_eq!(
            parse_row(&packet, 3).unwrap(),
            vec![Some("7".into()), None, Some("abc".into())]
        );
        assert!(parse_row(&packet[..5], 3).is_err());
    }

    #[test]
    fn error_packet_carries_code_and_state() {
        let mut packet = vec![0xFF, 0xBD, 0x04, b'#'];
        packet.extend_from_slice(b"40001Deadlock found");
        let err = parse_err(&packet);
        assert_eq!(err.sql_code(), Some(1213));
        assert!(err.is_deadlock());
        assert_eq!(err.to_string(), "ERROR 1213 (40001): Deadlock found");
    }

    #[test]
    fn ok_packet() {
        let ok = parse_ok_or_err(&[0x00, 0x03, 0xFC, 0x00, 0x01, 0x08, 0x00, 0x02, 0x00]).unwrap();
        assert_eq!(
            (ok.affected_rows, ok.last_insert_id, ok.status, ok.warnings),
            (3, 256, 8, 2)
        );
    }

    #[test]
    fn eof_detection() {
        assert!(is_eof(&[0xFE, 0, 0, 2, 0]));
        assert!(!is_eof(&[0xFE, 0, 0, 2, 0, 0, 0, 0, 0, 0]));
        assert!(!is_eof(&[0x01, b'x']));
    }

    #[test]
    fn greeting_and_response() {
        let mut greeting = vec![10];
        greeting.extend_from_slice(b"10.11.19-MariaDB\0");
        greeting.extend_from_slice(&42u32.to_le_bytes());
        let hello = parse_greeting(&greeting).unwrap();
        assert_eq!(
            (hello.server_version.as_str(), hello.connection_id),
            ("10.11.19-MariaDB", 42)
        );
        let response = handshake_response();
        assert_eq!(&response[32..37], b"root\0");
        assert!(response.ends_with(b"\0mysql_native_password\0"));
    }
}

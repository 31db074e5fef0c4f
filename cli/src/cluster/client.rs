//! A client connection to a local node: the `mysql` crate over the
//! server's unix socket, as root with an empty password (mariadb-install-db
//! `--auth-root-authentication-method=normal`), or over TCP as a given
//! user (a replication user's rights, checked as that user). This file only adapts the
//! crate to what the launcher, workloads and tests ask: every statement's
//! result as text, errors as [`Error`] (SQL code, timeout, I/O), and a
//! connection that refuses further use once its stream is in doubt.

use super::{Error, Result};
use mysql::prelude::Queryable;
use std::path::Path;
use std::time::Duration;

/// Default socket read/write timeout: long enough for a commit that waits
/// on flow control, short enough that a frozen node fails a test clearly.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// The largest statement we send. The crate would otherwise ask the server
/// for `@@max_allowed_packet` on every connect (one more round trip); the
/// server still enforces its own limit.
const MAX_PACKET: usize = 1 << 30;

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
pub struct Conn {
    conn: mysql::Conn,
    /// Where it goes (a socket path, or host:port), for messages.
    server: String,
    /// Set after an I/O error or timeout: the protocol state is unknown,
    /// so every later call fails instead of reading a stale reply.
    broken: bool,
}

impl std::fmt::Debug for Conn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Conn({}, id {})", self.server, self.conn.connection_id())
    }
}

impl Conn {
    /// Connects as root over the unix socket, with [`DEFAULT_TIMEOUT`].
    pub fn connect(socket: &Path) -> Result<Conn> {
        Conn::connect_timeout(socket, DEFAULT_TIMEOUT)
    }

    /// Connects with `timeout` for every socket read and write.
    pub fn connect_timeout(socket: &Path, timeout: Duration) -> Result<Conn> {
        let opts = mysql::OptsBuilder::new()
            .socket(Some(socket.to_string_lossy().into_owned()))
            .user(Some("root"))
            .prefer_socket(false)
            .max_allowed_packet(Some(MAX_PACKET))
            .read_timeout(Some(timeout))
            .write_timeout(Some(timeout));
        Conn::open(opts, socket.display().to_string())
    }

    /// Connects over TCP as `user`, with [`DEFAULT_TIMEOUT`].
    pub fn connect_tcp(host: &str, port: u16, user: &str, password: &str) -> Result<Conn> {
        let opts = mysql::OptsBuilder::new()
            .ip_or_hostname(Some(host))
            .tcp_port(port)
            .user(Some(user))
            .pass(Some(password))
            .max_allowed_packet(Some(MAX_PACKET))
            .read_timeout(Some(DEFAULT_TIMEOUT))
            .write_timeout(Some(DEFAULT_TIMEOUT));
        Conn::open(opts, format!("{user}@{host}:{port}"))
    }

    fn open(opts: mysql::OptsBuilder, server: String) -> Result<Conn> {
        let conn = mysql::Conn::new(opts).map_err(|e| convert(e, &format!("connecting to {server}")))?;
        Ok(Conn { conn, server, broken: false })
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
        self.guard(|c| read_results(c.conn.query_iter(sql)?))
    }

    /// COM_PING: whether the server still answers on this connection.
    pub fn ping(&mut self) -> Result<()> {
        self.guard(|c| c.conn.ping())
    }

    fn last_result(&mut self, sql: &str) -> Result<QueryResult> {
        let mut results = self.query_results(sql)?;
        Ok(results.pop().unwrap_or_default())
    }

    /// Converts the crate's error, and marks the connection broken on
    /// anything but an SQL error (after which the server is ready for the
    /// next statement).
    fn guard<T>(&mut self, f: impl FnOnce(&mut Conn) -> mysql::Result<T>) -> Result<T> {
        if self.broken {
            return Err(Error::msg(format!(
                "connection to {} is unusable after an earlier I/O error or timeout: reconnect",
                self.server
            )));
        }
        let context = format!("talking to {}", self.server);
        let result = f(self).map_err(|e| convert(e, &context));
        if matches!(result, Err(ref e) if e.sql_code().is_none()) {
            self.broken = true;
        }
        result
    }
}

/// Every result set of a text query, rows as text. A later statement's
/// error comes out of its set's rows.
fn read_results(mut sets: mysql::QueryResult<'_, '_, '_, mysql::Text>) -> mysql::Result<Vec<QueryResult>> {
    let mut results = Vec::new();
    while let Some(set) = sets.iter() {
        let mut result = QueryResult {
            columns: set.columns().as_ref().iter().map(|c| c.name_str().into_owned()).collect(),
            affected_rows: set.affected_rows(),
            last_insert_id: set.last_insert_id().unwrap_or(0),
            warnings: set.warnings(),
            rows: Vec::new(),
        };
        for row in set {
            result.rows.push(row?.unwrap().into_iter().map(text).collect());
        }
        results.push(result);
    }
    Ok(results)
}

/// A text-protocol value: bytes or NULL.
fn text(value: mysql::Value) -> Option<String> {
    match value {
        mysql::Value::NULL => None,
        mysql::Value::Bytes(bytes) => Some(String::from_utf8_lossy(&bytes).into_owned()),
        other => Some(other.as_sql(true)),
    }
}

fn convert(e: mysql::Error, context: &str) -> Error {
    match e {
        mysql::Error::MySqlError(e) => Error::Sql { code: e.code, state: e.state, message: e.message },
        mysql::Error::IoError(io) => io_error(io, context),
        mysql::Error::DriverError(mysql::DriverError::CouldNotConnect(Some((_, desc, kind)))) => {
            io_error(std::io::Error::new(kind, desc), context)
        }
        mysql::Error::CodecError(c) => match std::error::Error::source(&c).and_then(|s| s.downcast_ref::<std::io::Error>()) {
            Some(io) => io_error(std::io::Error::new(io.kind(), io.to_string()), context),
            None => Error::msg(format!("{context}: {c}")),
        },
        other => Error::msg(format!("{context}: {other}")),
    }
}

fn io_error(e: std::io::Error, context: &str) -> Error {
    match e.kind() {
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => {
            Error::Timeout(format!("{context}: no answer from the server (socket timeout)"))
        }
        _ => Error::io(context.to_string(), e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_errors_keep_code_and_state() {
        let e = mysql::Error::MySqlError(mysql::MySqlError {
            state: "40001".into(),
            message: "Deadlock found".into(),
            code: 1213,
        });
        let err = convert(e, "talking to x");
        assert!(err.is_deadlock());
        assert_eq!(err.to_string(), "ERROR 1213 (40001): Deadlock found");
    }

    #[test]
    fn a_socket_timeout_is_a_timeout_and_other_io_is_io() {
        let timed_out = std::io::Error::from(std::io::ErrorKind::WouldBlock);
        assert!(matches!(convert(mysql::Error::IoError(timed_out), "x"), Error::Timeout(_)));
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        assert!(matches!(convert(mysql::Error::IoError(refused), "x"), Error::Io { .. }));
    }

    #[test]
    fn text_values() {
        assert_eq!(text(mysql::Value::NULL), None);
        assert_eq!(text(mysql::Value::Bytes(b"abc".to_vec())), Some("abc".into()));
    }

    #[test]
    fn a_missing_socket_is_an_io_error() {
        let err = Conn::connect_timeout(Path::new("/nonexistent/mysqld.sock"), Duration::from_secs(1)).unwrap_err();
        assert!(matches!(err, Error::Io { .. }), "{err}");
    }
}

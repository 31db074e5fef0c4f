//! A connection that knows its node, so every error a workload reports
//! names the node and the statement along with the server's answer.

use super::{Error, Result};
use crate::cluster::{Conn, Node, QueryResult};
use std::time::Duration;

pub(crate) struct Session {
    pub node: usize,
    conn: Conn,
}

impl Session {
    /// A new connection to `node` whose socket reads and writes give up
    /// after `timeout` (a frozen or wedged node fails the run, not hangs it).
    pub fn open(node: Node, timeout: Duration) -> Result<Session> {
        let index = node.index();
        let failed = |source| Error::Statement {
            node: index,
            sql: "(connect)".into(),
            source,
        };
        let conn = node.connect_timeout(timeout).map_err(failed)?;
        Ok(Session { node: index, conn })
    }

    /// Runs one statement (or several, `;`-separated); the last result.
    pub fn run(&mut self, sql: &str) -> Result<QueryResult> {
        match self.conn.query_results(sql) {
            Ok(mut results) => Ok(results.pop().unwrap_or_default()),
            Err(source) => Err(Error::Statement {
                node: self.node,
                sql: sql.to_string(),
                source,
            }),
        }
    }

    /// Rows of the last statement, NULL as `NULL`.
    pub fn rows(&mut self, sql: &str) -> Result<Vec<Vec<String>>> {
        Ok(self.run(sql)?.text_rows())
    }

    /// The one integer the statement returns (first column, first row).
    pub fn int(&mut self, sql: &str) -> Result<i64> {
        let rows = self.rows(sql)?;
        let cell = rows.first().and_then(|r| r.first());
        let cell = cell.ok_or_else(|| self.unexpected(sql, "no row".into()))?;
        self.parse(sql, cell)
    }

    pub fn parse(&self, sql: &str, cell: &str) -> Result<i64> {
        cell.parse()
            .map_err(|_| self.unexpected(sql, format!("{cell:?} is not an integer")))
    }

    pub fn unexpected(&self, sql: &str, what: String) -> Error {
        Error::Unexpected {
            node: self.node,
            sql: sql.to_string(),
            what,
        }
    }

    /// ROLLBACK after an aborted transaction. The server has rolled it back
    /// already; this only makes sure no transaction stays open. A second
    /// ER_LOCK_DEADLOCK here means nothing new, anything else is a failure.
    pub fn rollback(&mut self) -> Result<()> {
        match self.run("ROLLBACK") {
            Err(e) if !e.is_deadlock() => Err(e),
            _ => Ok(()),
        }
    }
}

//! MariaDB GTID positions (`domain-server-seqno`, one per replication
//! domain, comma-separated), as `@@gtid_binlog_pos`, `@@gtid_slave_pos`
//! and mariabackup's `xtrabackup_binlog_info` (`mariadb_backup_binlog_info`
//! on 11.x) write them: how far the lockstep side has applied what the
//! Galera side wrote, domain by domain.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Position(BTreeMap<u32, (u32, u64)>);

impl Position {
    /// An empty text is the empty position (nothing written yet).
    pub fn parse(text: &str) -> Result<Position, String> {
        let mut domains = BTreeMap::new();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let bad = || format!("{part:?} is not a GTID (domain-server-seqno) in {text:?}");
            let mut fields = part.split('-').map(|f| f.parse::<u64>().map_err(|_| bad()));
            let (Some(domain), Some(server), Some(seqno), None) = (fields.next(), fields.next(), fields.next(), fields.next()) else {
                return Err(bad());
            };
            let (domain, server) = (u32::try_from(domain?).map_err(|_| bad())?, u32::try_from(server?).map_err(|_| bad())?);
            if domains.insert(domain, (server, seqno?)).is_some() {
                return Err(format!("domain {domain} twice in {text:?}"));
            }
        }
        Ok(Position(domains))
    }

    pub fn domains(&self) -> BTreeSet<u32> {
        self.0.keys().copied().collect()
    }

    pub fn seqno(&self, domain: u32) -> u64 {
        self.0.get(&domain).map_or(0, |(_, seqno)| *seqno)
    }

    /// The part of this position in `domains`.
    pub fn only(&self, domains: &BTreeSet<u32>) -> Position {
        Position(self.0.iter().filter(|(d, _)| domains.contains(d)).map(|(d, v)| (*d, *v)).collect())
    }

    /// Domain by domain, the further of the two (a domain's seqnos count
    /// up, whatever server wrote them).
    pub fn furthest(&self, other: &Position) -> Position {
        let mut domains = self.0.clone();
        for (d, (server, seqno)) in &other.0 {
            if *seqno > self.seqno(*d) || !domains.contains_key(d) {
                domains.insert(*d, (*server, *seqno));
            }
        }
        Position(domains)
    }

    /// Transactions of `ahead` this position has not reached, over
    /// `ahead`'s domains (seqnos count up by one per transaction within a
    /// domain).
    pub fn behind(&self, ahead: &Position) -> u64 {
        ahead.0.iter().map(|(d, (_, seqno))| seqno.saturating_sub(self.seqno(*d))).sum()
    }
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.0.iter().map(|(d, (s, n))| format!("{d}-{s}-{n}")).collect();
        write!(f, "{}", parts.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_parse_print_and_compare_by_domain() {
        let source = Position::parse("1-1-500,0-3-7").unwrap();
        assert_eq!(source.to_string(), "0-3-7,1-1-500");
        let replica = Position::parse("1-1-480, 5-2-9").unwrap();
        assert_eq!(replica.behind(&source), 20 + 7);
        assert_eq!(source.behind(&source), 0);
        assert_eq!(replica.only(&source.domains()).to_string(), "1-1-480");
        assert_eq!(replica.furthest(&source).to_string(), "0-3-7,1-1-500,5-2-9");
        assert_eq!(source.furthest(&replica), replica.furthest(&source));
        assert_eq!(Position::parse("").unwrap(), Position::default());
        for bad in ["1-1", "1-1-1-1", "a-1-1", "1-1-1,1-2-3", "99999999999-1-1"] {
            assert!(Position::parse(bad).is_err(), "{bad}");
        }
    }
}

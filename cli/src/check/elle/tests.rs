//! Small handmade histories, each with one anomaly (or none), and the
//! checker must name exactly that one. Every transaction runs from 0 to
//! 1000 µs unless a test says otherwise: all concurrent, so no real-time
//! order adds edges of its own.

use super::history::{Mop, Outcome, Txn};
use super::*;

fn a(k: u64, v: u64) -> Mop {
    Mop::Append(k, v)
}

fn r(k: u64, vs: &[u64]) -> Mop {
    Mop::Read(k, Some(vs.to_vec()))
}

fn t(mops: Vec<Mop>) -> Txn {
    Txn::committed(0, 0, 1000, mops)
}

fn at(start: u64, end: u64, mops: Vec<Mop>) -> Txn {
    Txn::committed(0, start, end, mops)
}

fn found(history: &[Txn]) -> Vec<(&'static str, usize)> {
    check(history).counts().into_iter().collect()
}

#[test]
fn a_serial_history_has_no_anomaly() {
    let h = [at(0, 10, vec![a(1, 1)]), at(20, 30, vec![r(1, &[1]), a(1, 2), a(2, 1)]), at(40, 50, vec![r(1, &[1, 2]), r(2, &[1])])];
    assert_eq!(found(&h), vec![]);
}

#[test]
fn appends_in_opposite_orders_on_two_keys_are_g0() {
    let h = [t(vec![a(1, 1), a(2, 2)]), t(vec![a(1, 3), a(2, 4)]), t(vec![r(1, &[1, 3]), r(2, &[4, 2])])];
    assert_eq!(found(&h), vec![("G0", 1)]);
}

#[test]
fn each_reading_the_others_append_is_g1c() {
    let h = [t(vec![a(1, 1), r(2, &[2])]), t(vec![a(2, 2), r(1, &[1])])];
    assert_eq!(found(&h), vec![("G1c", 1)]);
}

#[test]
fn a_read_skew_is_g_single() {
    let h = [t(vec![a(1, 1), a(2, 1)]), t(vec![r(1, &[]), r(2, &[1])]), t(vec![r(1, &[1])])];
    assert_eq!(found(&h), vec![("G-single", 1)]);
}

#[test]
fn a_write_skew_is_g2_item() {
    let h = [t(vec![r(1, &[]), r(2, &[]), a(1, 1)]), t(vec![r(1, &[]), r(2, &[]), a(2, 2)]), t(vec![r(1, &[1]), r(2, &[2])])];
    assert_eq!(found(&h), vec![("G2-item", 1)]);
}

#[test]
fn a_long_fork_is_g_nonadjacent() {
    // T0 -rw-> T1 -wr-> T2 -rw-> T3 -wr-> T0: each reader saw one
    // append and not the other, in opposite orders.
    let h = [t(vec![r(1, &[]), r(2, &[3])]), t(vec![a(1, 1)]), t(vec![r(1, &[1]), r(2, &[])]), t(vec![a(2, 3)])];
    assert_eq!(found(&h), vec![("G-nonadjacent", 1), ("G2-item", 1)]);
}

#[test]
fn rw_edges_in_a_row_across_the_cycles_close_are_no_g_nonadjacent() {
    // T0 -rw-> T1 -wr-> T2 -rw-> T0: the last edge and the first are
    // both rw.
    let h = [t(vec![r(1, &[]), a(2, 2)]), t(vec![a(1, 1)]), t(vec![r(1, &[1]), r(2, &[])]), t(vec![r(2, &[2])])];
    assert_eq!(found(&h), vec![("G2-item", 1)]);
}

#[test]
fn two_appends_after_reading_one_version_are_a_lost_update_and_g_single() {
    let h = [t(vec![r(1, &[]), a(1, 1)]), t(vec![r(1, &[]), a(1, 2)]), t(vec![r(1, &[1, 2])])];
    assert_eq!(found(&h), vec![("G-single", 1), ("lost-update", 1)]);
}

#[test]
fn a_read_of_an_aborted_append_is_g1a() {
    let mut aborted = t(vec![a(1, 1)]);
    aborted.outcome = Outcome::Aborted;
    aborted.completed = None;
    let h = [aborted, t(vec![r(1, &[1])])];
    assert_eq!(found(&h), vec![("G1a", 1)]);
}

#[test]
fn a_read_of_a_value_its_writer_appended_after_is_g1b() {
    let h = [t(vec![a(1, 1), a(1, 2)]), t(vec![r(1, &[1])]), t(vec![r(1, &[1, 2])])];
    assert_eq!(found(&h), vec![("G1b", 1)]);
}

#[test]
fn reads_that_disagree_on_the_order_are_incompatible() {
    let h = [t(vec![a(1, 1)]), t(vec![a(1, 2)]), t(vec![r(1, &[1, 2])]), t(vec![r(1, &[2])])];
    assert_eq!(found(&h), vec![("incompatible-order", 1)]);
}

#[test]
fn a_value_read_twice_is_a_duplicate_append() {
    let h = [t(vec![a(1, 1)]), t(vec![r(1, &[1, 1])])];
    assert_eq!(found(&h), vec![("duplicate-append", 1)]);
}

#[test]
fn a_value_nobody_appended_is_a_garbage_read() {
    let h = [t(vec![r(1, &[9])])];
    assert_eq!(found(&h), vec![("garbage-read", 1)]);
}

#[test]
fn a_read_that_misses_its_own_append_is_internal() {
    let h = [t(vec![a(1, 1), r(1, &[])])];
    assert_eq!(found(&h), vec![("internal", 1)]);
}

#[test]
fn an_acknowledged_append_missing_from_a_final_read_is_lost() {
    let mut last = at(20, 30, vec![r(1, &[])]);
    last.final_read = true;
    let h = [at(0, 10, vec![a(1, 1)]), last];
    assert_eq!(found(&h), vec![("lost-append", 1)]);
}

#[test]
fn a_read_that_misses_an_append_completed_before_it_began_is_a_stale_read() {
    let h = [at(0, 10, vec![a(1, 1)]), at(20, 30, vec![r(1, &[])]), at(40, 50, vec![r(1, &[1])])];
    assert_eq!(found(&h), vec![("G-single-realtime", 1)]);
}

#[test]
fn unknown_and_aborted_transactions_without_effects_add_nothing() {
    let mut unknown = Txn { completed: None, outcome: Outcome::Unknown, ..t(vec![a(1, 5)]) };
    unknown.invoked = 0;
    let mut aborted = t(vec![a(1, 6)]);
    aborted.outcome = Outcome::Aborted;
    let h = [at(0, 10, vec![a(1, 1)]), unknown, aborted, at(40, 50, vec![r(1, &[1, 5])])];
    assert_eq!(found(&h), vec![]);
}

#[test]
fn a_long_serial_history_stays_clean() {
    let mut h = Vec::new();
    let mut lists: Vec<Vec<u64>> = vec![Vec::new(); 10];
    for i in 0..5_000u64 {
        let k = (i * 7) % 10;
        let mut mops = vec![r(k, &lists[k as usize])];
        mops.push(a(k, i));
        lists[k as usize].push(i);
        mops.push(r((k + 3) % 10, &lists[((k + 3) % 10) as usize]));
        h.push(at(i * 10, i * 10 + 5, mops));
    }
    assert_eq!(found(&h), vec![]);
}

#[test]
fn a_history_written_as_json_lines_reads_back_the_same() {
    let mut h = vec![at(0, 10, vec![a(1, 1), r(2, &[3, 4])]), Txn { outcome: Outcome::Unknown, completed: None, ..t(vec![Mop::Read(1, None)]) }];
    h[1].node = 2;
    h[1].final_read = true;
    let back = super::history::from_json_lines(&super::history::to_json_lines(&h)).unwrap();
    assert_eq!(format!("{back:?}"), format!("{h:?}"));
    assert!(super::history::from_json_lines("{\"process\":1}").unwrap_err().starts_with("line 1: "));
}

use std::sync::atomic::{AtomicI64, Ordering as AtomicOrdering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use super::*;

#[test]
fn last_left_advances_only_over_a_contiguous_prefix() {
    let mut o = Ordering::new(0);
    for s in 1..=3 {
        o.enter(s, false);
    }
    o.leave(3);
    o.leave(2);
    assert_eq!(o.last_left(), 0);
    o.leave(1);
    assert_eq!(o.last_left(), 3);
    assert_eq!(o.stats().left_out_of_order, 2);
}

#[test]
fn the_window_is_counted_as_galeras_at_enter_over_enters() {
    let mut o = Ordering::new(0);
    for s in 1..=3 {
        o.enter(s, false); // windows 1, 2, 3
    }
    for s in [3, 1, 2] {
        o.leave(s);
    }
    // Counted at each leave instead: 3, 3, 2.
    assert!((o.stats().window() - 2.0).abs() < 1e-9, "{}", o.stats().window());
}

#[test]
fn cancel_fills_gaps_and_is_idempotent() {
    let mut o = Ordering::new(10);
    o.cancel(12);
    o.cancel(12);
    o.enter(11, false);
    o.leave(11);
    assert_eq!(o.last_left(), 12);
    o.cancel(5);
    assert_eq!(o.last_left(), 12);
}

#[test]
fn rules() {
    let o = Ordering::new(5);
    assert!(o.may_enter(6, Rule::InOrder));
    assert!(!o.may_enter(7, Rule::InOrder));
    assert!(o.may_enter(9, Rule::After(5)));
    assert!(!o.may_enter(9, Rule::After(6)));
    assert!(o.may_enter(100, Rule::Now));
    assert!(!o.may_enter(5 + WINDOW + 1, Rule::Now));
}

#[test]
#[should_panic(expected = "entered twice")]
fn entering_twice_is_a_bug() {
    let mut o = Ordering::new(0);
    o.enter(1, false);
    o.enter(1, false);
}

#[test]
#[should_panic(expected = "left without entering")]
fn leaving_without_entering_is_a_bug() {
    let mut o = Ordering::new(0);
    o.leave(1);
}

/// Threads entering out of order in a strict monitor still pass in order.
#[test]
fn strict_order_across_threads() {
    let m = Arc::new(Monitor::new(0));
    let log = Arc::new(Mutex::new(Vec::new()));
    let handles: Vec<_> = (1..=16).rev()
        .map(|s| {
            let (m, log) = (m.clone(), log.clone());
            thread::spawn(move || {
                m.enter(s, Rule::InOrder).unwrap();
                log.lock().unwrap().push(s);
                m.leave(s);
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(*log.lock().unwrap(), (1..=16).collect::<Vec<_>>());
    assert_eq!(m.last_left(), 16);
}

#[test]
fn after_rule_waits_for_the_dependency_only() {
    let m = Arc::new(Monitor::new(0));
    m.enter(1, Rule::Now).unwrap();
    // 3 depends on 0 only: enters although 1 is inside and 2 never came.
    m.enter(3, Rule::After(0)).unwrap();
    let entered = Arc::new(AtomicI64::new(0));
    let t = {
        let (m, entered) = (m.clone(), entered.clone());
        thread::spawn(move || {
            m.enter(4, Rule::After(1)).unwrap();
            entered.store(4, AtomicOrdering::SeqCst);
        })
    };
    thread::sleep(Duration::from_millis(50));
    assert_eq!(entered.load(AtomicOrdering::SeqCst), 0);
    m.leave(1);
    t.join().unwrap();
    assert_eq!(entered.load(AtomicOrdering::SeqCst), 4);
}

#[test]
fn interrupt_wakes_a_waiter_and_fails_a_future_enter() {
    let m = Arc::new(Monitor::new(0));
    let t = {
        let m = m.clone();
        thread::spawn(move || m.enter(2, Rule::InOrder))
    };
    thread::sleep(Duration::from_millis(30));
    assert!(m.interrupt(2));
    assert_eq!(t.join().unwrap(), Err(Interrupted::Aborted));
    // Not waiting yet: the next enter fails.
    assert!(m.interrupt(3));
    assert_eq!(m.enter(3, Rule::Now), Err(Interrupted::Aborted));
    // After an interrupted enter the owner can still enter (replay, rollback).
    m.enter(1, Rule::InOrder).unwrap();
    m.leave(1);
    m.enter(2, Rule::InOrder).unwrap();
    assert!(!m.interrupt(2), "too late: already inside");
    m.leave(2);
}

#[test]
fn wait_left_times_out_then_succeeds() {
    let m = Arc::new(Monitor::new(0));
    let t0 = Instant::now();
    assert!(!m.wait_left(1, Some(Instant::now() + Duration::from_millis(30))));
    assert!(t0.elapsed() >= Duration::from_millis(30));
    let t = {
        let m = m.clone();
        thread::spawn(move || m.wait_left(2, None))
    };
    m.cancel(2);
    thread::sleep(Duration::from_millis(10));
    m.enter(1, Rule::InOrder).unwrap();
    m.leave(1);
    assert!(t.join().unwrap());
}

#[test]
fn close_fails_every_wait() {
    let m = Arc::new(Monitor::new(0));
    let t = {
        let m = m.clone();
        thread::spawn(move || m.enter(5, Rule::InOrder))
    };
    let w = {
        let m = m.clone();
        thread::spawn(move || m.wait_left(5, None))
    };
    thread::sleep(Duration::from_millis(30));
    m.close();
    assert_eq!(t.join().unwrap(), Err(Interrupted::Closed));
    assert!(!w.join().unwrap());
}

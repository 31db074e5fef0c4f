//! The driver's command queue: one FIFO, bounded for the threads that can
//! flood it.
//!
//! Clients proposing, the transport's link readers and the server's
//! control calls wait while it holds `CAPACITY` commands: a full queue
//! means the driver is far behind, and waiting is the back-pressure their
//! work needs (a client's commit waits; a reader stops reading its socket,
//! and TCP slows the peer down). Two senders never wait, and add past the
//! bound:
//! - the driver's own thread (the server's delivery runs there and sends
//!   flow-control signals and SYNC), since only that thread empties the
//!   queue; it adds what one turn delivers at most;
//! - the transport's link events (up, down, a failed contact), sent under
//!   the transport's peers lock, which the driver's sends take too; a few
//!   per link change.
//!
//! One FIFO for all, not a side queue for these: the order of commands is
//! meaning (the node sends STOP and CONT in the order it decides them, from
//! the driver's thread and from the appliers'; JOIN precedes SYNC), and a
//! side queue taken first reordered them (a CONT overtaken by its STOP
//! left the cluster paused for good).
//!
//! A mutex and two condition variables rather than `std::sync::mpsc`:
//! its bounded channel cannot take a command past its bound.

use std::cell::Cell;
use std::collections::VecDeque;
use std::sync::mpsc::Sender;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use bytes::Bytes;

use crate::group::flow::flow_control::Signal;
use crate::group::primary::liveness::Timeouts;
use crate::group::primary::quorum::Policy;
use crate::gtid::Seqno;
use crate::transport::Inbound;

pub(crate) enum Command {
    /// A writeset to order; `token` comes back with its delivery (0:
    /// nobody waits for it).
    Propose { token: u64, body: Bytes },
    /// A group entry to order; nobody waits for it.
    Send(Vec<u8>),
    /// The client of `token` gave up waiting (KILL): fail it if its
    /// writeset can still be kept from being ordered.
    Cancel(u64),
    /// The seqno a causal read must wait for (Raft ReadIndex).
    ReadIndex(Sender<Seqno>),
    Net(Inbound),
    /// Leave the group gracefully; the sender hears when it is done.
    Leave(Sender<()>),
    Isolate(bool),
    /// This member's backlog crossed a flow-control limit.
    Flow(Signal),
    ResetFlowCounters,
    /// `evs.suspect_timeout` / `evs.inactive_timeout` changed.
    Timeouts(Timeouts),
    /// `pc.bootstrap=YES`: a non-primary member forms a primary component
    /// of its own.
    Reform,
    /// `pc.ignore_sb` / `pc.ignore_quorum` / `pc.weight` changed.
    Policy(Policy),
    /// `evs.send_window` changed (see [`send_window`]).
    SendWindow(usize),
    Stop,
}

/// Commands waiting for the driver beyond which a sender waits: a turn
/// takes up to 256 of them (the driver's `BATCH`) and lasts about a
/// millisecond when busy, so this is a long backlog already; a proposal's
/// body is in its command, so the bound also caps the memory of writesets
/// not yet in Raft's log.
pub const CAPACITY: usize = 16384;

/// The senders' end.
pub struct Commands {
    queue: Mutex<Queue>,
    /// Signalled when a command is added, and when the driver is gone.
    added: Condvar,
    /// Signalled when the driver takes a command, and when it is gone.
    taken: Condvar,
}

thread_local! {
    /// Whether this thread is running the driver now (see `driving`).
    static DRIVING: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` as the driver's thread: its sends never wait for room (the
/// room would come from the driver it is running).
pub fn driving<R>(f: impl FnOnce() -> R) -> R {
    struct Reset(bool);
    impl Drop for Reset {
        fn drop(&mut self) {
            DRIVING.with(|d| d.set(self.0));
        }
    }
    let _reset = Reset(DRIVING.with(|d| d.replace(true)));
    f()
}

#[derive(Default)]
struct Queue {
    commands: VecDeque<Command>,
    closed: bool,
}

/// The driver's end; dropping it closes the queue.
pub struct Inbox {
    commands: Arc<Commands>,
}

/// The queue has no driver any more (it stopped).
#[derive(Debug)]
pub struct Closed;

pub fn queue() -> (Arc<Commands>, Inbox) {
    let commands = Arc::new(Commands { queue: Mutex::default(), added: Condvar::new(), taken: Condvar::new() });
    (commands.clone(), Inbox { commands })
}

impl Commands {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues `cmd`, waiting while the queue is full, unless called on the
    /// driver's thread.
    pub fn send(&self, cmd: Command) -> Result<(), Closed> {
        self.queue_up(cmd)?;
        self.added.notify_one();
        Ok(())
    }

    /// `send` without waking the group thread: for a caller that runs the
    /// driver itself next, and calls `wake` if it cannot.
    pub fn send_quietly(&self, cmd: Command) -> Result<(), Closed> {
        self.queue_up(cmd)
    }

    fn queue_up(&self, cmd: Command) -> Result<(), Closed> {
        let exempt = DRIVING.with(Cell::get);
        let mut q = self.lock();
        while !exempt && !q.closed && q.commands.len() >= CAPACITY {
            q = self.taken.wait(q).unwrap_or_else(|e| e.into_inner());
        }
        if q.closed {
            return Err(Closed);
        }
        q.commands.push_back(cmd);
        Ok(())
    }

    /// Queues `cmd` without ever waiting (a link event).
    pub fn send_now(&self, cmd: Command) {
        let mut q = self.lock();
        if !q.closed {
            q.commands.push_back(cmd);
        }
        drop(q);
        self.added.notify_one();
    }

    /// Wakes the group thread (there are commands for it).
    pub fn wake(&self) {
        let _q = self.lock();
        self.added.notify_one();
    }

    pub fn is_empty(&self) -> bool {
        self.lock().commands.is_empty()
    }

    /// Waits up to `wait` for a command to be queued (or the queue to
    /// close), without taking it: whoever runs the driver next does.
    pub fn wait_queued(&self, wait: Duration) {
        let q = self.lock();
        let _ = self.added.wait_timeout_while(q, wait, |q| q.commands.is_empty() && !q.closed);
    }
}

impl Inbox {
    /// The next command if one is there.
    pub fn try_recv(&self) -> Option<Command> {
        self.take(&mut self.commands.lock())
    }

    fn take(&self, q: &mut Queue) -> Option<Command> {
        let cmd = q.commands.pop_front()?;
        if q.commands.len() < CAPACITY {
            self.commands.taken.notify_one();
        }
        Some(cmd)
    }
}

impl Drop for Inbox {
    fn drop(&mut self) {
        let mut q = self.commands.lock();
        q.closed = true;
        q.commands.clear();
        drop(q);
        self.commands.taken.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fill(commands: &Commands) {
        for _ in 0..CAPACITY {
            commands.send(Command::ResetFlowCounters).unwrap();
        }
    }

    #[test]
    fn the_driver_thread_never_waits_and_its_commands_keep_their_place() {
        let (commands, inbox) = queue();
        fill(&commands);
        driving(|| commands.send(Command::Stop)).unwrap(); // would wait forever
        for _ in 0..CAPACITY {
            assert!(matches!(inbox.try_recv(), Some(Command::ResetFlowCounters)), "behind what came first");
        }
        assert!(matches!(inbox.try_recv(), Some(Command::Stop)));
    }

    #[test]
    fn another_thread_waits_while_the_queue_is_full() {
        let (commands, inbox) = queue();
        fill(&commands);
        let (done_tx, done) = std::sync::mpsc::channel();
        let sender = commands.clone();
        let t = std::thread::spawn(move || {
            sender.send(Command::Stop).unwrap();
            done_tx.send(()).unwrap();
        });
        assert!(done.recv_timeout(Duration::from_millis(200)).is_err(), "the sender waits");
        assert!(inbox.try_recv().is_some());
        done.recv_timeout(Duration::from_secs(10)).expect("room again: the sender goes on");
        t.join().unwrap();
    }

    #[test]
    fn a_link_event_never_waits_and_wakes_the_driver() {
        let (commands, inbox) = queue();
        fill(&commands);
        commands.send_now(Command::Stop);
        assert_eq!(std::iter::from_fn(|| inbox.try_recv()).count(), CAPACITY + 1);
        let sender = commands.clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            sender.send_now(Command::Stop);
        });
        commands.wait_queued(Duration::from_secs(10));
        assert!(matches!(inbox.try_recv(), Some(Command::Stop)));
        t.join().unwrap();
    }

    #[test]
    fn a_stopped_driver_closes_the_queue_and_frees_a_waiting_sender() {
        let (commands, inbox) = queue();
        fill(&commands);
        let sender = commands.clone();
        let t = std::thread::spawn(move || sender.send(Command::Stop));
        std::thread::sleep(Duration::from_millis(50));
        drop(inbox);
        assert!(t.join().unwrap().is_err());
        assert!(commands.send(Command::Stop).is_err());
    }
}

//! Who runs the driver: the group thread, or a link reader that brings it
//! a frame while nobody else is running it.
//!
//! Every commit crosses the network twice (a leader's append, a follower's
//! answer), and each crossing used to end with two threads: the link's
//! reader queued the frame and woke the group thread, which stepped Raft.
//! Under load each wake-up waits for a core. A reader that finds the
//! driver free now steps it itself, so the frame is handled, and the
//! answer sent, on the thread that read it; a busy driver gets the frame
//! through the queue as before, and the group thread still runs the ticks
//! and every other command. (Clients proposing do not run it: tried, a
//! client thread that takes over the driver's turn makes its own commit
//! and the 1-thread load slower, not faster.)
//!
//! What stays as it was: one thread at a time runs the driver (the
//! mutex), and commands are handled in the order queued, since a reader
//! queues its frame like everyone else and whoever runs the driver takes
//! the queue from its head. A panic in a turn stops the driver, on any
//! thread, as it stopped the group thread.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, TryLockError, Weak};

use super::commands::{self, Command, Commands};
use super::driver::Driver;
use crate::log;

pub(crate) struct Runner {
    /// None once stopped: dropped on the group thread, never on a reader
    /// (dropping the driver may stop the transport, which joins readers).
    driver: Mutex<Option<Driver>>,
    /// A turn said stop (or panicked), on whichever thread: no more turns.
    stopped: AtomicBool,
    commands: Arc<Commands>,
}

impl Runner {
    pub fn new(driver: Driver, commands: Arc<Commands>) -> Arc<Runner> {
        Arc::new(Runner { driver: Mutex::new(Some(driver)), stopped: AtomicBool::new(false), commands })
    }

    fn lock(&self) -> MutexGuard<'_, Option<Driver>> {
        self.driver.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The group thread: waits for a command or the next tick, runs a
    /// turn, until the driver stops; then closes it.
    pub fn run(&self) {
        match self.lock().as_mut() {
            Some(d) => d.campaign_if_bootstrapping(),
            None => return,
        }
        while !self.stopped.load(Ordering::SeqCst) {
            let Some(wait) = self.lock().as_ref().map(Driver::until_tick) else { break };
            self.commands.wait_queued(wait);
            self.turn(&mut self.lock());
        }
        let driver = self.lock().take();
        if let Some(d) = driver {
            d.close();
        }
    }

    /// One turn, unless stopped; false once stopped.
    fn turn(&self, driver: &mut Option<Driver>) -> bool {
        let Some(d) = driver.as_mut() else { return false };
        if self.stopped.load(Ordering::SeqCst) {
            return false;
        }
        if !turn(d) {
            self.stopped.store(true, Ordering::SeqCst);
            return false;
        }
        true
    }

    /// A link reader's frame: queued, then handled on this thread if the
    /// driver is free; false once the driver is gone.
    fn offer(&self, cmd: Command) -> bool {
        if self.commands.send_quietly(cmd).is_err() {
            return false;
        }
        let mut guard = match self.driver.try_lock() {
            Ok(g) => g,
            Err(TryLockError::Poisoned(e)) => e.into_inner(),
            // The thread running it takes the frame, or the group thread,
            // woken here, does.
            Err(TryLockError::WouldBlock) => {
                self.commands.wake();
                return true;
            }
        };
        let running = self.turn(&mut guard);
        drop(guard);
        // Stopped: the group thread closes the driver. Commands left past
        // one turn's batch, or queued quietly by a reader that found this
        // turn busy: the group thread takes them.
        if !running || !self.commands.is_empty() {
            self.commands.wake();
        }
        running
    }
}

/// One turn of the driver on this thread; false once it stopped (a panic
/// stops it too: it is a bug, and it must not take mariadbd down).
fn turn(d: &mut Driver) -> bool {
    let r = commands::driving(|| std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| d.turn())));
    r.unwrap_or_else(|e| {
        let what = e.downcast_ref::<String>().map(String::as_str).or(e.downcast_ref::<&str>().copied()).unwrap_or("?");
        log::error!("the group layer failed ({}): this node no longer replicates and must be restarted", what);
        false
    })
}

/// The transport's inbox: frames are offered to the runner, link events
/// go to the queue (they come under the transport's peers lock, which
/// the driver's sends take too: running the driver there would deadlock).
pub(in crate::group) struct NetInbox {
    pub commands: Arc<Commands>,
    /// Set once the driver exists (the transport starts before it).
    pub runner: Arc<std::sync::OnceLock<Weak<Runner>>>,
}

impl crate::transport::Inbox for NetInbox {
    fn frame(&self, inbound: crate::transport::Inbound) -> bool {
        match self.runner.get().and_then(Weak::upgrade) {
            Some(r) => r.offer(Command::Net(inbound)),
            // Before the driver exists (the transport starts first).
            None => self.commands.send(Command::Net(inbound)).is_ok(),
        }
    }

    fn event(&self, inbound: crate::transport::Inbound) {
        self.commands.send_now(Command::Net(inbound));
    }
}

//! The group driver's edges: the network it talks through and the clock
//! it reads. In mariadbd they are the real transport and the system clock;
//! a simulation gives its own, so that the driver's rules run unchanged
//! under a seeded network and time.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use bytes::Bytes;

use crate::transport::{PeerId, Transport};

/// What the driver asks of the network (see `Transport` for each).
pub trait Links: Send + Sync {
    /// Queues a frame to a member; false when it cannot be sent.
    fn send(&self, to: PeerId, kind: u8, payload: Bytes) -> bool;
    /// Keep a link to this member, which listens at `addr`.
    fn set_peer(&self, id: PeerId, addr: &str);
    /// Stop dialing a member that left; its link, if up, stays until
    /// `forget`.
    fn stop_dialing(&self, id: PeerId);
    /// Drop the link to a member that left.
    fn forget(&self, id: PeerId);
    /// Contact an address of `wsrep_cluster_address` (its identity comes
    /// back as `Inbound::PeerUp`).
    fn connect_addr(&self, addr: &str);
    /// Whether a frame may go out on the sender's own thread when its
    /// link is idle: while the driver has time to spare (see `load`), a
    /// frame's latency matters more than batching it with the next ones.
    fn set_eager(&self, _eager: bool) {}
    /// `gmcast.isolate`: cut every link.
    fn set_isolated(&self, on: bool);
    /// This member's `gmcast.segment`.
    fn own_segment(&self) -> u8 {
        0
    }
    /// The segment a linked member announced; None: no live link, or a
    /// build that does not relay (see `relay`).
    fn segment(&self, _id: PeerId) -> Option<u8> {
        None
    }
    /// Whether a linked member announced `feature`
    /// (`transport::handshake::FEATURES`): false for a build without it.
    fn has_feature(&self, _id: PeerId, _feature: u8) -> bool {
        false
    }
    fn stop(&self);
}

impl Links for Transport {
    fn send(&self, to: PeerId, kind: u8, payload: Bytes) -> bool {
        Transport::send(self, to, kind, payload)
    }
    fn set_peer(&self, id: PeerId, addr: &str) {
        Transport::set_peer(self, id, addr)
    }
    fn stop_dialing(&self, id: PeerId) {
        Transport::stop_dialing(self, id)
    }
    fn forget(&self, id: PeerId) {
        Transport::forget(self, id)
    }
    fn connect_addr(&self, addr: &str) {
        Transport::connect_addr(self, addr)
    }
    fn set_eager(&self, eager: bool) {
        Transport::set_eager(self, eager)
    }
    fn set_isolated(&self, on: bool) {
        Transport::set_isolated(self, on)
    }
    fn own_segment(&self) -> u8 {
        Transport::own_segment(self)
    }
    fn segment(&self, id: PeerId) -> Option<u8> {
        Transport::segment(self, id)
    }
    fn has_feature(&self, id: PeerId, feature: u8) -> bool {
        Transport::has_feature(self, id, feature)
    }
    fn stop(&self) {
        Transport::stop(self)
    }
}

/// The time the driver's timeouts and leases are measured in.
pub trait Clock: Send + Sync {
    fn now(&self) -> Instant;
    /// How long the whole process stood still, if it did for longer than
    /// `standstill::STOOD_STILL` since the last call (see `SystemClock`).
    fn stood_still(&self) -> Option<Duration> {
        None
    }
}

/// The system's monotonic clock, with a watch for standstills: a thread
/// that does nothing but nap notices when it wakes far too late, as only
/// a stopped (SIGSTOP) or starved process does. The driver's own gap
/// between turns (`standstill`) misses a stop that lands inside a turn:
/// that turn ends after the process runs again.
pub struct SystemClock {
    overslept_ms: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    watch: Option<JoinHandle<()>>,
}

/// The watch's nap: a stop is seen at most this long after it ended.
const NAP: Duration = Duration::from_millis(100);

impl SystemClock {
    pub fn new() -> SystemClock {
        let (overslept_ms, stop) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicBool::new(false)));
        let (slot, stopping) = (overslept_ms.clone(), stop.clone());
        let watch = std::thread::Builder::new()
            .name("lockstep-watch".into())
            .spawn(move || watch(&slot, &stopping))
            .map_err(|e| crate::log::warning!("no watch for standstills ({}): a stop inside a driver turn goes unseen", e))
            .ok();
        SystemClock { overslept_ms, stop, watch }
    }
}

fn watch(overslept_ms: &AtomicU64, stop: &AtomicBool) {
    let mut before = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        std::thread::park_timeout(NAP);
        let now = Instant::now();
        let late = now.saturating_duration_since(before).saturating_sub(NAP);
        if late > crate::group::primary::standstill::STOOD_STILL {
            overslept_ms.fetch_max(late.as_millis() as u64, Ordering::Relaxed);
        }
        before = now;
    }
}

impl Clock for SystemClock {
    fn now(&self) -> Instant {
        Instant::now()
    }

    fn stood_still(&self) -> Option<Duration> {
        let ms = self.overslept_ms.swap(0, Ordering::Relaxed);
        (ms > 0).then(|| Duration::from_millis(ms))
    }
}

impl Drop for SystemClock {
    /// Joined, so that no thread of the library runs once the server
    /// unloads it.
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(w) = self.watch.take() {
            w.thread().unpark();
            let _ = w.join();
        }
    }
}

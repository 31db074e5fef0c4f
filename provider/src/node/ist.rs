//! Incremental state transfer, node side (the format, the connection and
//! the joiner's queue are in `transfer`). As in Galera 4: a joiner opens
//! its IST receiver when it asks for state and names it in the request; a
//! donor whose gcache covers the joiner's gap has the server skip the SST
//! script's copy and streams the gap there; after a full SST the donor
//! streams what lies between the SST's state and the request (usually
//! nothing: the SST's state is newer). The joiner applies the gap in order
//! before anything it received live.

use std::sync::atomic::Ordering;

use super::types::RecvCtx;
use super::Shared;
use crate::cert::{FailReason, Verdict};
use crate::gcache::Cached;
use crate::group::{IstRequest, View};
use crate::gtid::{Gtid, Seqno, Uuid};
use crate::log;
use crate::transfer::channel::{self, Receiver, STALL};
use crate::transfer::ist::Header;
use crate::writeset::WriteSet;

/// A full SST the donor is running: once its script reports the state it
/// sent, the seqnos after it up to the request follow over IST.
pub(super) struct AfterSst {
    joiner: Uuid,
    addr: String,
    upto: Seqno,
}

/// The server's request of a running joiner (a member rejoining after a
/// partition) is empty: it can take no SST script's copy, only IST.
fn is_running_joiner(request: &[u8]) -> bool {
    request.iter().all(|b| *b == 0)
}

/// The configuration changes an IST brought the server.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct IstViews {
    /// It heard views older than the one this node joined in.
    pub heard: bool,
    /// The view this node joined in was the IST's last seqno, and is not
    /// finished yet: whoever has the server hear it finishes it then
    /// (`deliver_view`), or passes it. The server records its position
    /// with a view only when the provider's last committed seqno is not
    /// the view's own (MariaDB's log_view): heard after its seqno was
    /// finished, the view moved the server's stored view but not InnoDB's
    /// position, and the next IST-only restart failed on "SST script
    /// passed bogus GTID" (galera_allowlist, galera_vote_rejoin_mysqldump).
    pub join_held: bool,
}

impl Shared {
    /// The joiner's receiver, opened before its state request: None when
    /// it has no address or cannot listen (it can then only take SST).
    pub(super) fn prepare_ist(&self, own: Gtid, view: &View) -> Option<Receiver> {
        let Some(addr) = self.ist_recv_addr() else {
            log::info!("no IST receive address (ist.recv_addr or wsrep_node_address): this node can only join by SST");
            return None;
        };
        // Galera's wording (mtr greps both lines).
        log::info!("IST receiver addr using {}", addr);
        let bind = self.settings().ist_recv_bind.unwrap_or_else(|| addr.clone());
        self.ist.open(view.history, self.my_id());
        let tls = self.group().and_then(|g| g.tls());
        match Receiver::start(&addr, &bind, self.ist.clone(), tls) {
            Ok(r) => {
                let first = if own.uuid == view.history { own.seqno + 1 } else { 0 };
                log::info!("Prepared IST receiver for {}-{}, listening at: {}", first, view.seqno, r.listening());
                Some(r)
            }
            Err(e) => {
                log::warning!("{}; this node can only join by SST", e);
                None
            }
        }
    }

    /// `ist.recv_addr` (or the node address), else the group address's
    /// host with the next port, as Galera derives it.
    fn ist_recv_addr(&self) -> Option<String> {
        if let Some(addr) = self.settings().ist_recv_addr {
            return Some(addr);
        }
        let group = self.group()?.me().address.clone();
        let (host, port) = lockstep_config::node::split_host_port(&group).ok()?;
        lockstep_config::node::ist_address(host, port?).ok()
    }

    /// The donor's side: true when the joiner is served by IST (its gap
    /// is in our gcache and it has a receiver), false when it needs SST.
    pub(super) fn donate_ist(&self, ctx: RecvCtx, request: &[u8], seqno: Seqno, joiner: Uuid, ist: &IstRequest) -> bool {
        let from = ist.position;
        if from.0 != self.history() || from.1 < 0 || from.1 > seqno {
            return false;
        }
        let running = is_running_joiner(request);
        let items = match self.ist_items(from.1, seqno, &ist.addr) {
            Ok(items) => items,
            Err(why) if running => {
                log::error!("{} rejoins a running server and needs IST, but IST first seqno {} {}: restart that node (it then joins by SST)", joiner, from.1 + 1, why);
                self.sst_sent(Gtid::new(from.0, from.1), -libc::ENODATA);
                return true;
            }
            Err(why) => {
                log::info!("IST first seqno {} {}, falling back to SST", from.1 + 1, why);
                return false;
            }
        };
        // The server's script only signals the joiner (bypass: its data
        // holds everything up to `from`); it goes first, as the joiner
        // applies the stream only once its server has the state, and
        // buffers a bounded part of it meanwhile.
        let state = Gtid::new(from.0, from.1);
        if !running && !self.app.sst_donate(ctx, request, state, true) {
            log::error!("the server could not start the IST bypass; rejoining");
            self.sst_sent(state, -libc::ECANCELED);
            return true;
        }
        let sent = self.send_ist(joiner, &ist.addr, from.1, seqno, items, "");
        if running {
            // No script ran: the transfer's end is the donation's end.
            self.sst_sent(state, if sent { 0 } else { -libc::ECOMM });
        }
        true
    }

    /// The seqnos after `after` up to `upto`, or why they cannot be sent.
    fn ist_items(&self, after: Seqno, upto: Seqno, addr: &str) -> Result<Vec<(Seqno, Cached)>, NoIst> {
        if addr.is_empty() {
            return Err(NoIst::NoReceiver);
        }
        if after >= upto {
            return Ok(Vec::new());
        }
        self.cached(after + 1, upto).ok_or(NoIst::NotCached)
    }

    /// Seqnos `from..=to` from the gcache, read without holding its lock
    /// (the group thread caches every seqno under it).
    pub(super) fn cached(&self, from: Seqno, to: Seqno) -> Option<Vec<(Seqno, Cached)>> {
        let plan = self.gcache.lock().unwrap_or_else(|e| e.into_inner()).plan(from, to)?;
        plan.read()
    }

    /// Streams `items` (the seqnos after `after` up to `upto`) to the
    /// joiner's receiver; true when all of it went out.
    fn send_ist(&self, joiner: Uuid, addr: &str, after: Seqno, upto: Seqno, items: Vec<(Seqno, Cached)>, note: &str) -> bool {
        let header = Header { history: self.history(), joiner, first: after + 1, last: upto.max(after) };
        let writesets = items.iter().filter(|(_, i)| matches!(i, Cached::Writeset { .. })).count();
        let views = items.len() - writesets;
        // Galera's first words (mtr counts this line per transfer).
        log::info!(
            "async IST sender starting to serve {} sending {}-{} ({} writesets, {} configuration changes{})",
            addr,
            header.first,
            header.last,
            writesets,
            views,
            note
        );
        let tls = self.group().and_then(|g| g.tls());
        match channel::send(addr, header, items, tls.as_deref()) {
            Ok(()) => {
                log::info!("async IST sender served");
                true
            }
            Err(e) => {
                log::warning!("async IST sender failed to serve {}: {}", addr, e);
                false
            }
        }
    }

    /// The donor, once its SST script reported `state`: the seqnos after
    /// it up to the request follow over IST (Galera 4 sends its
    /// certification index preload there; ours comes with the group log).
    pub(super) fn ist_after_sst(&self, state: Gtid, sst: AfterSst) {
        if state.uuid != self.history() || state.seqno < 0 {
            log::info!("no IST after the SST: the script reported {}, not a position of history {}", state, self.history());
            return;
        }
        match self.ist_items(state.seqno, sst.upto, &sst.addr) {
            Ok(items) => {
                let note = format!(", after the SST's state at {} up to the state request at {}", state.seqno, sst.upto);
                self.send_ist(sst.joiner, &sst.addr, state.seqno, sst.upto, items, &note);
            }
            Err(why) => log::warning!("no IST after the SST to {}: IST first seqno {} {}", sst.joiner, state.seqno + 1, why),
        }
    }

    /// The donor remembers a full SST it starts (see `ist_after_sst`).
    pub(super) fn expect_sst_sent(&self, joiner: Uuid, ist: &IstRequest, upto: Seqno) {
        let after = (!ist.addr.is_empty()).then(|| AfterSst { joiner, addr: ist.addr.clone(), upto });
        *self.after_sst.lock().unwrap_or_else(|e| e.into_inner()) = after;
    }

    pub(super) fn take_after_sst(&self) -> Option<AfterSst> {
        self.after_sst.lock().unwrap_or_else(|e| e.into_inner()).take()
    }

    /// The joiner's side, once its data holds everything up to `gtid`:
    /// applies what the donor streams up to `entered` (where its live
    /// stream begins), the configuration changes before `entered` as views
    /// to the server. The position reached and whether the server heard a
    /// view, or None when a needed transfer failed.
    pub(super) fn receive_ist(&self, ctx: RecvCtx, gtid: Gtid, entered: Seqno, join_conf: i64) -> Option<(Seqno, IstViews)> {
        match self.apply_ist(ctx, gtid.seqno, entered, join_conf) {
            Ok(reached) => Some(reached),
            Err(e) if gtid.seqno < entered => {
                log::error!("IST failed: {}; the node must be restarted to join by SST", e);
                None
            }
            Err(e) => {
                log::info!("no IST after the state transfer ({}); nothing was missing: the state holds up to {}", e, gtid.seqno);
                Some((gtid.seqno, IstViews::default()))
            }
        }
    }

    fn apply_ist(&self, ctx: RecvCtx, position: Seqno, entered: Seqno, join_conf: i64) -> Result<(Seqno, IstViews), String> {
        let header = self.ist.wait_header(STALL)?;
        header.covers(position, entered)?;
        if position < entered {
            // Galera's wording: operators and mtr tests look for it.
            log::info!("Receiving IST: {} events (writesets and configuration changes), seqnos {}-{}", entered - position, position + 1, entered);
        } else {
            log::info!("IST of seqnos {}-{} after the state transfer: none missing here (state at {}, joined at {})", header.first, header.last, position, entered);
        }
        let mut views = IstViews::default();
        while let Some((seqno, item)) = self.ist.next(STALL)? {
            if seqno > entered {
                continue;
            }
            // What the group's order did not bring this node: a restarted
            // node's gcache goes on from what it had cached.
            self.gcache.lock().unwrap_or_else(|e| e.into_inner()).fill(seqno, item.clone());
            if seqno == entered && seqno > position && matches!(item, Cached::View { .. }) {
                views.join_held = true;
            } else if seqno > position {
                views.heard |= self.apply_ist_item(ctx, seqno, item, entered, join_conf);
            }
        }
        if position < entered {
            self.skip_upto.store(entered, Ordering::SeqCst);
            log::info!("IST applied up to {}", self.apply.last_left());
        }
        let reached = if views.join_held { entered } else { self.apply.last_left() };
        Ok((reached, views))
    }

    /// One seqno of the gap, in order: a writeset the server applies (or
    /// a dummy for one that failed certification everywhere), or a
    /// configuration change, which the server hears if it is older than
    /// `views_before` (the view this node entered with comes after the
    /// IST). True when the server heard a view, or is to hear the view
    /// this node joined in (configuration `join_conf`) after the IST.
    pub(super) fn apply_ist_item(&self, ctx: RecvCtx, seqno: Seqno, item: Cached, views_before: Seqno, join_conf: i64) -> bool {
        if self.recovered_holds(seqno) {
            self.pass_monitors(seqno);
            self.recovered_passed(seqno);
            return false;
        }
        let heard = self.apply_gap_item(ctx, seqno, item, views_before, join_conf);
        self.recovered_passed(seqno);
        heard
    }

    fn apply_gap_item(&self, ctx: RecvCtx, seqno: Seqno, item: Cached, views_before: Seqno, join_conf: i64) -> bool {
        match item {
            // Galera's IST delivers the configuration changes the joiner
            // missed to its server, in order (with own index -1 where it
            // was not a member), a restarted server's as a running one's:
            // the server rolls back the streaming transactions of members
            // that left in the meantime, its own of before the restart
            // among them, and no longer takes the view it returns in for
            // a repeat of its last one (which would roll back all of them).
            Cached::View { conf } => match View::decode(&conf, self.my_id()) {
                Ok(view) if view.seqno == seqno && seqno < views_before => {
                    // A joiner that took the group's state from a snapshot
                    // enters after its join view's own seqno, so the IST
                    // carries that view too. The server hears it once,
                    // after the IST: twice in a row, it would take the
                    // repeat for a partition healed and roll back every
                    // streaming transaction, which the others go on with.
                    match view.conf_id == join_conf {
                        true => self.pass_monitors(seqno),
                        false => self.deliver_view(ctx, &view),
                    }
                    true
                }
                _ => {
                    self.pass_monitors(seqno);
                    false
                }
            },
            Cached::Writeset { payload, certified } => {
                let verdict = if certified { Verdict::Pass { depends_on: seqno - 1 } } else { Verdict::Fail(FailReason::BelowIndex) };
                match WriteSet::decode(payload) {
                    Ok(ws) => {
                        self.apply_remote(ctx, seqno, &ws, verdict);
                    }
                    Err(e) => {
                        log::error!("IST writeset {} cannot be decoded ({}); skipping it", seqno, e);
                        self.pass_monitors(seqno);
                    }
                }
                false
            }
        }
    }
}

/// Why a gap cannot go by IST, worded to follow "IST first seqno N".
enum NoIst {
    NoReceiver,
    NotCached,
}

impl std::fmt::Display for NoIst {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            NoIst::NoReceiver => "cannot be sent: the joiner has no IST receiver",
            // Galera's words: galera.galera_gcache_recover_full_gcache
            // looks for them in the donor's log.
            NoIst::NotCached => "not found from cache",
        })
    }
}

//! lockstep-config against real Galera 26.4.23 (libgalera_smm.so with
//! MariaDB 10.11.19 on this machine). Every expected value below was
//! observed with `SELECT @@wsrep_provider_options`, `SET GLOBAL
//! wsrep_provider_options=...` and the server's error log; comments say
//! where lockstep deliberately differs.

use lockstep_config::{keys, Config, NodeInfo, Notice, Opt, OptionError, Value};
use std::time::Duration;

const DATA_DIR: &str = "/tmp/cfg-galera/a/";

fn node(address: &'static str) -> NodeInfo<'static> {
    NodeInfo {
        node_address: address,
        data_dir: DATA_DIR,
    }
}

fn init(options: &str) -> Config {
    Config::init(&node("127.0.0.1:27010"), options).unwrap_or_else(|e| panic!("{options}: {e}"))
}

fn shown(cfg: &Config, name: &str) -> Option<String> {
    cfg.text(Opt::from_name(name).unwrap()).map(str::to_string)
}

/// mariadbd --wsrep-node-address=127.0.0.1:27010
///   --wsrep-provider-options='base_port=27010;gcache.size=10M'
///   --datadir=/tmp/cfg-galera/a, then SELECT @@wsrep_provider_options.
const OBSERVED_DEFAULTS: &str = "\
base_dir = /tmp/cfg-galera/a/; \
base_host = 127.0.0.1; \
base_port = 27010; \
cert.log_conflicts = no; \
cert.optimistic_pa = yes; \
debug = no; \
evs.auto_evict = 0; \
evs.causal_keepalive_period = PT1S; \
evs.debug_log_mask = 0x1; \
evs.delay_margin = PT1S; \
evs.delayed_keep_period = PT30S; \
evs.inactive_check_period = PT0.5S; \
evs.inactive_timeout = PT15S; \
evs.info_log_mask = 0; \
evs.install_timeout = PT7.5S; \
evs.join_retrans_period = PT1S; \
evs.keepalive_period = PT1S; \
evs.max_install_timeouts = 3; \
evs.send_window = 4; \
evs.stats_report_period = PT1M; \
evs.suspect_timeout = PT5S; \
evs.use_aggregate = true; \
evs.user_send_window = 2; \
evs.version = 1; \
evs.view_forget_timeout = P1D; \
gcache.dir = /tmp/cfg-galera/a/; \
gcache.keep_pages_size = 0; \
gcache.mem_size = 0; \
gcache.name = galera.cache; \
gcache.page_size = 128M; \
gcache.recover = yes; \
gcache.size = 10M; \
gcomm.thread_prio = ; \
gcs.fc_debug = 0; \
gcs.fc_factor = 1.0; \
gcs.fc_limit = 16; \
gcs.fc_master_slave = no; \
gcs.fc_single_primary = no; \
gcs.max_packet_size = 64500; \
gcs.max_throttle = 0.25; \
gcs.recv_q_hard_limit = 9223372036854775807; \
gcs.recv_q_soft_limit = 0.25; \
gcs.sync_donor = no; \
gmcast.listen_addr = tcp://0.0.0.0:27010; \
gmcast.mcast_addr = ; \
gmcast.mcast_ttl = 1; \
gmcast.peer_timeout = PT3S; \
gmcast.segment = 0; \
gmcast.time_wait = PT5S; \
gmcast.version = 0; \
ist.recv_addr = 127.0.0.1; \
pc.announce_timeout = PT3S; \
pc.checksum = false; \
pc.ignore_quorum = false; \
pc.ignore_sb = false; \
pc.linger = PT20S; \
pc.npvo = false; \
pc.recovery = true; \
pc.version = 0; \
pc.wait_prim = true; \
pc.wait_prim_timeout = PT30S; \
pc.weight = 1; \
protonet.backend = asio; \
protonet.version = 0; \
repl.causal_read_timeout = PT30S; \
repl.commit_order = 3; \
repl.key_format = FLAT8; \
repl.max_ws_size = 2147483647; \
repl.proto_max = 11; \
socket.checksum = 2; \
socket.recv_buf_size = auto; \
socket.send_buf_size = auto; ";

#[test]
fn default_options_get_is_byte_identical_to_galera() {
    let cfg = init("base_port=27010;gcache.size=10M");
    // lockstep's own options are shown among Galera's, in name order.
    let ours = "lockstep.debug_hang_appliers = no; lockstep.log_sync = none; lockstep.max_lag_ms = 0; lockstep.metrics_addr = ; lockstep.segment_compression = yes; ";
    let rendered = cfg.render();
    assert!(rendered.contains(ours), "{rendered}");
    assert_eq!(rendered.replacen(ours, "", 1), OBSERVED_DEFAULTS);
}

#[test]
fn startup_values_render_as_galera_shows_them() {
    // One startup run on Galera; values as typed unless the owning module
    // rewrites them (gcomm: evs/pc/gmcast durations, booleans, integers).
    let cfg = init(
        "gcache.size=10485760; gcache.page_size=0x8000000; gcache.keep_pages_size=2048; \
         gcache.recover=YES; gcache.name = my.cache ; evs.view_forget_timeout=86400; \
         evs.inactive_check_period=1; evs.suspect_timeout=10; evs.inactive_timeout=PT60S; \
         evs.install_timeout=7.5; evs.use_aggregate=1; evs.debug_log_mask=0x1; \
         pc.linger=PT25S; pc.announce_timeout=4; pc.checksum=yes; pc.npvo=1; pc.ignore_sb=ON; \
         pc.wait_prim=1; pc.wait_prim_timeout=60; pc.weight=2; gmcast.peer_timeout=4; \
         gmcast.time_wait=PT6S; gmcast.segment=1; socket.checksum=1; \
         socket.send_buf_size=1048576; socket.recv_buf_size=2048; gcs.fc_single_primary=YES; \
         gcs.fc_master_slave=0; gcs.max_packet_size=65536; gcs.fc_limit=0x20; \
         gcs.fc_factor=0.50; gcs.recv_q_hard_limit=1073741824; gcs.recv_q_soft_limit=0.50; \
         gcs.max_throttle=.5; gcs.sync_donor=1; gcs.fc_debug=1; cert.log_conflicts=ON; \
         cert.optimistic_pa=1; repl.commit_order=2; repl.max_ws_size=1048576; \
         repl.causal_read_timeout=90; repl.key_format=flat16; repl.proto_max=10; debug=0; \
         pc.bootstrap=no; gmcast.isolate=0; ist.recv_bind=127.0.0.1; cert.max_length=1000; \
         cert.length_check=10; gmcast.mira=1; base_port=27010",
    );
    for (name, expected) in [
        ("cert.length_check", "10"),
        ("cert.log_conflicts", "ON"),
        ("cert.max_length", "1000"),
        ("cert.optimistic_pa", "1"),
        ("debug", "0"),
        ("evs.inactive_check_period", "PT1S"),
        ("evs.inactive_timeout", "PT1M"),
        ("evs.install_timeout", "PT7.5S"),
        ("evs.suspect_timeout", "PT10S"),
        ("evs.use_aggregate", "true"),
        ("evs.view_forget_timeout", "P1D"),
        ("evs.debug_log_mask", "0x1"),
        ("gcache.keep_pages_size", "2048"),
        ("gcache.name", "my.cache"),
        ("gcache.page_size", "0x8000000"),
        ("gcache.recover", "YES"),
        ("gcache.size", "10485760"),
        ("gcs.fc_debug", "1"),
        ("gcs.fc_factor", "0.50"),
        ("gcs.fc_limit", "0x20"),
        ("gcs.fc_master_slave", "0"),
        ("gcs.fc_single_primary", "YES"),
        ("gcs.max_packet_size", "65536"),
        ("gcs.max_throttle", ".5"),
        ("gcs.recv_q_hard_limit", "1073741824"),
        ("gcs.recv_q_soft_limit", "0.50"),
        ("gcs.sync_donor", "1"),
        ("gmcast.isolate", "0"),
        ("gmcast.mira", "1"),
        ("gmcast.peer_timeout", "PT4S"),
        ("gmcast.segment", "1"),
        ("gmcast.time_wait", "PT6S"),
        ("ist.recv_bind", "127.0.0.1"),
        ("pc.announce_timeout", "4"),
        ("pc.bootstrap", "no"),
        ("pc.checksum", "true"),
        ("pc.ignore_sb", "true"),
        ("pc.linger", "PT25S"),
        ("pc.npvo", "true"),
        ("pc.wait_prim", "1"),
        ("pc.wait_prim_timeout", "60"),
        ("pc.weight", "2"),
        ("repl.causal_read_timeout", "90"),
        ("repl.commit_order", "2"),
        ("repl.key_format", "flat16"),
        ("repl.max_ws_size", "1048576"),
        ("repl.proto_max", "10"),
        ("socket.checksum", "1"),
        ("socket.recv_buf_size", "2048"),
        ("socket.send_buf_size", "1048576"),
    ] {
        assert_eq!(shown(&cfg, name).as_deref(), Some(expected), "{name}");
    }
}

#[test]
fn gcomm_integers_are_decimal_and_rewritten_at_startup() {
    let cfg = init(
        "pc.linger=25; gmcast.time_wait=6; evs.send_window=010; evs.user_send_window=03; \
         evs.max_install_timeouts=04; evs.auto_evict=02; pc.weight=02; gmcast.segment=01; \
         gmcast.mcast_ttl=01; socket.checksum=01; evs.info_log_mask=10; evs.delay_margin=2; \
         evs.delayed_keep_period=40; evs.join_retrans_period=2; evs.stats_report_period=60; \
         pc.recovery=1; pc.ignore_quorum=1; gcomm.thread_prio=other:0; repl.commit_order=03; \
         repl.proto_max=011; evs.version=01; protonet.version=0; gcs.max_packet_size=64K; \
         gcache.recover=1",
    );
    for (name, expected) in [
        ("pc.linger", "PT25S"),
        ("gmcast.time_wait", "PT6S"),
        ("evs.send_window", "10"),
        ("evs.user_send_window", "3"),
        ("evs.max_install_timeouts", "4"),
        ("evs.auto_evict", "2"),
        ("pc.weight", "2"),
        ("gmcast.segment", "1"),
        ("gmcast.mcast_ttl", "1"),
        ("socket.checksum", "1"),
        ("evs.info_log_mask", "0x10"),
        ("evs.delay_margin", "PT2S"),
        ("evs.delayed_keep_period", "PT40S"),
        ("evs.join_retrans_period", "PT2S"),
        ("evs.stats_report_period", "PT1M"),
        ("pc.recovery", "true"),
        ("pc.ignore_quorum", "true"),
        ("gcomm.thread_prio", "other:0"),
        ("repl.commit_order", "03"),
        ("repl.proto_max", "011"),
        ("evs.version", "1"),
        ("protonet.version", "0"),
        ("gcs.max_packet_size", "64K"),
        ("gcache.recover", "1"),
    ] {
        assert_eq!(shown(&cfg, name).as_deref(), Some(expected), "{name}");
    }
    assert_eq!(cfg.get(keys::EVS_SEND_WINDOW), 10);
    assert_eq!(cfg.get(keys::EVS_INFO_LOG_MASK), 16);
}

#[test]
fn derived_evs_defaults_follow_their_sources() {
    // Galera: install_timeout = inactive_timeout / 2, causal keepalive =
    // keepalive period (observed PT15S / PT0.5S).
    let cfg = init("evs.inactive_timeout=PT30S; evs.keepalive_period=PT0.5S");
    assert_eq!(shown(&cfg, "evs.install_timeout").as_deref(), Some("PT15S"));
    assert_eq!(
        shown(&cfg, "evs.causal_keepalive_period").as_deref(),
        Some("PT0.5S")
    );
    // The standard MTR galera_2nodes.cnf options.
    let mtr = init(
        "repl.causal_read_timeout=PT90S;base_port=27010;evs.suspect_timeout=PT10S;\
         evs.inactive_timeout=PT30S;evs.install_timeout=PT15S;pc.wait_prim_timeout=PT60S;\
         gcache.size=10M",
    );
    assert_eq!(
        mtr.duration(keys::EVS_INSTALL_TIMEOUT),
        Duration::from_secs(15)
    );
    assert_eq!(
        mtr.duration(keys::REPL_CAUSAL_READ_TIMEOUT),
        Duration::from_secs(90)
    );
    assert_eq!(mtr.get(keys::GCACHE_SIZE), 10 << 20);
}

#[test]
fn startup_rejects_what_galera_rejects() {
    let node = node("127.0.0.1:27010");
    let err = |options: &str| Config::init(&node, options).unwrap_err();
    // every unknown key is reported, not just the first
    let e = err("no.such=1; also.bad=2; base_port=27010");
    assert_eq!(
        e.errors,
        vec![
            OptionError::Unknown {
                key: "no.such".into()
            },
            OptionError::Unknown {
                key: "also.bad".into()
            }
        ]
    );
    assert_eq!(
        e.to_string(),
        "Unknown parameter 'no.such'; Unknown parameter 'also.bad'"
    );
    // Galera fails startup on each of these (observed)
    for bad in [
        "pc.weight=0x2",
        "gmcast.segment=0x1",
        "repl.max_ws_size=0x100000",
        "gcs.fc_debug=yes",
        "evs.keepalive_period=2",
        "base_port",
        "base_port=1=2",
        "=5",
    ] {
        let e = err(bad);
        assert_eq!(e.errors.len(), 1, "{bad}");
        assert!(!e.to_string().contains('\n'), "{bad}: one line");
    }
    assert!(err("evs.keepalive_period=2")
        .to_string()
        .contains("evs.keepalive_period"));
    assert!(err("evs.user_send_window=5")
        .to_string()
        .contains("evs.send_window"));
}

#[test]
fn node_address_derivations() {
    // (node address, options) -> base_host, base_port, listen_addr,
    // ist.recv_addr, gcache.dir, all observed on Galera.
    let cases: &[(&str, &str, [Option<&str>; 5])] = &[
        (
            "",
            "base_port=27010",
            [
                None,
                Some("27010"),
                Some("tcp://0.0.0.0:27010"),
                None,
                Some(DATA_DIR),
            ],
        ),
        (
            "127.0.0.1",
            "base_port=27010",
            [
                Some("127.0.0.1"),
                Some("27010"),
                Some("tcp://0.0.0.0:27010"),
                Some("127.0.0.1"),
                Some(DATA_DIR),
            ],
        ),
        (
            "127.0.0.1:27010",
            "base_port=27020",
            [
                Some("127.0.0.1"),
                Some("27020"),
                Some("tcp://0.0.0.0:27020"),
                Some("127.0.0.1"),
                Some(DATA_DIR),
            ],
        ),
        (
            "127.0.0.1:27010",
            "gmcast.listen_addr=tcp://127.0.0.1:27030",
            [
                Some("127.0.0.1"),
                Some("27030"),
                Some("tcp://127.0.0.1:27030"),
                Some("127.0.0.1"),
                Some(DATA_DIR),
            ],
        ),
        (
            "127.0.0.1:27010",
            "gmcast.listen_addr=127.0.0.1",
            [
                Some("127.0.0.1"),
                Some("27010"),
                Some("tcp://127.0.0.1:27010"),
                Some("127.0.0.1"),
                Some(DATA_DIR),
            ],
        ),
        (
            "localhost:27010",
            "",
            [
                Some("localhost"),
                Some("27010"),
                Some("tcp://0.0.0.0:27010"),
                Some("localhost"),
                Some(DATA_DIR),
            ],
        ),
        (
            "[::1]:27010",
            "",
            [
                Some("[::1]"),
                Some("27010"),
                Some("tcp://0.0.0.0:27010"),
                Some("[::1]"),
                Some(DATA_DIR),
            ],
        ),
        (
            "127.0.0.1:27010",
            "ist.recv_addr=127.0.0.1:27040",
            [
                Some("127.0.0.1"),
                Some("27010"),
                Some("tcp://0.0.0.0:27010"),
                Some("127.0.0.1:27040"),
                Some(DATA_DIR),
            ],
        ),
        (
            "127.0.0.1:27010",
            "base_dir=/tmp/cfg-galera/bd",
            [
                Some("127.0.0.1"),
                Some("27010"),
                Some("tcp://0.0.0.0:27010"),
                Some("127.0.0.1"),
                Some("/tmp/cfg-galera/bd"),
            ],
        ),
        (
            "127.0.0.1:27010",
            "base_host=127.0.0.5",
            [
                Some("127.0.0.5"),
                Some("27010"),
                Some("tcp://0.0.0.0:27010"),
                Some("127.0.0.1"),
                Some(DATA_DIR),
            ],
        ),
        (
            "127.0.0.1:27010",
            "gcache.dir=/tmp/cfg-galera/gcd",
            [
                Some("127.0.0.1"),
                Some("27010"),
                Some("tcp://0.0.0.0:27010"),
                Some("127.0.0.1"),
                Some("/tmp/cfg-galera/gcd"),
            ],
        ),
        (
            "127.0.0.1:27010",
            "base_host=127.0.0.5;gmcast.listen_addr=tcp://127.0.0.1:27030;base_port=27050",
            [
                Some("127.0.0.5"),
                Some("27030"),
                Some("tcp://127.0.0.1:27030"),
                Some("127.0.0.1"),
                Some(DATA_DIR),
            ],
        ),
        (
            "127.0.0.1:27010",
            "gmcast.listen_addr=tcp://localhost",
            [
                Some("127.0.0.1"),
                Some("27010"),
                Some("tcp://127.0.0.1:27010"),
                Some("127.0.0.1"),
                Some(DATA_DIR),
            ],
        ),
    ];
    for (address, options, expected) in cases {
        let cfg = Config::init(&node(address), options).unwrap();
        let got = [
            "base_host",
            "base_port",
            "gmcast.listen_addr",
            "ist.recv_addr",
            "gcache.dir",
        ]
        .map(|k| shown(&cfg, k));
        assert_eq!(
            got.map(|v| v.clone()),
            expected.map(|v| v.map(str::to_string)),
            "{address} {options}"
        );
        assert!(shown(&cfg, "base_dir").is_some());
    }
}

#[test]
fn unspecified_or_malformed_node_address_fails_init() {
    for (address, message) in [
        (
            "0.0.0.0:27010",
            "Bad value for 'node_address': '0.0.0.0:27010'",
        ),
        ("::", "Bad value for 'node_address': '::'"),
        ("[::]:27010", "Bad value for 'node_address'"), // Galera lets this one through
        ("127.0.0.1:abc", "Can't parse port number from 'abc'"),
    ] {
        let e = Config::init(&node(address), "").unwrap_err().to_string();
        assert!(e.contains(message), "{address}: {e}");
    }
}

#[test]
fn ist_receive_address_is_host_and_next_port() {
    let cfg = init("base_port=27010");
    assert_eq!(
        cfg.ist_recv_addr().as_deref(),
        Some("tcp://127.0.0.1:27011")
    );
    let explicit = init("ist.recv_addr=127.0.0.1:27040");
    assert_eq!(
        explicit.ist_recv_addr().as_deref(),
        Some("tcp://127.0.0.1:27040")
    );
    let nameless = Config::init(&node(""), "").unwrap();
    assert_eq!(nameless.ist_recv_addr(), None);
    // IPv6 node addresses, bare or bracketed (mtr's galera_ipv6 tests).
    let bare = Config::init(&node("::1"), "base_port=27010").unwrap();
    assert_eq!(bare.ist_recv_addr().as_deref(), Some("tcp://[::1]:27011"));
    let bracketed = Config::init(&node("[::1]:27010"), "").unwrap();
    assert_eq!(bracketed.ist_recv_addr().as_deref(), Some("tcp://[::1]:27011"));
    let mtr = Config::init(&node("::1"), "base_port=27010;gmcast.listen_addr=tcp://[::]:27010;ist.recv_addr=[::1]").unwrap();
    assert_eq!(mtr.ist_recv_addr().as_deref(), Some("tcp://[::1]:27011"));
    assert_eq!(mtr.ist_recv_bind(), None);
    let bind = init("ist.recv_bind=0.0.0.0");
    assert_eq!(bind.ist_recv_bind().as_deref(), Some("tcp://0.0.0.0:27011"));
}

#[test]
fn runtime_values_render_as_galera_shows_them() {
    let mut cfg = init("base_port=27010;gcache.size=10M");
    // (set, option, shown afterwards) in the order they were run on Galera
    for (set, name, expected) in [
        ("gcs.fc_limit=100", "gcs.fc_limit", "100"),
        ("evs.suspect_timeout=PT7S", "evs.suspect_timeout", "PT7S"),
        ("pc.ignore_sb=1", "pc.ignore_sb", "1"),
        ("gcs.fc_factor=0.8", "gcs.fc_factor", "0.8"),
        ("gcs.fc_limit=0x10", "gcs.fc_limit", "16"),
        ("gcs.fc_limit=1K", "gcs.fc_limit", "1K"),
        ("gcs.fc_limit= 200 ", "gcs.fc_limit", "200"),
        ("gcs.fc_factor=1", "gcs.fc_factor", "1"),
        ("evs.suspect_timeout=7", "evs.suspect_timeout", "PT7S"),
        (
            "evs.suspect_timeout=PT0.5S",
            "evs.suspect_timeout",
            "PT0.5S",
        ),
        ("evs.suspect_timeout=P1D", "evs.suspect_timeout", "P1D"),
        ("evs.suspect_timeout=PT5S", "evs.suspect_timeout", "PT5S"),
        ("pc.ignore_sb=TRUE", "pc.ignore_sb", "TRUE"),
        ("pc.ignore_sb=On", "pc.ignore_sb", "On"),
        ("pc.ignore_sb=false", "pc.ignore_sb", "false"),
        ("base_dir=/tmp/x/", "base_dir", "/tmp/x/"),
        ("base_host=127.0.0.2", "base_host", "127.0.0.2"),
        ("base_port=27020", "base_port", "27020"),
        ("cert.log_conflicts=YES", "cert.log_conflicts", "YES"),
        ("cert.optimistic_pa=0", "cert.optimistic_pa", "0"),
        ("evs.auto_evict=1", "evs.auto_evict", "1"),
        (
            "evs.causal_keepalive_period=PT60S",
            "evs.causal_keepalive_period",
            "PT1M",
        ),
        ("evs.debug_log_mask=3", "evs.debug_log_mask", "0x3"),
        ("evs.delay_margin=2", "evs.delay_margin", "PT2S"),
        (
            "evs.delayed_keep_period=PT40S",
            "evs.delayed_keep_period",
            "PT40S",
        ),
        (
            "evs.inactive_timeout=PT20S",
            "evs.inactive_timeout",
            "PT20S",
        ),
        ("evs.info_log_mask=0x2", "evs.info_log_mask", "0x2"),
        ("evs.install_timeout=PT8S", "evs.install_timeout", "PT8S"),
        (
            "evs.join_retrans_period=PT2S",
            "evs.join_retrans_period",
            "PT2S",
        ),
        ("evs.keepalive_period=PT2S", "evs.keepalive_period", "PT2S"),
        (
            "evs.max_install_timeouts=4",
            "evs.max_install_timeouts",
            "4",
        ),
        ("evs.send_window=8", "evs.send_window", "8"),
        (
            "evs.stats_report_period=PT120S",
            "evs.stats_report_period",
            "PT2M",
        ),
        ("evs.use_aggregate=no", "evs.use_aggregate", "false"),
        ("evs.user_send_window=3", "evs.user_send_window", "3"),
        (
            "gcache.keep_pages_size=1024",
            "gcache.keep_pages_size",
            "1K",
        ),
        ("gcache.mem_size=1048576", "gcache.mem_size", "1M"),
        ("gcache.page_size=64M", "gcache.page_size", "64M"),
        ("gcs.max_throttle=0.5", "gcs.max_throttle", "0.5"),
        ("gcs.recv_q_hard_limit=1G", "gcs.recv_q_hard_limit", "1G"),
        ("gcs.recv_q_soft_limit=0.50", "gcs.recv_q_soft_limit", "0.5"),
        ("pc.ignore_quorum=1", "pc.ignore_quorum", "1"),
        ("pc.weight=2", "pc.weight", "2"),
        (
            "repl.causal_read_timeout=PT60S",
            "repl.causal_read_timeout",
            "PT60S",
        ),
        ("repl.key_format=flat16", "repl.key_format", "flat16"),
        ("repl.max_ws_size=1000000", "repl.max_ws_size", "1000000"),
        ("repl.proto_max=10", "repl.proto_max", "10"),
        ("socket.recv_buf_size=1M", "socket.recv_buf_size", "1M"),
        ("socket.recv_buf_size=auto", "socket.recv_buf_size", "auto"),
    ] {
        cfg.set(set).unwrap_or_else(|e| panic!("{set}: {e}"));
        assert_eq!(shown(&cfg, name).as_deref(), Some(expected), "{set}");
    }
}

#[test]
fn runtime_refusals_match_galera() {
    let mut cfg = init("base_port=27010;gcache.size=10M");
    let before = cfg.render();
    for set in [
        // unknown
        "no.such.option=1",
        "evs.retrans_period=PT1S",
        "gcache.debug=1",
        "dbug=x",
        // bad value / out of range
        "gcs.fc_limit=abc",
        "gcs.fc_limit=-1",
        "gcs.fc_factor=1.5",
        "gcs.fc_factor=-0.1",
        "gcs.fc_factor=abc",
        "evs.suspect_timeout=abc",
        "pc.ignore_sb=maybe",
        "debug=maybe",
        "debug=",
        "repl.max_ws_size=1M",
        "repl.key_format=FLAT9",
        "repl.causal_read_timeout=abc",
        "gcs.recv_q_soft_limit=1.0",
        "gcs.max_throttle=1",
        "gcs.recv_q_hard_limit=0",
        "socket.recv_buf_size=-1",
        "gmcast.peer_addr=",
        "pc.weight=256",
        // can't change at runtime
        "gcache.size=1G",
        "gcache.dir=/tmp",
        "gcache.name=x.cache",
        "gcache.recover=no",
        "evs.inactive_check_period=PT1S",
        "evs.view_forget_timeout=PT12H",
        "gcomm.thread_prio=other:0",
        "gcs.fc_master_slave=yes",
        "gcs.fc_single_primary=yes",
        "gmcast.listen_addr=tcp://127.0.0.1:27011",
        "gmcast.mcast_ttl=2",
        "gmcast.peer_timeout=PT4S",
        "gmcast.segment=1",
        "gmcast.time_wait=PT6S",
        "gmcast.version=1",
        "ist.recv_addr=127.0.0.1:27012",
        "pc.announce_timeout=PT4S",
        "pc.checksum=yes",
        "pc.linger=PT25S",
        "pc.npvo=1",
        "pc.recovery=0",
        "pc.version=1",
        "pc.wait_prim=0",
        "pc.wait_prim_timeout=PT40S",
        "protonet.backend=asio2",
        "protonet.version=1",
        "repl.commit_order=2",
        "socket.checksum=1",
        "socket.send_buf_size=1M",
        "cert.max_length=1000",
        "cert.length_check=10",
        "ist.recv_bind=127.0.0.1",
        "gmcast.group=x",
        "gmcast.mcast_port=1",
        "socket.non_blocking=1",
        "socket.ssl=no",
        "socket.dynamic=no",
        "socket.ssl_cipher=x",
        "gcs.stateless=1",
        "gcs.max_packet_size=32768",
    ] {
        let failure = cfg.set(set).expect_err(set);
        assert!(failure.applied.is_empty(), "{set}");
        let key = set.split('=').next().unwrap();
        let line = failure.error.to_string();
        assert!(line.contains(&format!("'{key}'")), "{set}: {line}");
        assert!(!line.contains('\n'), "{set}");
    }
    assert_eq!(cfg.render(), before, "failed sets change nothing");
    assert_eq!(
        cfg.set("no.such.option=1").unwrap_err().to_string(),
        "Unknown parameter 'no.such.option'" // Galera's log line
    );
    assert_eq!(
        cfg.set("gcache.size=1G").unwrap_err().error,
        OptionError::NotDynamic {
            key: "gcache.size".into()
        }
    );
}

#[test]
fn setting_the_current_text_is_a_no_op_even_for_static_options() {
    let mut cfg = init("base_port=27010");
    for set in [
        "pc.npvo=false",
        "gmcast.mcast_addr=",
        "evs.version=1",
        "gcache.size=128M",
    ] {
        assert_eq!(cfg.set(set), Ok(vec![]), "{set}");
    }
    // a different spelling of the same value is a real set
    assert_eq!(cfg.set("gcs.fc_limit=0x10").unwrap().len(), 1);
}

#[test]
fn runtime_set_is_ordered_and_stops_at_first_failure() {
    let mut cfg = init("");
    let changes = cfg.set("gcs.fc_limit=20;gcs.fc_limit=30").unwrap();
    assert_eq!(changes.len(), 2);
    assert_eq!(cfg.get(keys::GCS_FC_LIMIT), 30);

    let failure = cfg
        .set("gcs.fc_limit=50;no.such=1;gcs.fc_factor=0.5")
        .unwrap_err();
    assert_eq!(failure.applied.len(), 1);
    assert_eq!(failure.applied[0].opt, keys::GCS_FC_LIMIT.opt());
    assert_eq!(failure.applied[0].value, Value::Int(50));
    assert_eq!(
        failure.error,
        OptionError::Unknown {
            key: "no.such".into()
        }
    );
    assert_eq!(cfg.get(keys::GCS_FC_LIMIT), 50); // stays applied, as in Galera
    assert_eq!(cfg.get(keys::GCS_FC_FACTOR), 1.0);

    // a syntax error applies nothing
    let failure = cfg.set("gcs.fc_limit=60;bad").unwrap_err();
    assert!(failure.applied.is_empty());
    assert_eq!(cfg.get(keys::GCS_FC_LIMIT), 50);
    assert_eq!(cfg.set(""), Ok(vec![]));
}

#[test]
fn evs_runtime_constraints_are_galeras() {
    let mut cfg = init("");
    assert!(cfg.set("evs.send_window=1").is_err()); // < user_send_window 2
    assert!(cfg.set("evs.user_send_window=5").is_err()); // > send_window 4
    assert!(cfg.set("evs.install_timeout=PT1S").is_err()); // < 2 * keepalive
    assert!(cfg.set("evs.install_timeout=PT16S").is_err()); // > inactive_timeout
    assert_eq!(
        cfg.get(keys::EVS_SEND_WINDOW),
        4,
        "refused value rolled back"
    );
    // runtime does not re-check the startup-only relations (Galera neither)
    assert!(cfg.set("evs.suspect_timeout=PT1S").is_ok());
}

#[test]
fn hidden_options_show_once_set_at_startup_and_actions_never_from_runtime() {
    let mut cfg = init("");
    assert_eq!(shown(&cfg, "pc.bootstrap"), None);
    assert!(!cfg.render().contains("pc.bootstrap"));
    let changes = cfg.set("pc.bootstrap=yes").unwrap();
    assert_eq!(changes[0].value, Value::Bool(true));
    assert_eq!(shown(&cfg, "pc.bootstrap"), None, "an action is not stored");
    // actions fire again even with the same text
    assert_eq!(cfg.set("pc.bootstrap=yes").unwrap().len(), 1);
    assert_eq!(cfg.set("gmcast.isolate=1").unwrap()[0].value, Value::Int(1));
    assert!(cfg.set("gmcast.isolate=3").is_err());

    let startup = init("pc.bootstrap=1; gmcast.isolate=0; cert.max_length=1000");
    assert!(startup.render().contains("cert.max_length = 1000; "));
    assert!(startup.render().contains("gmcast.isolate = 0; "));
    assert!(startup.render().contains("pc.bootstrap = 1; "));
}

#[test]
fn typed_access() {
    let cfg = init("gcs.fc_factor=0.8; evs.suspect_timeout=PT10S; gcs.fc_single_primary=yes");
    assert_eq!(cfg.get(keys::GCS_FC_LIMIT), 16);
    assert_eq!(cfg.get(keys::GCS_FC_FACTOR), 0.8);
    assert!(cfg.get(keys::GCS_FC_SINGLE_PRIMARY));
    assert_eq!(
        cfg.duration(keys::EVS_SUSPECT_TIMEOUT),
        Duration::from_secs(10)
    );
    assert_eq!(
        cfg.duration(keys::EVS_VIEW_FORGET_TIMEOUT),
        Duration::from_secs(86400)
    );
    assert_eq!(cfg.get(keys::GCACHE_SIZE), 128 << 20);
    assert_eq!(cfg.get(keys::GCS_RECV_Q_HARD_LIMIT), i64::MAX);
    assert_eq!(cfg.get(keys::CERT_MAX_LENGTH), 16384); // hidden, implicit
    assert!(!cfg.get(keys::PC_BOOTSTRAP));
    assert_eq!(cfg.get(keys::GMCAST_MCAST_PORT), 27010); // follows base_port
    assert_eq!(cfg.str(keys::BASE_DIR), Some(DATA_DIR));
    assert_eq!(cfg.str(keys::GMCAST_PEER_ADDR), None);
    assert_eq!(cfg.get(keys::REPL_KEY_FORMAT).as_deref(), Some("FLAT8"));
    assert_eq!(keys::GCS_FC_LIMIT.name(), "gcs.fc_limit");
}

#[test]
fn every_option_has_a_typed_value_after_init() {
    let cfg = Config::init(&node(""), "").unwrap();
    for opt in Opt::ALL {
        let value = cfg.value(*opt);
        let may_be_unset = matches!(
            opt.spec().kind,
            lockstep_config::options::Kind::Str
                | lockstep_config::options::Kind::Addr
                | lockstep_config::options::Kind::Choice(_)
                | lockstep_config::options::Kind::BufSize
                | lockstep_config::options::Kind::ThreadPrio
        );
        assert!(
            may_be_unset || *value != Value::Unset,
            "{} has no value",
            opt.name()
        );
    }
}

#[test]
fn not_yet_effective_options_are_reported_once_per_process() {
    // ist.keep_keys is set by no other test: the report is process-wide.
    let mut cfg = init("ist.keep_keys=no; gcs.fc_limit=32");
    let notices = cfg.drain_notices();
    assert!(notices.contains(&Notice::NotYetEffective(Opt::IstKeepKeys)));
    assert!(
        !notices.contains(&Notice::NotYetEffective(Opt::GcsFcLimit)),
        "effective"
    );
    assert_eq!(
        Notice::NotYetEffective(Opt::IstKeepKeys).to_string(),
        "Parameter 'ist.keep_keys' is accepted but not yet effective in lockstep: \
         IST sends write sets as they were ordered, keys included"
    );
    let mut again = init("ist.keep_keys=yes");
    assert!(
        again.drain_notices().is_empty(),
        "reported once per process"
    );
    // defaults and derived values are not "set": nothing to report
    assert!(init("").drain_notices().is_empty());
}

#[test]
fn deprecated_options_warn_with_galeras_wording() {
    let mut cfg = init("gcs.fc_master_slave=no");
    assert!(cfg
        .drain_notices()
        .contains(&Notice::Deprecated(Opt::GcsFcMasterSlave)));
    assert_eq!(
        Notice::Deprecated(Opt::GcsFcMasterSlave).to_string(),
        "Parameter 'gcs.fc_master_slave' is deprecated and will be removed in future versions"
    );
}

#[test]
fn cluster_address_options_apply_at_connect() {
    let mut cfg = init("base_port=27010");
    let address = lockstep_config::parse_cluster_address(
        "gcomm://?gmcast.segment=2&evs.suspect_timeout=7&no.such=1",
    )
    .unwrap();
    cfg.apply_address_options(&address).unwrap();
    assert_eq!(shown(&cfg, "gmcast.segment").as_deref(), Some("2")); // as Galera showed
    assert_eq!(shown(&cfg, "evs.suspect_timeout").as_deref(), Some("PT7S"));
    assert!(cfg
        .drain_notices()
        .contains(&Notice::IgnoredAddressOption("no.such".into())));
    let bad = lockstep_config::parse_cluster_address("gcomm://?gmcast.segment=abc").unwrap();
    let e = cfg.apply_address_options(&bad).unwrap_err().to_string();
    assert!(
        e.starts_with("Bad value 'abc' for parameter 'gmcast.segment'"),
        "{e}"
    );
}

#[test]
fn handles_report_their_option() {
    assert_eq!(keys::EVS_SUSPECT_TIMEOUT.opt(), Opt::EvsSuspectTimeout);
    assert_eq!(
        keys::PC_BOOTSTRAP.opt().spec().runtime,
        lockstep_config::Runtime::Action
    );
}

#[test]
fn mariadb_mtr_startup_options_are_accepted() {
    // A sample of the 68 distinct startup option strings of MariaDB's
    // galera* suites (all 68 checked while writing this crate), and the
    // runtime sets they use; dbug/signal exist only in debug builds.
    for options in [
        "gcache.recover=yes;gcache.size=10M;pc.ignore_sb=true;repl.causal_read_timeout=PT90S;\
         base_port=27020;pc.wait_prim_timeout=PT60S",
        "gcs.max_packet_size=2;repl.causal_read_timeout=PT90S;base_port=27020;\
         evs.suspect_timeout=PT10S;evs.inactive_timeout=PT30S;evs.install_timeout=PT15S;\
         pc.wait_prim_timeout=PT60S;gcache.size=10M",
        "pc.ignore_sb=true;repl.causal_read_timeout=PT90S;base_port=27020;\
         gmcast.listen_addr=tcp://[::]:27020;ist.recv_addr=[::1]:27021;\
         evs.suspect_timeout=PT10S;evs.inactive_timeout=PT30S;evs.install_timeout=PT15S;\
         pc.wait_prim_timeout=PT60S;gcache.size=10M",
        "repl.causal_read_timeout=PT90S;base_port=27040;gmcast.listen_addr=127.0.0.3;\
         evs.suspect_timeout=PT10S;evs.inactive_timeout=PT30S;evs.install_timeout=PT15S;\
         pc.ignore_quorum=TRUE;pc.wait_prim=FALSE;gcache.size=10M",
        "repl.causal_read_timeout=PT90S;base_port=27020;evs.suspect_timeout=PT20S;\
         evs.inactive_timeout=PT30S;evs.install_timeout=PT25S;pc.wait_prim_timeout=PT60S;\
         gcache.size=128M;pc.weight=2",
        "pc.ignore_sb=true;base_port=27020;ist.recv_bind=127.0.0.1;gcache.size=1",
        "gcs.stateless=1",
        "pc.recovery=false;gcache.size=16K",
    ] {
        Config::init(&node("127.0.0.1"), options).unwrap_or_else(|e| panic!("{options}: {e}"));
    }
    let mut cfg = init("");
    for set in [
        "evs.inactive_timeout=PT100M; evs.suspect_timeout=PT1S",
        "gcs.fc_limit=1",
        "gmcast.isolate = 1",
        "gmcast.isolate=0",
        "pc.bootstrap=1",
        "pc.weight = 1",
        "repl.causal_read_timeout=PT1H",
        "repl.key_format=FLAT16",
        "repl.max_ws_size=10000",
    ] {
        cfg.set(set).unwrap_or_else(|e| panic!("{set}: {e}"));
    }
    for refused in [
        "a=1",
        "gmcasts.segment=1",
        "dbug=d,after_replicate_sync",
        "signal=x",
    ] {
        assert!(cfg.set(refused).is_err(), "{refused}");
    }
}

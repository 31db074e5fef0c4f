//! The config service's declarations against Galera 26.4.23's, as MariaDB
//! 11.8.9 showed them (fixtures/galera-26.4.23-mariadb-11.8.9-variables.tsv:
//! `SELECT variable_name, variable_type, read_only, global_value FROM
//! information_schema.system_variables WHERE variable_name LIKE
//! 'wsrep\_provider\_%'` on one node with `plugin-wsrep-provider=ON`,
//! wsrep_node_address=127.0.0.1, base_port=39501; the data dir renamed).

use lockstep_config::service::{parameters, Param, ParamValue};
use lockstep_config::{Config, NodeInfo};

const FIXTURE: &str = include_str!("fixtures/galera-26.4.23-mariadb-11.8.9-variables.tsv");

/// The server's variable name of a parameter.
fn variable(name: &str) -> String {
    format!("WSREP_PROVIDER_{}", name.to_uppercase().replace('.', "_"))
}

/// (type, read-only, value) as information_schema shows them.
fn shown(p: &Param) -> (&'static str, &'static str, String) {
    let ro = if p.read_only { "YES" } else { "NO" };
    match &p.value {
        ParamValue::Bool(b) => ("BOOLEAN", ro, if *b { "ON" } else { "OFF" }.to_string()),
        ParamValue::Integer(i) => ("BIGINT", ro, i.to_string()),
        ParamValue::Double(d) => ("DOUBLE", ro, format!("{d:.6}")),
        ParamValue::Str(s) => ("VARCHAR", ro, s.clone()),
    }
}

/// The defaults, with the node address and port the fixture's node had.
fn defaults() -> Config {
    let node = NodeInfo {
        node_address: "127.0.0.1",
        data_dir: "/tmp/cfg-galera/a/",
    };
    Config::init(&node, "base_port=39501").expect("defaults")
}

fn ours() -> Vec<Param> {
    parameters(&defaults())
}

#[test]
fn every_variable_galera_declares_has_its_type_read_only_flag_and_default() {
    let ours = ours();
    let mut wrong = Vec::new();
    for line in FIXTURE.lines() {
        let f: Vec<&str> = line.split('\t').collect();
        let (name, galera) = (f[0], (f[1], f[2], f.get(3).copied().unwrap_or("")));
        let Some(p) = ours.iter().find(|p| variable(p.name) == name) else {
            wrong.push(format!("{name}: not declared"));
            continue;
        };
        let (ty, ro, value) = shown(p);
        if (ty, ro) != (galera.0, galera.1) || value != galera.2 {
            wrong.push(format!(
                "{name}: {ty} {ro} {value:?}, Galera {} {} {:?}",
                galera.0, galera.1, galera.2
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {} differ:\n{}",
        wrong.len(),
        FIXTURE.lines().count(),
        wrong.join("\n")
    );
}

#[test]
fn options_galera_does_not_have_are_ours_alone() {
    let ours = ours();
    let declared_by_galera = |name: &str| FIXTURE.lines().any(|l| l.starts_with(&format!("{}\t", variable(name))));
    let extra: Vec<&str> = ours.iter().map(|p| p.name).filter(|n| !declared_by_galera(n)).collect();
    assert!(extra.iter().all(|n| n.starts_with("lockstep.")), "declared beyond Galera's: {extra:?}");
    let names: std::collections::BTreeSet<&str> = ours.iter().map(|p| p.name).collect();
    assert_eq!(names.len(), ours.len(), "a name declared twice (11.8 unloads the provider)");
}

/// The text wsrep-lib hands `options_set` when a variable is SET in
/// plugin mode (provider_options.hpp: bools as yes/no, doubles through
/// std::to_string).
fn as_wsrep_lib_sets(v: &ParamValue) -> String {
    match v {
        ParamValue::Bool(b) => if *b { "yes" } else { "no" }.to_string(),
        ParamValue::Integer(i) => i.to_string(),
        ParamValue::Double(d) => format!("{d:.6}"),
        ParamValue::Str(s) => s.clone(),
    }
}

/// Writable variables whose own value Galera 26.4.23 refuses on 11.8.9
/// (`SET GLOBAL wsrep_provider_pc_checksum=OFF`: "Variable 'pc_checksum'
/// can't be set to the value of 'no'"): options it takes at startup only,
/// and an empty peer address.
const GALERA_REFUSES: &[&str] = &[
    "evs.inactive_check_period",
    "gmcast.peer_addr",
    "pc.checksum",
    "pc.npvo",
];

#[test]
fn a_writable_variable_set_to_its_own_value_is_accepted_where_galera_accepts_it() {
    let mut refused = Vec::new();
    for p in ours().iter().filter(|p| !p.read_only) {
        let mut cfg = defaults();
        if cfg
            .set(&format!("{}={}", p.name, as_wsrep_lib_sets(&p.value)))
            .is_err()
        {
            refused.push(p.name);
        }
    }
    assert_eq!(refused, GALERA_REFUSES);
}

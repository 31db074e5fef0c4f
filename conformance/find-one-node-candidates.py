#!/usr/bin/env python3
"""List galera/galera_sr tests that could run on a one-node cluster.

Reads the installed mtr suites (package mariadb-test) and the Galera pass
list, follows every `--source` include (except the connection set-up
includes galera_cluster.inc & co., which only loop over the nodes), and keeps
the tests that pass with Galera and never touch a second server: no node_2,
no NODE_MYPORT_2, no mysqld.2, no wait for wsrep_cluster_size >= 2, no test
.cnf that configures a second server or includes another multi-node cnf.

Output: one line per kept test, in list-file format with a reason comment,
for the `<suite>_1node` suites of `lockstep conformance`. This is only the
static filter: every kept test must then be run with Galera in one-node mode
(see conformance/README.md) before it goes into one-node-candidates.txt.

usage: find-one-node-candidates.py [--rejected] > /tmp/candidates.txt
"""
import os
import re
import sys

MTR = "/usr/share/mysql/mysql-test"
PASS_LIST = "/work/shared/conformance/galera-26.4.23-pass.txt"
SUITES = ["galera", "galera_sr"]
SOURCE = re.compile(r"^\s*-*-?source\s+(\S+?)\s*;?\s*$", re.I | re.M)
SECOND_SERVER = re.compile(
    r"node_[2-9]\b|NODE_MY(PORT|SOCK)_[2-9]|mysqld\.[2-9]|galera_server_number\s*=\s*[2-9]"
    r"|galera_cluster_size\s*=\s*[2-9]|server_[2-9]\b|master-slave\.inc|rpl_init"
    r"|VARIABLE_VALUE\s*=\s*[2-9]\s+FROM\s+\S+\s+WHERE\s+VARIABLE_NAME\s*=\s*'wsrep_cluster_size'",
    re.I,
)
SETUP = {"include/galera_cluster.inc", "include/galera_init.inc", "include/galera_end.inc",
         "include/galera_connect.inc", "include/galera_wait_ready.inc"}
FEATURES = [  # what a test leans on, for the reason comment
    ("wsrep_provider_options", "provider options"), ("wsrep_desync", "desync"),
    ("FLUSH TABLES", "FTWRL/pause"), ("BACKUP STAGE", "backup stages/pause"),
    ("wsrep_trx_fragment", "streaming replication"), ("RSU", "RSU"),
    ("restart_mysqld", "restart"), ("shutdown_mysqld", "restart"), ("kill_mysqld", "crash+restart"),
    ("wsrep_max_ws", "writeset limits"), ("wsrep_sync_wait", "sync_wait"),
    ("WSREP_LAST", "GTID"), ("wsrep_start_position", "start position"), ("XA ", "XA"),
]


def resolve(name, here):
    for base in (MTR, here, os.path.dirname(here)):
        path = os.path.normpath(os.path.join(base, name))
        if os.path.isfile(path):
            return path
    return None


def code(path):
    text = open(path, errors="replace").read()
    return "\n".join(l for l in text.splitlines() if not l.lstrip().startswith("#"))


def second_server(path, seen):
    """The first sign (in the test or its includes) that a second server is used."""
    if path in seen:
        return None
    seen.add(path)
    body = code(path)
    found = SECOND_SERVER.search(body)
    if found:
        return f"{os.path.relpath(path, MTR)} uses '{found.group(0)}'"
    for name in SOURCE.findall(body):
        if "$" in name:
            return f"includes a computed file {name}"
        inc = resolve(name, os.path.dirname(path))
        if inc is None:
            return f"includes missing {name}"
        if os.path.relpath(inc, MTR) not in SETUP:
            problem = second_server(inc, seen)
            if problem:
                return problem
    return None


def own_cnf(tdir, name):
    """(problem, note) about the test's own .cnf."""
    path = os.path.join(tdir, name + ".cnf")
    if not os.path.isfile(path):
        return None, None
    text = open(path).read()
    includes = re.findall(r"^!include\s+(\S+)", text, re.M)
    if any(os.path.basename(i) != "galera_2nodes.cnf" for i in includes):
        return f"own .cnf includes {includes}", None
    if re.search(r"^\[mysqld\.[2-9]", text, re.M):
        return "own .cnf configures mysqld.2+", None
    return None, "own .cnf tunes node 1"


def topic(path):
    for line in open(path, errors="replace"):
        text = line.strip().lstrip("#").strip().lstrip("-").strip()
        if line.lstrip().startswith("#") and len(text) > 8 and text.lower() not in ("cleanup", "default"):
            return text[:70].rstrip(" .:")
    return None


def features(path):
    body = code(path)
    found = [label for key, label in FEATURES if key.lower() in body.lower()]
    return sorted(set(found), key=found.index)


def main():
    show_rejected = "--rejected" in sys.argv
    passing = {l.strip() for l in open(PASS_LIST) if l.strip()}
    for suite in SUITES:
        tdir = f"{MTR}/suite/{suite}/t"
        for file in sorted(os.listdir(tdir)):
            if not file.endswith(".test") or f"{suite}.{file[:-5]}" not in passing:
                continue
            name = file[:-5]
            path = os.path.join(tdir, file)
            problem, note = own_cnf(tdir, name)
            problem = problem or second_server(path, set())
            if problem:
                if show_rejected:
                    print(f"# rejected {suite}.{name}: {problem}")
                continue
            parts = ["node_1 only"] + ([note] if note else [])
            if topic(path):
                parts.append(topic(path))
            if features(path):
                parts.append("uses " + ", ".join(features(path)))
            print(f"{suite}_1node.{name}".ljust(52) + f" # {'; '.join(parts)}")


if __name__ == "__main__":
    main()

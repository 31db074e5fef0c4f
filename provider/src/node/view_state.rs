//! `gvwstate.dat`: the last primary view this node was in, and who it was
//! in it (Galera's `pc.recovery` file, same name and layout so operators
//! find it where they expect).
//!
//! Written at every primary view, removed on a clean close. A node that
//! starts and finds it was killed: it tells the group which member it was,
//! so that a survivor left non-primary by that death knows the old member
//! is gone for good (see `group::membership`).

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::group::View;
use crate::gtid::Uuid;
use crate::log;

pub const FILE_NAME: &str = "gvwstate.dat";

fn path(dir: &Path) -> PathBuf {
    dir.join(FILE_NAME)
}

pub fn render(me: Uuid, v: &View) -> String {
    let mut out = format!("my_uuid: {}\n#vwbeg\nview_id: 3 {} {}\nbootstrap: 0\n", me, v.history, v.conf_id);
    for m in &v.members {
        out.push_str(&format!("member: {} 0\n", m.id));
    }
    out.push_str("#vwend\n");
    out
}

/// Records the primary view `v` in which this node is `me`.
pub fn save(dir: &Path, me: Uuid, v: &View) {
    let p = path(dir);
    let tmp = p.with_extension("dat.tmp");
    let written = fs::File::create(&tmp).and_then(|mut f| f.write_all(render(me, v).as_bytes())).and_then(|_| fs::rename(&tmp, &p));
    if let Err(e) = written {
        log::warning!("write file({}) failed({})", p.display(), e);
    }
}

/// A clean close: the next start is a new member with nothing to recover.
pub fn remove(dir: &Path) {
    match fs::remove_file(path(dir)) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => log::warning!("remove file({}) failed({})", path(dir).display(), e),
    }
}

/// The member this node was when it stopped without a clean close, and
/// the members of that last primary view.
pub fn previous_member(dir: &Path) -> Option<(Uuid, Vec<Uuid>)> {
    let text = fs::read_to_string(path(dir)).ok()?;
    let line = text.lines().find_map(|l| l.strip_prefix("my_uuid:"))?;
    let me = match Uuid::parse(line.trim()) {
        Some(u) if !u.is_nil() => u,
        _ => {
            log::warning!("{}: unreadable my_uuid line; starting as a new member", path(dir).display());
            return None;
        }
    };
    let members = text.lines().filter_map(|l| l.strip_prefix("member:")).filter_map(|l| l.split_whitespace().next().and_then(Uuid::parse)).collect();
    Some((me, members))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::group::MemberInfo;

    #[test]
    fn a_saved_view_names_the_member_this_node_was_until_removed() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let me = Uuid::random();
        let member = |id| MemberInfo { id, name: "n".into(), incoming: String::new(), address: String::new(), arbitrator: false, stateless: false };
        let v = View { history: Uuid::random(), seqno: 5, conf_id: 3, primary: true, members: vec![member(me), member(Uuid::random())], my_idx: 0 };
        assert_eq!(previous_member(dir), None);
        save(dir, me, &v);
        let text = fs::read_to_string(dir.join(FILE_NAME)).unwrap();
        assert!(text.starts_with(&format!("my_uuid: {}\n#vwbeg\nview_id: 3 {} 3\n", me, v.history)), "{}", text);
        assert_eq!(text.matches("member: ").count(), 2);
        assert_eq!(previous_member(dir), Some((me, v.members.iter().map(|m| m.id).collect())));
        remove(dir);
        assert_eq!(previous_member(dir), None);
        fs::write(dir.join(FILE_NAME), "my_uuid: garbage\n").unwrap();
        assert_eq!(previous_member(dir), None);
    }
}

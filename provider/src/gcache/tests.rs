use std::path::PathBuf;

use super::record::{record_size, FILE_HEADER, RECORD_HEADER};
use super::*;

/// A cached view (its bytes stand for an encoded configuration).
const VIEW: Cached = Cached::View { conf: Bytes::from_static(b"view") };

fn ws(n: usize, tag: u8) -> Cached {
    Cached::Writeset { payload: Bytes::from(vec![tag; n]), certified: tag % 2 == 0 }
}

/// A ring with room for exactly `records` records of `len` payload bytes.
fn ring_size(records: u64, len: usize) -> usize {
    (FILE_HEADER + records * record_size(len)) as usize
}

/// A cache file in a directory removed when the test drops it.
struct TempFile {
    path: PathBuf,
    _dir: tempfile::TempDir,
}

impl TempFile {
    fn new() -> TempFile {
        let dir = tempfile::Builder::new().prefix("lockstep-gcache-").tempdir().unwrap();
        TempFile { path: dir.path().join("galera.cache"), _dir: dir }
    }
    fn open(&self, size: usize) -> Gcache {
        Gcache::open(&self.path, size, true, None)
    }
    /// A cache of a new history in the file, holding 1..=`last`.
    fn filled(&self, last: Seqno) -> Gcache {
        let mut g = self.open(1 << 16);
        g.set_history(history());
        (1..=last).for_each(|s| g.push(s, ws(9, s as u8)));
        g
    }
    /// Flips a byte of the file.
    fn damage(&self, offset: u64) {
        use std::os::unix::fs::FileExt;
        let f = std::fs::OpenOptions::new().read(true).write(true).open(&self.path).unwrap();
        let mut b = [0u8];
        f.read_exact_at(&mut b, offset).unwrap();
        f.write_all_at(&[b[0] ^ 0x5a], offset).unwrap();
    }
}

fn seqnos(g: &Gcache) -> (Option<Seqno>, Option<Seqno>) {
    (g.first(), g.last())
}

fn history() -> Uuid {
    Uuid::random()
}

#[test]
fn a_covered_range_comes_back_in_order() {
    let mut g = Gcache::in_memory(1 << 20);
    for s in 10..20 {
        g.push(s, if s == 15 { VIEW } else { ws(10, s as u8) });
    }
    let r = g.range(12, 16).unwrap();
    assert_eq!(r.iter().map(|(s, _)| *s).collect::<Vec<_>>(), vec![12, 13, 14, 15, 16]);
    assert_eq!(r[0].1, ws(10, 12));
    assert_eq!(r[3].1, VIEW);
    assert_eq!(g.range(9, 12), None, "before the first");
    assert_eq!(g.range(18, 20), None, "after the last");
    assert_eq!(g.range(19, 19).unwrap().len(), 1);
    assert_eq!(g.range(14, 13), None);
}

#[test]
fn the_oldest_seqnos_are_overwritten_first_when_the_ring_is_full() {
    let mut g = Gcache::in_memory(ring_size(3, 100));
    for s in 1..=5 {
        g.push(s, ws(100, s as u8));
    }
    assert_eq!(seqnos(&g), (Some(3), Some(5)));
    assert_eq!(g.bytes() as u64, 3 * record_size(100));
    // Records of other sizes wrap around the end of the ring: what stays
    // is always a gap-free run ending at the newest, read back intact.
    let len = |s: Seqno| if s <= 5 { 100 } else { (s as usize * 37) % 150 };
    for s in 6..=60 {
        g.push(s, ws(len(s), s as u8));
        let (first, last) = (g.first().unwrap(), g.last().unwrap());
        assert_eq!(last, s);
        for (seqno, item) in g.range(first, last).unwrap() {
            assert_eq!(item, ws(len(seqno), seqno as u8), "seqno {}", seqno);
        }
        assert!(g.bytes() as u64 > g.ring.capacity() - 2 * record_size(150), "{} bytes cached", g.bytes());
    }
}

#[test]
fn a_gap_starts_the_cache_afresh() {
    let mut g = Gcache::in_memory(1 << 20);
    g.push(1, ws(1, 1));
    g.push(2, ws(1, 2));
    g.push(9, ws(1, 9));
    assert_eq!(seqnos(&g), (Some(9), Some(9)));
    assert_eq!(g.range(1, 2), None);
    g.push(3, ws(1, 3));
    assert_eq!(seqnos(&g), (Some(3), Some(3)), "below the first");
}

#[test]
fn a_seqno_held_already_replaces_everything_from_it_on() {
    let mut g = Gcache::in_memory(1 << 20);
    for s in 1..=10 {
        g.push(s, ws(8, s as u8));
    }
    g.push(6, ws(8, 66));
    assert_eq!(seqnos(&g), (Some(1), Some(6)));
    assert_eq!(g.range(5, 6).unwrap(), vec![(5, ws(8, 5)), (6, ws(8, 66))]);
    g.push(7, ws(8, 77));
    g.push(1, ws(8, 11));
    assert_eq!(seqnos(&g), (Some(1), Some(1)), "the first one");
}

#[test]
fn a_record_larger_than_the_ring_goes_to_an_overflow_page_and_is_served() {
    let mut g = Gcache::in_memory(ring_size(2, 100));
    g.push(1, ws(100, 1));
    g.push(2, ws(100, 2));
    g.push(3, ws(500, 3));
    g.push(4, ws(100, 4));
    assert_eq!(seqnos(&g), (Some(2), Some(4)), "4 overwrote 1 in the ring; 3 is in a page");
    assert_eq!(g.range(2, 4).unwrap(), vec![(2, ws(100, 2)), (3, ws(500, 3)), (4, ws(100, 4))]);
    // A ring of no room at all (gcache.size=1, as some of Galera's tests
    // set): everything is in the page being written.
    let mut tiny = Gcache::in_memory(0);
    tiny.push(1, VIEW);
    tiny.push(2, ws(3, 2));
    assert_eq!(tiny.range(1, 2).unwrap(), vec![(1, VIEW), (2, ws(3, 2))]);
}

#[test]
fn pages_beyond_the_keep_size_go_oldest_first_and_take_their_seqnos_along() {
    let file = TempFile::new();
    let dir = file.path.parent().unwrap();
    let pages = || {
        let mut names: Vec<String> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        names.retain(|n| n.starts_with("gcache.page."));
        names.sort();
        names
    };
    std::fs::write(dir.join("gcache.page.000007"), b"left by an earlier run").unwrap();
    let mut g = file.open(0);
    assert!(pages().is_empty(), "an earlier run's pages are deleted at startup");
    let page = 4 * record_size(100);
    g.set_pages(page, 2 * page);
    g.set_history(history());
    for s in 1..=8 {
        g.push(s, ws(100, s as u8));
    }
    assert_eq!(pages(), ["gcache.page.000000", "gcache.page.000001"]);
    assert_eq!(seqnos(&g), (Some(1), Some(8)), "two pages, within the keep size");
    g.push(9, ws(100, 9));
    assert_eq!(pages(), ["gcache.page.000001", "gcache.page.000002"]);
    assert_eq!(seqnos(&g), (Some(5), Some(9)), "the oldest page and its seqnos went");
    assert_eq!(g.range(5, 9).unwrap().last(), Some(&(9, ws(100, 9))));
    // Keep nothing but the page being written; a record larger than a
    // page gets a page of its own size.
    g.set_pages(page, 0);
    g.push(10, ws(1000, 10));
    assert_eq!(pages(), ["gcache.page.000003"]);
    assert_eq!(g.range(10, 10).unwrap(), vec![(10, ws(1000, 10))]);
    assert_eq!(seqnos(&g), (Some(10), Some(10)));
    // A new history deletes them.
    g.clear();
    assert!(pages().is_empty());
    g.push(11, ws(100, 11));
    assert_eq!(pages(), ["gcache.page.000004"]);
}

/// A record larger than the ring, ordered before a crash, may be all the
/// node has of a seqno its data lacks: its page is recovered with the ring,
/// and the run goes on across it. Pages of another history, or that the
/// recovered run does not use, go.
#[test]
fn overflow_pages_are_recovered_with_the_ring() {
    let file = TempFile::new();
    let dir = file.path.parent().unwrap().to_path_buf();
    let size = ring_size(8, 64);
    let mut g = file.open(size);
    g.set_pages(0, 0);
    g.set_history(history());
    g.push(1, ws(10, 1));
    g.push(2, ws(5000, 2));
    g.push(3, ws(10, 3));
    std::fs::write(dir.join("gcache.page.000009"), b"not a page").unwrap();
    drop(g);
    let g = file.open(size);
    assert_eq!(seqnos(&g), (Some(1), Some(3)), "the run goes on across the page");
    assert_eq!(g.range(1, 3).unwrap(), vec![(1, ws(10, 1)), (2, ws(5000, 2)), (3, ws(10, 3))]);
    assert!(!dir.join("gcache.page.000009").exists(), "what is not a page of this history goes");
    let mut g = g;
    g.push(4, ws(6000, 4));
    assert_eq!(g.range(4, 4).unwrap(), vec![(4, ws(6000, 4))], "a recovered page takes no more: a new one does");
    let mut other = file.open(size);
    other.set_history(Uuid::random());
    drop(other);
    let g = file.open(size);
    assert_eq!(seqnos(&g), (None, None));
    assert!(std::fs::read_dir(&dir).unwrap().all(|e| !e.unwrap().file_name().to_string_lossy().starts_with("gcache.page.")), "another history's pages go");
}

/// After a power cut the records written after the last sync may survive
/// with gaps between them: the run kept is the one that holds the data's
/// position, not the one above a gap.
#[test]
fn the_recovered_run_is_the_one_that_holds_the_data_position() {
    let file = TempFile::new();
    let size = ring_size(16, 64);
    let mut g = file.open(size);
    g.set_history(history());
    for s in 1..=6 {
        g.push(s, ws(10, s as u8));
    }
    drop(g);
    file.damage(FILE_HEADER + 3 * record_size(10) + RECORD_HEADER as u64);
    let g = Gcache::open(&file.path, size as usize, true, Some(2));
    assert_eq!(seqnos(&g), (Some(1), Some(3)), "the data is at 2: its run, not 5-6 above the torn 4");
    let g = Gcache::open(&file.path, size as usize, true, None);
    assert_eq!(seqnos(&g), (Some(5), Some(6)), "without a position, the highest run");
}

#[test]
fn a_plan_reads_a_page_deleted_after_it_was_made() {
    let file = TempFile::new();
    let mut g = file.open(0);
    g.set_pages(0, 0);
    g.set_history(history());
    g.push(1, ws(100, 1));
    let plan = g.plan(1, 1).unwrap();
    g.push(2, ws(100, 2));
    assert_eq!(seqnos(&g), (Some(2), Some(2)), "page 0 went with seqno 1");
    assert_eq!(plan.read().unwrap(), vec![(1, ws(100, 1))], "an IST in progress still reads it");
}

#[test]
fn a_reopened_file_serves_what_it_held() {
    let file = TempFile::new();
    let size = ring_size(8, 64);
    let h = history();
    let mut g = file.open(size);
    assert_eq!(seqnos(&g), (None, None));
    g.set_history(h);
    for s in 1..=30 {
        g.push(s, if s % 7 == 0 { VIEW } else { ws(s as usize * 3 % 64, s as u8) });
    }
    let before = g.range(g.first().unwrap(), 30).unwrap();
    drop(g);
    let mut g = file.open(size);
    assert_eq!(g.history(), h);
    assert_eq!(g.range(g.first().unwrap(), 30).unwrap(), before);
    // Writing goes on where it stopped, and so does overwriting.
    for s in 31..=50 {
        g.push(s, ws(40, s as u8));
    }
    let kept = g.range(g.first().unwrap(), 50).unwrap();
    assert!(kept.len() >= 8, "{}", kept.len());
    drop(g);
    assert_eq!(file.open(size).range(kept[0].0, 50).unwrap(), kept);
}

#[test]
fn a_torn_last_record_is_left_out_at_recovery() {
    let file = TempFile::new();
    let mut g = file.open(1 << 16);
    g.set_history(history());
    let mut offsets = Vec::new();
    for s in 1..=5 {
        offsets.push(FILE_HEADER + (s as u64 - 1) * record_size(20));
        g.push(s, ws(20, s as u8));
    }
    drop(g);
    file.damage(offsets[4] + RECORD_HEADER as u64 + 19);
    let g = file.open(1 << 16);
    assert_eq!(seqnos(&g), (Some(1), Some(4)));
    drop(g);
    // A damaged record in the middle: the run after it is what is left.
    file.damage(offsets[1] + 9);
    assert_eq!(seqnos(&file.open(1 << 16)), (Some(3), Some(4)));
}

#[test]
fn a_foreign_file_is_recreated() {
    let file = TempFile::new();
    std::fs::write(&file.path, b"# GALERA saved state\nversion: 2.1\n".repeat(1000)).unwrap();
    let mut g = file.open(1 << 16);
    assert_eq!(seqnos(&g), (None, None));
    g.set_history(history());
    g.push(1, ws(5, 1));
    drop(g);
    assert_eq!(std::fs::metadata(&file.path).unwrap().len(), 1 << 16);
    assert_eq!(seqnos(&file.open(1 << 16)), (Some(1), Some(1)));
    // Garbage after a valid header is no record either.
    let mut noise = vec![0u8; 1 << 16];
    noise.iter_mut().enumerate().for_each(|(i, b)| *b = (i * 7919 % 251) as u8);
    std::fs::write(&file.path, &noise).unwrap();
    assert_eq!(seqnos(&file.open(1 << 16)), (None, None));
}

#[test]
fn recovery_needs_the_same_size_and_gcache_recover() {
    let file = TempFile::new();
    drop(file.filled(1));
    assert_eq!(seqnos(&Gcache::open(&file.path, 1 << 16, false, None)), (None, None));
    drop(file.filled(1));
    assert_eq!(seqnos(&file.open(1 << 17)), (None, None), "gcache.size changed");
    assert_eq!(std::fs::metadata(&file.path).unwrap().len(), 1 << 17);
}

#[test]
fn a_new_history_empties_the_cache_and_the_file() {
    let file = TempFile::new();
    let (a, b) = (history(), history());
    let mut g = file.open(1 << 16);
    g.set_history(a);
    for s in 1..=3 {
        g.push(s, ws(5, s as u8));
    }
    g.set_history(a);
    assert_eq!(seqnos(&g), (Some(1), Some(3)), "the same history keeps them");
    g.set_history(b);
    assert_eq!(seqnos(&g), (None, None));
    drop(g);
    let mut g = file.open(1 << 16);
    assert_eq!((g.history(), seqnos(&g)), (b, (None, None)), "the records of history a do not come back");
    g.push(7, ws(5, 7));
    g.clear();
    drop(g);
    assert_eq!(seqnos(&file.open(1 << 16)), (None, None), "nor cleared ones");
}

#[test]
fn a_hole_filled_by_a_state_transfer_joins_what_was_kept() {
    let file = TempFile::new();
    let mut g = file.filled(10);
    // A snapshot brought the node to 15 while it held up to 10; its data
    // was at 8, so its IST sends 9..=15 while the group goes on at 16.
    g.continue_after(15);
    g.push(16, ws(9, 16));
    g.push(17, ws(9, 17));
    assert_eq!(seqnos(&g), (Some(16), Some(17)));
    for s in 9..=15 {
        g.fill(s, ws(9, s as u8));
    }
    g.fill(16, ws(9, 99));
    assert_eq!(seqnos(&g), (Some(1), Some(17)));
    let all: Vec<_> = (1..=17).map(|s| (s, ws(9, s as u8))).collect();
    assert_eq!(g.range(1, 17).unwrap(), all);
    drop(g);
    assert_eq!(file.open(1 << 16).range(1, 17).unwrap(), all);
}

#[test]
fn without_a_hole_the_group_order_continues_the_run() {
    let mut g = Gcache::in_memory(1 << 16);
    for s in 1..=10 {
        g.push(s, ws(9, s as u8));
    }
    g.continue_after(7);
    g.push(8, ws(9, 8));
    assert_eq!(seqnos(&g), (Some(1), Some(8)));
    // A transfer that never comes leaves the run to the group's order.
    g.continue_after(20);
    g.push(21, ws(9, 21));
    g.fill(3, ws(9, 3));
    assert_eq!(seqnos(&g), (Some(21), Some(21)));
    g.push(23, ws(9, 23));
    g.fill(22, ws(9, 22));
    assert_eq!(seqnos(&g), (Some(23), Some(23)));
}

#[test]
fn an_unusable_path_keeps_the_cache_in_memory() {
    let path = std::env::temp_dir().join(format!("lockstep-no-such-dir-{}", Uuid::random())).join("galera.cache");
    let mut g = Gcache::open(&path, 1 << 16, true, None);
    g.push(1, ws(5, 1));
    g.push(2, ws(5, 2));
    assert_eq!(g.range(1, 2).unwrap().len(), 2);
    assert!(!path.exists());
}

/// Many pushes of every size with reopens in between: whatever the cache
/// says it holds comes back intact, and it always ends at the newest.
#[test]
fn what_the_cache_holds_is_always_what_was_pushed() {
    let file = TempFile::new();
    let size = ring_size(12, 50);
    let h = history();
    let mut g = file.open(size);
    g.set_history(h);
    let mut rng = 0x9e3779b97f4a7c15u64;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    g.set_pages(4096, 8192);
    for s in 1..=2000 {
        // One in 50 is larger than the whole ring: an overflow page.
        let len = if next() % 50 == 0 { 3000 } else { (next() % 200) as usize };
        g.push(s, if len % 13 == 0 { VIEW } else { ws(len, s as u8) });
        if next() % 97 == 0 {
            drop(g);
            g = file.open(size);
            g.set_pages(4096, 8192);
            assert_eq!(g.history(), h);
        }
        let first = g.first().expect("never empty: every record fits");
        assert_eq!(g.last(), Some(s));
        for (seqno, item) in g.range(first, s).unwrap() {
            if let Cached::Writeset { payload, .. } = item {
                assert!(payload.iter().all(|b| *b == seqno as u8), "seqno {}", seqno);
            }
        }
        assert!(g.bytes() as u64 <= g.ring.capacity() + g.pages.bytes());
    }
}

#[test]
fn what_is_cut_at_startup_stays_cut_after_another_restart() {
    let file = TempFile::new();
    let mut g = file.filled(10);
    // The data is at 6: 7..=10 may be ordered anew, and differently.
    g.truncate_after(6);
    assert_eq!(seqnos(&g), (Some(1), Some(6)));
    g.push(7, ws(9, 77));
    drop(g);
    let mut g = file.open(1 << 16);
    assert_eq!(g.range(1, 7).unwrap()[6], (7, ws(9, 77)));
    assert_eq!(g.last(), Some(7), "8..=10 do not come back");
    g.truncate_after(-1);
    assert_eq!(seqnos(&g), (None, None), "an unknown position keeps nothing");
}

#[test]
fn look_alike_headers_cannot_make_recovery_slow() {
    use std::os::unix::fs::FileExt;
    let file = TempFile::new();
    drop(file.filled(1));
    // What is left of a torn writeset whose bytes mimic record headers,
    // each claiming a long payload.
    let mut fake = [0u8; RECORD_HEADER];
    fake[..4].copy_from_slice(b"LSgc");
    fake[4] = 1;
    fake[24..28].copy_from_slice(&30_000u32.to_le_bytes());
    let f = std::fs::OpenOptions::new().write(true).open(&file.path).unwrap();
    for i in 0..1000 {
        f.write_all_at(&fake, FILE_HEADER + 64 + i * RECORD_HEADER as u64).unwrap();
    }
    let started = std::time::Instant::now();
    assert_eq!(seqnos(&file.open(1 << 16)), (None, None), "recreated");
    assert!(started.elapsed() < std::time::Duration::from_secs(2));
}

#[test]
fn the_ring_file_is_mapped_and_a_read_or_write_past_its_end_is_an_error() {
    let file = TempFile::new();
    let f = std::fs::OpenOptions::new().read(true).write(true).create(true).open(&file.path).unwrap();
    let medium = ring::Medium::mapped(f, 4096);
    assert!(matches!(medium, ring::Medium::Mapped { .. }), "an allocated file is mapped");
    medium.write_at(b"record", 4090).unwrap();
    let mut back = [0u8; 6];
    medium.read_at(&mut back, 4090).unwrap();
    assert_eq!(&back, b"record");
    assert!(medium.write_at(b"record", 4091).is_err());
    assert!(medium.read_at(&mut back, u64::MAX - 2).is_err());
    drop(medium);
    use std::os::unix::fs::FileExt;
    let mut on_disk = [0u8; 6];
    std::fs::File::open(&file.path).unwrap().read_exact_at(&mut on_disk, 4090).unwrap();
    assert_eq!(&on_disk, b"record", "the mapping writes the file");
}

//! I1-dir (ninth hostile re-run): a result directory is read through the descriptor it was
//! opened as, reached through no other user's link nor a directory another user may rename
//! entries of. Root-only (the other user's entries are given to `nobody`, 65534).

use super::*;
use std::os::unix::fs::{PermissionsExt, lchown, symlink};
use std::sync::atomic::{AtomicBool, Ordering};

const NOBODY: u32 = 65534;

fn is_root() -> bool {
    crate::sys::process::effective_user_id() == 0
}

/// A directory like /tmp (root's, mode 1777) holding root's private run (`priv/run`, priv
/// 0700), and another user's run and link to root's private run.
fn tmp_like() -> tempfile::TempDir {
    let base = tempfile::tempdir().unwrap();
    let b = base.path();
    fs::set_permissions(b, fs::Permissions::from_mode(0o1777)).unwrap();
    fs::create_dir_all(b.join("priv/run")).unwrap();
    fs::set_permissions(b.join("priv"), fs::Permissions::from_mode(0o700)).unwrap();
    fs::write(b.join("priv/run").join(RUN_JSON), "PRIVATE").unwrap();
    base
}

/// Reads `name`'s run.json `tries` times as every reader does (`ResultDir::open`, then its
/// files through `input`) while `swap` runs in a loop beside; returns (read hers, refused), and
/// fails on a read of root's private run.
fn read_while_swapping(name: &Path, tries: usize, swap: impl Fn() + Send + 'static) -> (u32, u32) {
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                swap();
            }
        })
    };
    let (mut hers, mut refused) = (0, 0);
    for _ in 0..tries {
        let Ok(dir) = ResultDir::open(name) else {
            refused += 1;
            continue;
        };
        // Some time between the check and the reads, as a report's or an export's.
        std::thread::yield_now();
        match crate::input::read_result_file(&dir.file(RUN_JSON), 1 << 20) {
            Ok(text) => {
                assert_ne!(text, "PRIVATE", "root's private run read through the swap");
                hers += 1;
            }
            Err(_) => refused += 1,
        }
    }
    stop.store(true, Ordering::Relaxed);
    swapper.join().unwrap();
    (hers, refused)
}

/// The last component swapped: in a /tmp-like directory, `r` is in turn another user's result
/// directory and her link to root's private run. Before: checked by path, then read by path,
/// the link was followed between (export: 339 of 800). Now the directory reached is the one
/// read: her run, or her link refused, never root's run.
#[test]
fn a_link_swapped_in_for_the_result_directory_is_never_read_through() {
    if !is_root() {
        eprintln!("skipped: needs root to give entries to another user");
        return;
    }
    let base = tmp_like();
    let b = base.path().to_path_buf();
    fs::create_dir(b.join("hers")).unwrap();
    fs::write(b.join("hers").join(RUN_JSON), "HERS").unwrap();
    std::os::unix::fs::chown(b.join("hers"), Some(NOBODY), Some(NOBODY)).unwrap();
    symlink(b.join("priv/run"), b.join("lnk")).unwrap();
    lchown(b.join("lnk"), Some(NOBODY), Some(NOBODY)).unwrap();
    let name = b.join("r");
    let (hers, refused) = read_while_swapping(&name, 3000, move || {
        let _ = fs::rename(b.join("hers"), b.join("r"));
        let _ = fs::rename(b.join("r"), b.join("hers"));
        let _ = fs::rename(b.join("lnk"), b.join("r"));
        let _ = fs::rename(b.join("r"), b.join("lnk"));
    });
    eprintln!("{hers} read her run, {refused} refused");
}

/// An intermediate component swapped: `p/run` where `p` is in turn her directory holding a run
/// and her link to root's private directory. Refused every time (her directory is on the way:
/// she may rename what is in it), never root's run.
#[test]
fn a_directory_swapped_in_on_the_way_is_never_read_through() {
    if !is_root() {
        eprintln!("skipped: needs root to give entries to another user");
        return;
    }
    let base = tmp_like();
    let b = base.path().to_path_buf();
    fs::create_dir_all(b.join("hp/run")).unwrap();
    fs::write(b.join("hp/run").join(RUN_JSON), "HERS").unwrap();
    for d in ["hp", "hp/run"] {
        std::os::unix::fs::chown(b.join(d), Some(NOBODY), Some(NOBODY)).unwrap();
    }
    symlink(b.join("priv"), b.join("lnk")).unwrap();
    lchown(b.join("lnk"), Some(NOBODY), Some(NOBODY)).unwrap();
    let name = b.join("p/run");
    let (hers, refused) = read_while_swapping(&name, 2000, move || {
        let _ = fs::rename(b.join("hp"), b.join("p"));
        let _ = fs::rename(b.join("p"), b.join("hp"));
        let _ = fs::rename(b.join("lnk"), b.join("p"));
        let _ = fs::rename(b.join("p"), b.join("lnk"));
    });
    assert_eq!(hers, 0, "read through her directory");
    eprintln!("{refused} refused");
}

/// Statically: a name looked up in another user's directory, or in one others may write
/// without a sticky bit, is refused naming it and why; this user's and root's sticky
/// directories are not; inside the result directory no link is followed.
#[test]
fn directories_on_the_way_that_others_may_rename_in_are_refused() {
    let base = tempfile::tempdir().unwrap();
    let b = base.path();
    fs::create_dir_all(b.join("open/run")).unwrap();
    fs::write(b.join("open/run").join(RUN_JSON), "{}").unwrap();
    fs::set_permissions(b.join("open"), fs::Permissions::from_mode(0o777)).unwrap();
    let e = ResultDir::open(&b.join("open/run")).unwrap_err();
    assert!(
        e.contains("is writable by other users (mode 0777, no sticky bit)")
            && e.contains("copy the run into a directory of your own"),
        "{e}"
    );
    fs::set_permissions(b.join("open"), fs::Permissions::from_mode(0o1777)).unwrap();
    let dir = ResultDir::open(&b.join("open/run")).unwrap();
    // A link inside the result directory is not followed, at any depth.
    fs::create_dir(b.join("elsewhere")).unwrap();
    fs::write(b.join("elsewhere/x.log"), "x").unwrap();
    symlink(b.join("elsewhere"), b.join("open/run/loads")).unwrap();
    assert!(crate::input::read_result_file(&dir.file("loads/x.log"), 100).is_err());
    symlink(b.join("elsewhere/x.log"), b.join("open/run/y.log")).unwrap();
    assert!(crate::input::read_result_file(&dir.file("y.log"), 100).is_err());
    if !is_root() {
        return;
    }
    fs::create_dir_all(b.join("theirs/run")).unwrap();
    fs::write(b.join("theirs/run").join(RUN_JSON), "{}").unwrap();
    std::os::unix::fs::chown(b.join("theirs"), Some(NOBODY), Some(NOBODY)).unwrap();
    let e = ResultDir::open(&b.join("theirs/run")).unwrap_err();
    assert!(
        e.contains(&format!("{} belongs to", b.join("theirs").display())) && e.contains("65534"),
        "{e}"
    );
    // The result directory itself may be another user's (root reads her run).
    std::os::unix::fs::chown(b.join("open/run"), Some(NOBODY), Some(NOBODY)).unwrap();
    ResultDir::open(&b.join("open/run")).unwrap();
}

//! On temporary directories: a journal's life, what is trusted and what is only counted.

use super::*;
use std::os::unix::fs::PermissionsExt;

/// A trusted directory of this user in a fresh temporary directory.
fn trusted() -> (tempfile::TempDir, TrustedDir) {
    let base = tempfile::tempdir().unwrap();
    let uid = crate::sys::process::effective_user_id();
    let dir = TrustedDir::open_in(base.path(), "trusted", uid, true).unwrap();
    (base, dir)
}

fn set_mode(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// Made with mode 0700; missing and not to be made it is Err(None); a link, a directory
/// others can write or another user's is refused with the reason.
#[test]
fn a_trusted_directory_is_this_users_and_writable_by_no_one_else() {
    let (base, dir) = trusted();
    let uid = crate::sys::process::effective_user_id();
    let mode = std::fs::metadata(dir.path()).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o700);
    assert!(matches!(
        TrustedDir::open_in(base.path(), "missing", uid, false),
        Err(None)
    ));
    std::os::unix::fs::symlink(dir.path(), base.path().join("link")).unwrap();
    let e = TrustedDir::open_in(base.path(), "link", uid, true).unwrap_err();
    assert!(e.unwrap().contains("is not followed"));
    std::fs::create_dir(base.path().join("open")).unwrap();
    set_mode(&base.path().join("open"), 0o777);
    let e = TrustedDir::open_in(base.path(), "open", uid, false).unwrap_err();
    assert!(e.unwrap().contains("is not trusted"));
    let e = TrustedDir::open_in(base.path(), "trusted", uid + 1, false).unwrap_err();
    assert!(
        e.unwrap()
            .contains(&format!("only uid {} may write it", uid + 1))
    );
}

/// While its writer holds it a journal is left alone; once the writer is gone (its lock
/// free) it is found, with its lines, its pid and this boot.
#[test]
fn a_journal_is_stale_only_once_its_writer_is_gone() {
    let (_base, dir) = trusted();
    let lines = ["0 1".to_string(), "1 2".to_string()];
    let journal = Journal::create(&dir, "idle-states", &lines).unwrap();
    let name = format!("idle-states-{}", std::process::id());
    assert_eq!(journal.name(), name);
    let found = scan(&dir, "idle-states");
    assert!(
        found.stale.is_empty() && found.foreign.is_empty(),
        "{found:?}"
    );
    drop(journal);
    super::wait_until_unlocked(&dir);
    let found = scan(&dir, "idle-states");
    assert!(found.foreign.is_empty(), "{found:?}");
    let [stale] = found.stale.as_slice() else {
        panic!("{found:?}");
    };
    assert_eq!(stale.name, name);
    assert_eq!(stale.pid, std::process::id());
    assert!(stale.this_boot);
    assert_eq!(stale.lines, lines);
    // A second look while the first holds it sees a live one.
    assert!(scan(&dir, "idle-states").stale.is_empty());
    found.stale.into_iter().next().unwrap().remove(&dir);
    assert!(dir.names().is_empty(), "{:?}", dir.names());
}

/// Removed by its writer, a journal is gone; an existing name is never replaced.
#[test]
fn a_journal_never_replaces_an_entry() {
    let (_base, dir) = trusted();
    let taken = dir.path().join(format!("cpuset-{}", std::process::id()));
    std::fs::write(&taken, "mine").unwrap();
    let journal = Journal::create(&dir, "cpuset", &[]).unwrap();
    assert_eq!(journal.name(), format!("cpuset-{}-2", std::process::id()));
    assert_eq!(std::fs::read_to_string(&taken).unwrap(), "mine");
    journal.remove().unwrap();
    let mut names = dir.names();
    names.sort();
    assert_eq!(names, [format!("cpuset-{}", std::process::id())]);
}

/// A journal of another boot is found as such (its state is gone with the reboot).
#[test]
fn a_journal_of_another_boot_says_so() {
    let (_base, dir) = trusted();
    let path = dir.path().join("cpuset-111");
    std::fs::write(
        &path,
        format!("{MAGIC} cpuset\nboot x\npid 111\ncpuset jitterlab-111\n"),
    )
    .unwrap();
    set_mode(&path, 0o600);
    let found = scan(&dir, "cpuset");
    assert_eq!(found.stale.len(), 1, "{found:?}");
    assert!(!found.stale[0].this_boot);
    assert_eq!(found.stale[0].pid, 111);
}

/// Entries named as journals that are not this user's journals are counted, never obeyed or
/// removed: a link, a FIFO, one others can write, one in another format or of another kind,
/// and (as root) another user's.
#[test]
fn what_is_not_a_journal_is_counted_and_left_alone() {
    let (_base, dir) = trusted();
    let good = format!("{MAGIC} idle-states\nboot x\npid 1\n0 1\n");
    let at = |n: &str| dir.path().join(n);
    std::fs::write(at("target"), &good).unwrap();
    std::os::unix::fs::symlink(at("target"), at("idle-states-1")).unwrap();
    let fifo = std::process::Command::new("mkfifo")
        .arg(at("idle-states-2"))
        .status()
        .unwrap();
    assert!(fifo.success());
    std::fs::write(at("idle-states-3"), &good).unwrap();
    set_mode(&at("idle-states-3"), 0o666);
    std::fs::write(at("idle-states-4"), "0 1\n").unwrap();
    set_mode(&at("idle-states-4"), 0o600);
    std::fs::write(at("idle-states-5"), good.replace("idle-states", "cpuset")).unwrap();
    set_mode(&at("idle-states-5"), 0o600);
    let mut expected = vec![
        "idle-states-1",
        "idle-states-2",
        "idle-states-3",
        "idle-states-4",
        "idle-states-5",
    ];
    if crate::sys::process::effective_user_id() == 0 {
        std::fs::write(at("idle-states-6"), &good).unwrap();
        set_mode(&at("idle-states-6"), 0o600);
        std::os::unix::fs::chown(at("idle-states-6"), Some(65534), None).unwrap();
        expected.push("idle-states-6");
    }
    std::fs::write(at("idle-states-x"), &good).unwrap();
    let found = scan(&dir, "idle-states");
    assert!(found.stale.is_empty(), "{found:?}");
    assert_eq!(found.foreign, expected);
    assert_eq!(dir.names().len(), expected.len() + 2, "nothing removed");
}

#[test]
fn journal_names_are_the_kind_a_pid_and_a_number() {
    for (name, ok) in [
        ("cpuset-12", true),
        ("cpuset-12-3", true),
        ("cpuset-", false),
        ("cpuset-12-", false),
        ("cpuset-12-3-4", false),
        ("cpuset-x", false),
        ("cpusetx-12", false),
        ("idle-states-12", false),
    ] {
        assert_eq!(is_journal_name(name, "cpuset"), ok, "{name}");
    }
}

//! The drop-ins lock memory as their tools do (fifth hostile re-run, N22): as a user with the
//! usual 8 MiB RLIMIT_MEMLOCK, `cyclictest -D 1 -q` and `oslat -D 1` failed at mlockall (exit
//! 3) saying "pass --no-mlock", which both then refused as an unknown option (exit 2).
//! rt-tests' cyclictest locks only with `-m`; oslat always locks, and a refused lock's fixes
//! are then root, CAP_IPC_LOCK or the limit. Each case runs jitterlab as root without
//! CAP_IPC_LOCK (dropped from the bounding set before the exec) and with an 8 MiB limit: what
//! a normal user has.

use crate::common::{exclusive, text};
use std::os::unix::process::CommandExt;

/// `jitterlab ARGS` without CAP_IPC_LOCK and with RLIMIT_MEMLOCK at 8 MiB, in `dir`.
fn as_a_user(args: &[&str], dir: &std::path::Path) -> std::process::Output {
    let mut command = std::process::Command::new(crate::common::bin());
    // A result directory the drop-in makes goes under `dir`, never the tester's state
    // directory (tests/offline/dropin_state.rs).
    command
        .args(args)
        .current_dir(dir)
        .env("XDG_STATE_HOME", dir.join("state"));
    // SAFETY: only async-signal-safe syscalls (prctl, setrlimit) between fork and exec.
    unsafe {
        command.pre_exec(|| {
            if libc::prctl(libc::PR_CAPBSET_DROP, 14 /* CAP_IPC_LOCK */, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            let limit = libc::rlimit {
                rlim_cur: 8 << 20,
                rlim_max: 8 << 20,
            };
            if libc::setrlimit(libc::RLIMIT_MEMLOCK, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    command.output().unwrap()
}

#[test]
fn the_drop_ins_lock_memory_as_their_tools_do_and_name_fixes_they_accept() {
    let tmp = tempfile::tempdir().unwrap();
    let _g = exclusive();
    // cyclictest without -m: no lock, as rt-tests'; measured, run.json says so.
    let out = as_a_user(
        &["cyclictest", "-D", "1", "-q", "--jitterlab-out=ct"],
        tmp.path(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let record = std::fs::read_to_string(tmp.path().join("ct/run.json")).unwrap();
    let record: serde_json::Value = serde_json::from_str(&record).unwrap();
    assert_eq!(record["plan"]["mlock"], false, "{record}");

    // cyclictest -m: the lock asked for and refused: exit 3, its fix cyclictest's own.
    let out = as_a_user(&["cyclictest", "-D", "1", "-q", "-m"], tmp.path());
    let said = text(&out);
    assert_eq!(out.status.code(), Some(3), "{said}");
    assert!(said.contains("cannot lock memory (mlockall)"), "{said}");
    assert!(said.contains("leave out -m (--mlockall)"), "{said}");
    assert!(!said.contains("--no-mlock"), "{said}");

    // oslat locks, as rt-tests' oslat: refused, its fixes root, CAP_IPC_LOCK or the limit.
    let out = as_a_user(&["oslat", "-D", "1"], tmp.path());
    let said = text(&out);
    assert_eq!(out.status.code(), Some(3), "{said}");
    assert!(
        said.contains("raise the limit (ulimit -l unlimited"),
        "{said}"
    );
    assert!(!said.contains("--no-mlock"), "{said}");
}

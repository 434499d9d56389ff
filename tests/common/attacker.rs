//! A second user for the hostile tests: root plays the victim, `nobody` (through setpriv) the
//! local user who plants links and files.

use super::text;
use std::process::Command;

/// Whether this test runs as root with setpriv at hand (the attacker needs both); says so when
/// not.
pub fn attacker_available(test: &str) -> bool {
    let root = jitterlab::sys::process::effective_user_id() == 0;
    let setpriv = Command::new("setpriv").arg("--version").output().is_ok();
    if !(root && setpriv) {
        eprintln!("{test}: skipped: needs root and setpriv to act as a second user");
    }
    root && setpriv
}

/// Runs `script` with sh as user `nobody`; panics when it fails.
pub fn as_nobody(script: &str) {
    let o = Command::new("setpriv")
        .args([
            "--reuid=nobody",
            "--regid=nogroup",
            "--clear-groups",
            "sh",
            "-ec",
            script,
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "as nobody: {script}: {}", text(&o));
}

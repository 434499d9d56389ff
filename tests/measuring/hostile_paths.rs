//! Issue 39's hostile re-run, F1: a symbolic link in a *directory* of a user-named path (not
//! only at its last name) is followed only when it is this user's or root's. Another user's
//! (`nobody`'s, through setpriv, as tests/measuring/hostile_files.rs) is refused, exit 2,
//! naming it and its owner, before anything is read or measured, for every output: `run --out`
//! and its dry run, `report -o`, `--plots`, `export -o`, the drop-ins' `--json`. And the
//! directories above a default result directory are checked as `jitterlab-results` itself
//! is: root in a directory of `nobody`'s is refused. Without root or setpriv: skipped, said.

use crate::common;

use common::attacker::{as_nobody, attacker_available};
use common::*;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// jitterlab with `args` in `cwd`, as root without sudo's `SUDO_UID` (which would vouch for
/// the user who ran sudo); `JITTERLAB_HOSTILE_BIN=PATH` runs another build (an older one, to
/// see the test fail).
fn jl_in(cwd: &Path, args: &[&str]) -> Output {
    Command::new(std::env::var("JITTERLAB_HOSTILE_BIN").unwrap_or_else(|_| bin().to_string()))
        .args(args)
        .current_dir(cwd)
        .env_remove("SUDO_UID")
        // A drop-in's result directory, should one be made, under `cwd`, never the tester's
        // state directory (tests/offline/dropin_state.rs).
        .env("XDG_STATE_HOME", cwd.join("state"))
        .output()
        .unwrap()
}

#[test]
fn f1_no_output_goes_through_another_users_link_in_its_directories() {
    let _g = exclusive();
    let test = "f1_no_output_goes_through_another_users_link_in_its_directories";
    if !attacker_available(test) || !realtime_available(test) {
        return;
    }
    // As /tmp: sticky, world-writable, root's.
    let base = tempfile::tempdir().unwrap();
    std::fs::set_permissions(base.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
    let b = base.path();
    // Root's own directory, only root's to reach (as /root).
    let guarded = tempfile::tempdir().unwrap();
    let g = guarded.path();
    let runs = tempfile::tempdir().unwrap();
    let run = runs.path().join("run");
    write_known_run(&run, &[0], 2, 200, uniform_10_50, 7, 0);
    as_nobody(&format!(
        "cd {b}; ln -s {g} sub; mkdir -m 0755 mal; ln -s {b}/mal a",
        b = s(b),
        g = s(g)
    ));
    let cpu = online_cpus()[0].to_string();
    let cases: Vec<Vec<String>> = [
        vec!["report", s(&run), "-o", "sub/r.html"],
        vec!["export", s(&run), "--format", "json", "-o", "sub/e.json"],
        vec!["report", s(&run), "-o", "r.html", "--plots", "sub/plots"],
        vec![
            "run", "-D", "1s", "--cpus", &cpu, "--quiet", "--out", "a/b/c",
        ],
        vec![
            "run",
            "-D",
            "1s",
            "--cpus",
            &cpu,
            "--quiet",
            "--dry-run",
            "--out",
            "sub/x",
        ],
        vec!["cyclictest", "-q", "-D", "1", "-t", "1", "--json=a/ct.json"],
    ]
    .iter()
    .map(|a| a.iter().map(|x| x.to_string()).collect())
    .collect();
    for args in cases {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = jl_in(b, &a);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(2), "{a:?}: {t}");
        assert!(
            t.contains("symbolic link of user nobody") && t.contains("neither yours nor root's"),
            "{a:?}: names the link's owner: {t}"
        );
        assert!(
            t.contains(&format!("{}/sub", s(b))) || t.contains(&format!("{}/a", s(b))),
            "{a:?}: names the link: {t}"
        );
        assert_eq!(
            std::fs::read_dir(g).unwrap().count(),
            0,
            "{a:?}: written into root's directory"
        );
        assert_eq!(
            std::fs::read_dir(b.join("mal")).unwrap().count(),
            0,
            "{a:?}: written into nobody's directory"
        );
    }
    assert!(
        !b.join("r.html").exists(),
        "nothing written before the refusal"
    );

    // Root's own link on the way (as a /home -> /data link) is followed.
    let mine = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(mine.path(), b.join("mine")).unwrap();
    let o = jl_in(b, &["report", s(&run), "-o", "mine/r.html"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(mine.path().join("r.html").is_file());

    // A default result directory in nobody's directory: nobody could rename it away and put
    // theirs at its name, so it is refused as a `jitterlab-results` of theirs is.
    for dry in [true, false] {
        let mut args = vec!["run", "-D", "1s", "--cpus", &cpu, "--quiet"];
        if dry {
            args.push("--dry-run");
        }
        let o = jl_in(&b.join("mal"), &args);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {t}");
        assert!(t.contains("belongs to user nobody"), "{t}");
        assert!(t.contains("another user could replace"), "{t}");
        assert_eq!(std::fs::read_dir(b.join("mal")).unwrap().count(), 0);
    }
}

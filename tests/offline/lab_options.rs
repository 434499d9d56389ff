//! `ci/lab.sh`'s options (docs/lab.md), run with arguments it must refuse before anything is
//! downloaded or booted: each ends with exit 2 and a message naming what is wrong and the fix
//! (twelfth hostile re-run of issue 39: M12-a, a check on no kernel chosen, exited 0 "every
//! check ran and passed"; L12-b, options without a value, unknown ids, a kernel named twice;
//! L12-e, `--out` made minutes after it was checked). The script is run with a PATH of the few
//! tools its parsing uses and no qemu or apt-get: an argument it failed to refuse would end at
//! its tool check (exit 3), never at a download.

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A PATH directory holding links to the tools the script's parsing and tool check use, found
/// on this host's PATH: without qemu, apt-get and the package tools, so that the script stops
/// at its tool check (exit 3) at the latest.
fn tools(dir: &Path) -> PathBuf {
    let bin = dir.join("bin");
    std::fs::create_dir(&bin).unwrap();
    let path = std::env::var_os("PATH").unwrap_or_default();
    for tool in [
        "bash", "dirname", "sed", "sort", "paste", "awk", "mkdir", "rmdir", "cat", "rm", "id",
        "tail", "echo", "stat", "mktemp", "head", "ls",
    ] {
        if let Some(found) = std::env::split_paths(&path)
            .map(|d| d.join(tool))
            .find(|p| p.is_file())
        {
            symlink(found, bin.join(tool)).unwrap();
        }
    }
    bin
}

/// Puts an executable bash script `name` running `body` in the PATH directory `bin` (made by
/// [`tools`]), in place of the tool linked there if any.
fn stub(bin: &Path, name: &str, body: &str) {
    let bash = std::fs::read_link(bin.join("bash")).expect("bash is installed");
    let p = bin.join(name);
    std::fs::remove_file(&p).ok();
    std::fs::write(&p, format!("#!{}\n{body}\n", bash.display())).unwrap();
    std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
}

/// Runs `ci/lab.sh ARGS` with only [`tools`] on its PATH; its exit code and stderr.
fn lab(scratch: &Path, args: &[&str]) -> (Option<i32>, String) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("ci/lab.sh");
    let bin = scratch.join("bin");
    let bin = if bin.is_dir() { bin } else { tools(scratch) };
    let bash = std::fs::read_link(bin.join("bash")).expect("bash is installed");
    let o = Command::new(bash)
        .arg(&script)
        .args(args)
        .env("PATH", &bin)
        .env("HOME", scratch)
        .env("LAB_CACHE", scratch.join("cache"))
        .env("TMPDIR", scratch)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("bash runs");
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Every bad argument of the hostile re-run: exit 2 at parse time, the message naming the
/// check, the kernel or the option, and what to give instead.
#[test]
fn bad_arguments_are_refused_before_anything_is_fetched() {
    let scratch = tempfile::tempdir().unwrap();
    let s = scratch.path();
    let cases: &[(&[&str], &[&str])] = &[
        // M12-a: the check chosen runs on no kernel chosen.
        (
            &["--checks", "9", "--kernels", "rt"],
            &["check 9 runs on the standard kernel only", "add standard"],
        ),
        (
            &["--checks", "7,8", "--kernels", "standard"],
            &["check 7 runs on the rt kernel only", "add rt"],
        ),
        (&["--kernels", ",", "--checks", "4"], &["empty kernel"]),
        (
            &["--checks", "9", "--short"],
            &["not one of --short's checks"],
        ),
        (
            &["--short", "--kernels", "standard"],
            &["--short runs the rt kernel only"],
        ),
        // L12-b: a missing value, an unknown id beside a known one, a kernel twice.
        (&["--out"], &["--out needs a new directory after it"]),
        (&["--checks"], &["--checks needs a comma list of check ids"]),
        (&["--kernels"], &["--kernels needs a comma list of kernels"]),
        (&["--checks", "--kernels", "rt"], &["--checks needs"]),
        (
            &["--checks", "9,zz", "--kernels", "standard"],
            &["no check 'zz'", "1a,1b"],
        ),
        (&["--checks", ","], &["empty check"]),
        // Thirteenth hostile re-run, L13-f: the second replaced the first without a word.
        (
            &["--checks", "1a", "--checks", "5", "--kernels", "rt"],
            &["--checks given twice", "--checks 1a,5"],
        ),
        (
            &["--kernels", "rt", "--kernels", "standard"],
            &["--kernels given twice"],
        ),
        (&["--kernels", "rt,rt"], &["names rt twice"]),
        (&["--kernels", "rt,x86"], &["no kernel 'x86'"]),
        // L12-e: --out's place refused at once.
        (&["--out", "/"], &["exists"]),
        (
            &["--out", "/nonexistent-jitterlab-dir/lab"],
            &["/nonexistent-jitterlab-dir does not exist"],
        ),
    ];
    for (args, says) in cases {
        let (code, err) = lab(s, args);
        assert_eq!(code, Some(2), "ci/lab.sh {args:?}: {err}");
        for said in *says {
            assert!(err.contains(said), "ci/lab.sh {args:?}: {err}");
        }
        assert!(!s.join("cache").exists(), "ci/lab.sh {args:?} fetched");
    }
    // Asked for, the usage is no error (L13-f: `--help` exited 2, as a bad argument).
    let (code, err) = lab(s, &["--help"]);
    assert_eq!(code, Some(0), "ci/lab.sh --help: {err}");
}

/// `--out` at a link planted in its place (to a directory that does not exist, so that no
/// check of existence sees it) is refused, and nothing is made through the link; a new
/// directory is made at once, before the tool check (here a stand-in for `id`, which the tool
/// check runs when qemu is missing, sees it and its mode), as this user's alone, and removed
/// when the lab ends before any guest's results are in it (here: at the tool check, exit 3).
#[test]
fn out_is_made_at_once_and_never_through_a_link() {
    let scratch = tempfile::tempdir().unwrap();
    let s = scratch.path();
    let planted = s.join("planted");
    let target = s.join("target");
    symlink(&target, &planted).unwrap();
    let args = |out: &Path| {
        ["--checks", "4", "--kernels", "rt", "--out"]
            .iter()
            .map(|a| a.to_string())
            .chain([out.to_str().unwrap().to_string()])
            .collect::<Vec<_>>()
    };
    let run = |out: &Path| {
        let a = args(out);
        lab(s, &a.iter().map(String::as_str).collect::<Vec<_>>())
    };
    let (code, err) = run(&planted);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("exists"), "{err}");
    assert!(!target.exists(), "made through the link");

    let bin = s.join("bin");
    let bash = std::fs::read_link(bin.join("bash")).unwrap();
    let seen = s.join("seen");
    let out = s.join("results");
    std::fs::remove_file(bin.join("id")).unwrap();
    std::fs::write(
        bin.join("id"),
        format!(
            "#!{}\n[[ -d {out} && ! -L {out} ]] && stat -c %a {out} > {seen}\necho 1000\n",
            bash.display(),
            out = out.display(),
            seen = seen.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(
        bin.join("id"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let (code, err) = run(&out);
    // No qemu on the PATH given, and `id` says a user: the tool check ends it.
    assert_eq!(code, Some(3), "{err}");
    assert!(err.contains("qemu-system-x86_64 not found"), "{err}");
    assert_eq!(
        std::fs::read_to_string(&seen).ok().as_deref(),
        Some("700\n"),
        "--out was not made, as this user's alone, before the tool check: {err}"
    );
    assert!(!out.exists(), "the empty --out directory was left: {err}");
    assert!(!s.join("cache").exists(), "fetched: {err}");
}

/// Every emulator a chosen kernel needs, and a given BINARY, is checked before anything is
/// fetched or booted: the whole lab of stop 58 booted five guests for 90 minutes, then died at
/// the arm64 kernel, `qemu-system-aarch64 not found`, exit 3 with no table, every verdict
/// before it lost. A kernel no chosen check boots needs nothing (`--checks 1b --kernels
/// rt,arm64` boots no arm64 guest).
#[test]
fn every_kernels_emulator_is_checked_before_the_first_guest() {
    let scratch = tempfile::tempdir().unwrap();
    let s = scratch.path();
    let bin = tools(s);
    let bash = std::fs::read_link(bin.join("bash")).unwrap();
    let script = |name: &str, body: &str| stub(&bin, name, body);
    // An amd64 emulator that is never run (no guest is reached), and a user, not root: a
    // missing emulator is named, never installed.
    script("qemu-system-x86_64", "exit 99");
    script("id", "echo 1000");

    let (code, err) = lab(s, &[]);
    assert_eq!(code, Some(3), "{err}");
    assert!(
        err.contains("qemu-system-aarch64 not found, needed for the arm64 kernel"),
        "{err}"
    );
    assert!(err.contains("leave arm64 out of --kernels"), "{err}");

    let (code, err) = lab(s, &["--checks", "1b", "--kernels", "rt,arm64"]);
    assert_eq!(code, Some(3), "{err}");
    assert!(
        !err.contains("aarch64"),
        "an emulator no chosen check needs: {err}"
    );
    assert!(err.contains("missing on this host"), "{err}");

    let missing = s.join("no-such-jitterlab");
    let o = Command::new(&bash)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("ci/lab.sh"))
        .args(["--checks", "5", "--kernels", "rt"])
        .env("PATH", &bin)
        .env("HOME", s)
        .env("LAB_CACHE", s.join("cache"))
        .env("TMPDIR", s)
        .env("BINARY", &missing)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(err.contains("no executable jitterlab at"), "{err}");
    assert!(!s.join("cache").exists(), "fetched: {err}");
}

/// A lab that ends after its temporary directory is made (here: no PREEMPT_RT kernel known to
/// apt and none cached, exit 3) leaves nothing: not its temporary directory, not an empty
/// `--out`, and it says why (exit 3). The cleanup is the script's one EXIT trap; with `--out`, a step chained before it
/// returned the exit status, which under `set -e` ended the trap there on every failing exit:
/// a SIGTERM'd lab left its guest running and its directory behind (stop 59).
#[test]
fn a_lab_that_fails_after_its_work_dir_is_made_leaves_nothing() {
    let scratch = tempfile::tempdir().unwrap();
    let s = scratch.path();
    let bin = tools(s);
    let bash = std::fs::read_link(bin.join("bash")).unwrap();
    let script = |name: &str, body: &str| stub(&bin, name, body);
    // Every tool the host check asks for, doing nothing; apt-cache knows no RT kernel and
    // says so as apt-cache does, exit 100 (which, through `set -e` and pipefail, ended the lab
    // silently with its status: so did an empty kernel cache, with ls's 2).
    script("apt-cache", "exit 100");
    for tool in [
        "qemu-system-x86_64",
        "apt-get",
        "dpkg-deb",
        "cpio",
        "gzip",
        "tar",
        "jq",
        "readelf",
        "objcopy",
        "flock",
        "truncate",
    ] {
        script(tool, "exit 0");
    }
    script("id", "echo 1000");
    let binary = s.join("jitterlab-static");
    std::fs::write(&binary, "").unwrap();
    std::fs::set_permissions(&binary, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let out = s.join("results");
    let o = Command::new(&bash)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("ci/lab.sh"))
        .args(["--checks", "5", "--kernels", "rt", "--out"])
        .arg(&out)
        .env("PATH", &bin)
        .env("HOME", s)
        .env("LAB_CACHE", s.join("cache"))
        .env("TMPDIR", s)
        .env("BINARY", &binary)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(
        err.contains("cannot tell which PREEMPT_RT kernel"),
        "it did not get past its temporary directory: {err}"
    );
    let left: Vec<_> = std::fs::read_dir(s)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("jitterlab-lab."))
        .collect();
    assert!(
        left.is_empty(),
        "its temporary directory was left: {left:?}; {err}"
    );
    assert!(!out.exists(), "the empty --out directory was left: {err}");
}

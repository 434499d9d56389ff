//! The paths a command is given, refused before anything is made or measured (issue 39): the
//! default directory of `import` when `./jitterlab-results` is a link (R02, as `run` refuses
//! it), and cyclictest's `--mainaffinity` CPUs checked as `-a`'s (R14). Nothing here measures:
//! each command is refused before it would.

use crate::common::{bin, text};
use std::process::Command;

fn data(name: &str) -> String {
    format!("{}/tests/data/import/{name}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn import_without_out_refuses_a_linked_results_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let elsewhere = tmp.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, tmp.path().join("jitterlab-results")).unwrap();
    let out = Command::new(bin())
        .args(["import", &data("cyclictest.json")])
        .current_dir(tmp.path())
        .output()
        .unwrap();
    let said = text(&out);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(
        said.contains("jitterlab-results is a symbolic link"),
        "{said}"
    );
    assert_eq!(
        std::fs::read_dir(&elsewhere).unwrap().count(),
        0,
        "nothing is made through the link"
    );
    // A real directory of this user's is used as before.
    std::fs::remove_file(tmp.path().join("jitterlab-results")).unwrap();
    let out = Command::new(bin())
        .args(["import", &data("cyclictest.json")])
        .current_dir(tmp.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        tmp.path()
            .join("jitterlab-results/imported-cyclictest/run.json")
            .is_file()
    );
}

#[test]
fn mainaffinity_cpus_are_checked_as_affinitys() {
    for args in [
        ["cyclictest", "-q", "-l", "10", "--mainaffinity", "99"],
        ["cyclictest", "-q", "-l", "10", "-a", "99"],
    ] {
        let out = Command::new(bin()).args(args).output().unwrap();
        let said = text(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {said}");
        assert!(said.contains("CPU 99 is not online"), "{args:?}: {said}");
    }
    let out = Command::new(bin())
        .args(["cyclictest", "-l", "10", "--mainaffinity=0-x"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
}

/// The hostile re-run's L2: a drop-in's result directory is refused by the option its user
/// types, `--jitterlab-out` (its tool's options come first: `--out` is not one of them), both
/// the default one (in the state directory, docs/cyclictest.md, here under a regular file) and
/// a `--jitterlab-out` that exists. Refused before anything is measured.
#[test]
fn the_dropins_name_their_own_result_directory_option() {
    let tmp = tempfile::tempdir().unwrap();
    let elsewhere = tmp.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let not_a_dir = tmp.path().join("not-a-dir");
    std::fs::write(&not_a_dir, "").unwrap();
    let taken = elsewhere.to_str().unwrap();
    let tools: [&[&str]; 3] = [
        &["cyclictest", "-q", "-D", "1"],
        &["oslat", "-q", "-D", "1", "-c", "0"],
        &["timerlat", "hist", "-d", "1", "--jitterlab-engine", "own"],
    ];
    for tool in tools {
        for explicit in [false, true] {
            let mut args = tool.to_vec();
            if explicit {
                args.extend(["--jitterlab-out", taken]);
            }
            let out = Command::new(bin())
                .args(&args)
                .current_dir(tmp.path())
                .env("XDG_STATE_HOME", not_a_dir.join("state"))
                .output()
                .unwrap();
            let said = text(&out);
            assert_eq!(out.status.code(), Some(2), "{args:?}: {said}");
            assert!(said.contains("--jitterlab-out "), "{args:?}: {said}");
            assert!(!said.contains("--out "), "{args:?}: {said}");
            // L9-d (ninth hostile re-run): the default is named as the default, not as an
            // option the user never passed; the option is offered to choose another.
            if !explicit {
                assert!(
                    said.contains("the default result directory ")
                        && !said.contains("--jitterlab-out /")
                        && said.contains("pass --jitterlab-out DIR to choose another"),
                    "{args:?}: {said}"
                );
            }
        }
    }
    assert_eq!(
        std::fs::read_dir(&elsewhere).unwrap().count(),
        0,
        "nothing is made through the link"
    );
}

/// `-` is standard output wherever a user names an output file (eleventh hostile re-run,
/// L11-c: `export -o -` wrote a file named `-`), and is refused where the option names a
/// directory; nothing named `-` is ever made in the working directory.
#[test]
fn a_dash_output_is_standard_output_and_never_a_file_named_dash() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    crate::common::write_known_run(&run, &[0], 2, 100, crate::common::uniform_10_50, 7, 0);
    let run = run.to_str().unwrap();
    let at = |args: &[&str]| {
        Command::new(bin())
            .args(args)
            .current_dir(tmp.path())
            .output()
            .unwrap()
    };
    let dash = tmp.path().join("-");
    // A file: the export's JSON and the report's HTML on standard output.
    let out = at(&["export", run, "--format", "json", "-o", "-"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("export -o - printed no JSON ({e}): {}", text(&out)));
    assert!(json.is_object(), "{json}");
    assert!(!dash.exists(), "export -o - made a file named -");
    let out = at(&["report", run, "-o", "-"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let html = String::from_utf8_lossy(&out.stdout);
    assert!(
        html.contains("<html") && html.contains("</html>"),
        "{}",
        text(&out)
    );
    assert!(!dash.exists(), "report -o - made a file named -");
    // A directory, or two files (gnuplot's NAME.dat and NAME.gp: thirteenth hostile re-run,
    // L13-b, wrote `-.dat` and `-.gp`): refused before anything is made, saying why.
    for args in [
        vec!["import", &data("cyclictest.json")[..], "-o", "-"],
        vec!["report", run, "--plots", "-", "-o", "r.html"],
        vec!["export", run, "--format", "gnuplot", "-o", "-"],
    ] {
        let out = at(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        assert!(
            text(&out).contains("`-` means standard output"),
            "{args:?}: {}",
            text(&out)
        );
        assert!(!dash.exists(), "{args:?} made an entry named -");
        for made in ["-.dat", "-.gp"] {
            assert!(!tmp.path().join(made).exists(), "{args:?} made {made}");
        }
    }
    // A file named `-` is still writable, by its path.
    let out = at(&["export", run, "--format", "json", "-o", "./-"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(dash.is_file());
}

/// `-` when standard output was closed at the start (`>&-`): Rust's runtime puts /dev/null in
/// its place, so the file would go nowhere; the command says so, as it does for its own text
/// (thirteenth hostile re-run, L13-c: `report -o - >&-` said "report written to -", exit 0,
/// and nothing was anywhere). And a write that fails on standard output is the disk's failure
/// (exit 4), not a bad argument: `report -o - > /dev/full` exited 2.
#[test]
fn a_dash_output_on_a_closed_or_full_standard_output_is_said() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    crate::common::write_known_run(&run, &[0], 2, 100, crate::common::uniform_10_50, 7, 0);
    let run = run.to_str().unwrap();
    for args in [
        vec!["export", run, "--format", "json", "-o", "-"],
        vec!["report", run, "-o", "-"],
    ] {
        // `exec ... >&-`: the shell closes descriptor 1 for the command.
        let out = Command::new("sh")
            .arg("-c")
            .arg("exec \"$@\" >&-")
            .arg("sh")
            .arg(bin())
            .args(&args)
            .current_dir(tmp.path())
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(
            said.contains("standard output was closed when jitterlab started"),
            "{args:?} with stdout closed said nothing of it: {}",
            text(&out)
        );
    }
    if !std::path::Path::new("/dev/full").exists() {
        eprintln!("skipped the full disk: no /dev/full");
        return;
    }
    let out = Command::new(bin())
        .args(["report", run, "-o", "-"])
        .current_dir(tmp.path())
        .stdout(std::fs::File::create("/dev/full").unwrap())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", text(&out));
    assert!(
        text(&out).contains("No space left on device"),
        "{}",
        text(&out)
    );
}

//! How the lab brings a guest's results back (docs/lab.md, "Boot"): the guest saves each check
//! into a slot of its data disk as soon as the check ends (`ci/lab/guest/slots.sh`), the host
//! reads every slot whose header the guest wrote (`ci/lab/boot.sh` `lab_read_slots`), and stops
//! a guest whose kernel locked up (`lab_locked_up`), naming the check and its last step. Before,
//! the guest wrote one archive at its very end: a guest stopped at its limit (check 7) or whose
//! kernel locked up (the standard kernel in stops 58 and 59) brought back nothing, not even the
//! checks it had finished.

use std::path::Path;
use std::process::Command;

/// Runs `script` in bash from `dir`, with ci/lab/boot.sh's functions defined (and `lab_say`);
/// its stdout, or the failure.
fn bash(dir: &Path, script: &str) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let full = format!(
        "set -euo pipefail\nlab_say() {{ echo \"lab: $*\" >&2; }}\nsource {}/ci/lab/boot.sh\n{script}",
        root.display()
    );
    let o = Command::new("bash")
        .arg("-c")
        .arg(full)
        .current_dir(dir)
        .env("TMPDIR", dir)
        .env("SLOTS", root.join("ci/lab/guest/slots.sh"))
        .output()
        .expect("bash runs");
    assert!(
        o.status.success(),
        "{script}\nstdout: {}\nstderr: {}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Two checks saved, a third whose archive went onto the disk but whose header did not (the
/// guest stopped in between): the host reads the two whole, and not the third.
#[test]
fn every_finished_check_is_read_back_and_an_unfinished_slot_is_not() {
    let scratch = tempfile::tempdir().unwrap();
    let found = bash(
        scratch.path(),
        r#"
LAB_SLOT_MB=2
mkdir -p out/first out/second out/third results
echo 0 >out/first/exit; echo 0 >out/second/exit; echo 0 >out/third/exit
seq 1 50000 >out/second/big
echo x >out/uname-v
truncate -s $((5 * LAB_SLOT_MB))M img
( out=out disk=img slot_mb=$LAB_SLOT_MB; . "$SLOTS"; save uname-v; save first; save second
  # The third check's archive, written as save writes it, but no header after it.
  tar -cf part.tar -C out third
  dd if=part.tar of=img bs=1M seek=$((slot * slot_mb + 1)) conv=notrunc 2>/dev/null )
lab_read_slots img results
cd results && find . -type f | sort
cmp second/big ../out/second/big && echo same
"#,
    );
    assert_eq!(
        found.lines().collect::<Vec<_>>(),
        [
            "./first/exit",
            "./second/big",
            "./second/exit",
            "./uname-v",
            "same"
        ],
        "{found}"
    );
}

/// A check too large for a slot is said and not saved; the ones after it still are.
#[test]
fn a_check_larger_than_its_slot_is_said_and_the_next_one_still_saved() {
    let scratch = tempfile::tempdir().unwrap();
    let found = bash(
        scratch.path(),
        r#"
LAB_SLOT_MB=2
mkdir -p out/huge out/after results
head -c 3000000 /dev/zero >out/huge/data; echo 0 >out/after/exit
truncate -s $((3 * LAB_SLOT_MB))M img
said=$( out=out disk=img slot_mb=$LAB_SLOT_MB; . "$SLOTS"; save huge || true; save after )
lab_read_slots img results
echo "$said"
cd results && find . -type f | sort
"#,
    );
    assert!(
        found.contains("=== lab: huge (") && found.contains("does not fit a slot of 2 MiB"),
        "{found}"
    );
    assert!(found.ends_with("./after/exit\n"), "{found}");
    assert!(!found.contains("./huge/data"), "{found}");
}

/// The kernel's soft lockup report: a CPU stuck for less than the bound is a stall the guest
/// may survive; at the bound it is a lock-up, reported with the check and its last step. And a
/// console silent for longer than its bound (a guest whose clock stopped with its kernel, so
/// that its watchdog never reports).
#[test]
fn a_cpu_stuck_past_the_bound_is_a_lock_up_named_with_its_check_and_step() {
    let scratch = tempfile::tempdir().unwrap();
    let out = bash(
        scratch.path(),
        r#"
printf '%s\r\n' '=== lab: check trace-bpf (uptime 24.91 s)' '=== lab: check trace-bpf exit 0 (uptime 45.15 s)' \
    '=== lab: check trace-below (uptime 45.19 s)' '=== lab: 78.35 s: below tracefs itimer: run (captured)' \
    '=== lab: 84.71 s: removing the capture instance' \
    '[  132.637223] watchdog: BUG: soft lockup - CPU#0 stuck for 45s! [rmdir:469]' >console
if lab_locked_up console; then echo "locked at 45 s"; fi
echo '[  224.637132] watchdog: BUG: soft lockup - CPU#0 stuck for 131s! [rmdir:469]' >>console
echo "then: $(lab_locked_up console)"
lab_current_check console
lab_locked_up missing-console || echo "no console yet: not locked"
lab_silent console 60 || echo "just written: not silent"
touch -d '-481 seconds' console
lab_silent console 480 && echo "silent for 481 s"
lab_silent missing-console 1 || echo "no console: not silent"
"#,
    );
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        [
            "then: soft lockup - CPU#0 stuck for 131s! [rmdir:469]",
            "check trace-below (its last step: 84.71 s: removing the capture instance)",
            "no console yet: not locked",
            "just written: not silent",
            "silent for 481 s",
            "no console: not silent"
        ],
        "{out}"
    );
}

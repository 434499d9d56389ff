//! The value in force read and its holders named, on a fixture device (a file of 4 bytes, as
//! the device reads) and a fixture /proc (seventh hostile re-run, S1).

use super::*;
use std::os::unix::fs::symlink;

/// A fixture device reading `value`, and a fixture /proc.
fn fixture(value: u32) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let device = dir.path().join("cpu_dma_latency");
    std::fs::write(&device, (value as i32).to_ne_bytes()).unwrap();
    let proc = dir.path().join("proc");
    std::fs::create_dir(&proc).unwrap();
    (dir, device, proc)
}

/// A process `pid` of `proc` called `argv`, with `links` as its descriptors' targets.
fn process(proc: &Path, pid: u32, argv: &[&str], links: &[&Path]) {
    let dir = proc.join(pid.to_string());
    std::fs::create_dir_all(dir.join("fd")).unwrap();
    std::fs::write(dir.join("comm"), format!("{}\n", argv[0])).unwrap();
    std::fs::write(dir.join("cmdline"), argv.join("\0") + "\0").unwrap();
    std::fs::write(dir.join("status"), "Name:\tx\nUid:\t0\t0\t0\t0\n").unwrap();
    for (fd, target) in links.iter().enumerate() {
        symlink(target, dir.join("fd").join((fd + 3).to_string())).unwrap();
    }
}

#[test]
fn a_run_that_leaves_pm_qos_alone_says_what_another_process_held() {
    let (_dir, device, proc) = fixture(0);
    process(&proc, 4242, &["tuned", "-l"], &[&device]);
    // A process without the device open is not named.
    process(&proc, 4343, &["sleep", "9"], &[Path::new("/dev/null")]);
    let mut hold = hold_at(&device, &proc, None);
    assert_eq!(hold.record.held_us, None);
    assert_eq!(hold.record.in_force_us, Some(0));
    let others: Vec<u32> = hold.record.held_by_others.iter().map(|o| o.pid).collect();
    assert_eq!(others, vec![4242]);
    assert_eq!(hold.record.held_by_others[0].command, "tuned -l");
    assert!(!hold.record.held_by_others[0].jitterlab);
    let said = hold.news().expect("a warning");
    assert!(
        said.starts_with("PM QoS 0 us was in force during this run")
            && said.contains("this run left it alone")
            && said.contains("pid 4242")
            && said.contains("'tuned -l'"),
        "{said}"
    );
    // Said once for one value.
    hold.watch(u64::MAX);
    assert_eq!(hold.news(), None);
}

#[test]
fn no_request_in_force_says_nothing() {
    let (_dir, device, proc) = fixture(NO_REQUEST_US);
    process(&proc, 4242, &["tuned"], &[&device]);
    let mut hold = hold_at(&device, &proc, None);
    assert_eq!(hold.record.in_force_us, Some(NO_REQUEST_US));
    assert!(hold.record.held_by_others.is_empty());
    assert_eq!(hold.news(), None);
}

#[test]
fn a_lower_value_seen_during_a_held_run_names_another_jitterlab_and_its_cpus() {
    let (_dir, device, proc) = fixture(NO_REQUEST_US);
    let mut hold = hold_at(&device, &proc, Some(100));
    assert_eq!(hold.record.held_us, Some(100));
    assert_eq!(hold.record.previous_us, Some(NO_REQUEST_US));
    assert_eq!(hold.record.in_force_us, Some(100), "its own request");
    assert_eq!(hold.news(), None);
    // Another jitterlab starts, measuring CPU 0 and holding 0.
    process(
        &proc,
        77,
        &["jitterlab", "run", "--cpus", "0"],
        &[&device, Path::new("/run/jitterlab/cpu0.lock")],
    );
    std::fs::write(&device, 0i32.to_ne_bytes()).unwrap();
    hold.watch(1);
    assert_eq!(hold.record.in_force_us, Some(0));
    let other = &hold.record.held_by_others[0];
    assert_eq!(
        (other.pid, other.jitterlab, &other.cpus),
        (77, true, &vec![0])
    );
    let said = hold.news().expect("a warning");
    assert!(
        said.contains("this run held 100 us")
            && said.contains("another jitterlab measuring CPUs 0: pid 77"),
        "{said}"
    );
    // The end's read keeps the lowest value.
    std::fs::write(&device, 100i32.to_ne_bytes()).unwrap();
    hold.release();
    assert_eq!(hold.record.in_force_us, Some(0));
    assert_eq!(hold.news(), None);
}

#[test]
fn the_value_is_read_once_a_second_at_most() {
    let (_dir, device, proc) = fixture(NO_REQUEST_US);
    let mut hold = hold_at(&device, &proc, None);
    hold.watch(5);
    std::fs::write(&device, 0i32.to_ne_bytes()).unwrap();
    hold.watch(5 + READ_EVERY_NS - 1);
    assert_eq!(hold.record.in_force_us, Some(NO_REQUEST_US));
    hold.watch(5 + READ_EVERY_NS);
    assert_eq!(hold.record.in_force_us, Some(0));
}

/// The words name the holders as holding requests (the device does not say whose value is in
/// force), and a search cut short says so instead of naming no one as if there were none.
#[test]
fn the_holders_are_said_as_holding_requests_and_a_search_cut_short_says_so() {
    let holder = |pid| PmQosHolderRecord {
        pid,
        uid: Some(0),
        command: "tuned".into(),
        jitterlab: false,
        cpus: Vec::new(),
        text: format!("a process that is not jitterlab: pid {pid}"),
    };
    let mut record = PmQosRecord {
        held_by_others: vec![holder(1), holder(2)],
        ..PmQosRecord::default()
    };
    let said = warning(0, Some(20), &record);
    assert!(
        said.contains("processes holding requests on /dev/cpu_dma_latency when it was seen (each one's value is not known): a process that is not jitterlab: pid 1; a process that is not jitterlab: pid 2")
            && !said.contains("stopped after"),
        "{said}"
    );
    record.holders_not_all_searched = true;
    let said = warning(0, Some(20), &record);
    assert!(
        said.contains("stopped after 100 ms, so others may hold requests too"),
        "{said}"
    );
    record.held_by_others.clear();
    let said = warning(0, Some(20), &record);
    assert!(
        said.contains("held by a process not found") && !said.contains("cannot see"),
        "{said}"
    );
    record.holders_not_all_searched = false;
    assert!(warning(0, None, &record).contains("held by a process this user cannot see"));
}

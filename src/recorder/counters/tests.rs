//! The sampler on fixture trees: every source this project's VM lacks (idle states, frequency,
//! thermal throttling, coretemp, MSRs) is read from files laid out as the kernel lays them out,
//! and changed between two reads by known amounts.

use super::*;
use crate::format::counters;
use std::path::Path;

fn write(root: &Path, path: &str, text: &str) {
    let p = root.join(path);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// A fixture machine of two CPUs; `step` scales every count, so two steps differ by known
/// amounts.
fn lay_out(root: &Path, step: u64) {
    write(
        root,
        "proc/interrupts",
        &format!(
            "           CPU0       CPU1\n 29:  {}  {}  PCI-MSI  eth0\nLOC:  {}  {}  Local timer interrupts\nERR:  3\n",
            10 * step,
            5,
            250 * step,
            1000 * step
        ),
    );
    write(
        root,
        "proc/softirqs",
        &format!(
            "                CPU0       CPU1\n      NET_RX:  {}  0\n       TIMER:  {}  {}\n",
            7 * step,
            250 * step,
            step
        ),
    );
    write(
        root,
        "proc/stat",
        &format!(
            "cpu  1 2 3 4 5 6 7 8 0 0\ncpu0 1 2 3 4 5 6 7 {} 0 0\ncpu1 1 2 3 4 5 6 7 0 0 0\n",
            3 * step
        ),
    );
    let cpu1 = "sys/devices/system/cpu/cpu1";
    write(
        root,
        &format!("{cpu1}/cpuidle/state0/time"),
        &format!("{}\n", 100 * step),
    );
    write(
        root,
        &format!("{cpu1}/cpuidle/state0/usage"),
        &format!("{}\n", 2 * step),
    );
    write(
        root,
        &format!("{cpu1}/cpuidle/state1/time"),
        &format!("{}\n", 900 * step),
    );
    write(
        root,
        &format!("{cpu1}/cpuidle/state1/usage"),
        &format!("{}\n", step),
    );
    write(
        root,
        &format!("{cpu1}/cpufreq/scaling_cur_freq"),
        &format!("{}\n", 1_000_000 + step),
    );
    write(
        root,
        &format!("{cpu1}/thermal_throttle/core_throttle_count"),
        &format!("{}\n", step / 2),
    );
    write(
        root,
        &format!("{cpu1}/thermal_throttle/package_throttle_count"),
        "0\n",
    );
    write(root, &format!("{cpu1}/topology/core_id"), "1\n");
    write(root, &format!("{cpu1}/topology/physical_package_id"), "0\n");
    write(root, "sys/class/hwmon/hwmon3/name", "coretemp\n");
    write(root, "sys/class/hwmon/hwmon3/temp1_label", "Package id 0\n");
    write(root, "sys/class/hwmon/hwmon3/temp1_input", "61000\n");
    write(root, "sys/class/hwmon/hwmon3/temp3_label", "Core 1\n");
    write(
        root,
        "sys/class/hwmon/hwmon3/temp3_input",
        &format!("{}\n", 50_000 + step),
    );
    // The msr driver's file: 8 bytes at each register's offset. A regular file cannot hold
    // both 0xE7 and 0xE8 (their bytes overlap), so only APERF is written: MPERF reads its
    // byte 0xE7 (0) and APERF's first seven, that is APERF × 256.
    let mut msr = vec![0u8; 0x100];
    for (register, value) in [(0x34usize, step), (0xE8, 1500 * step)] {
        msr[register..register + 8].copy_from_slice(&value.to_le_bytes());
    }
    std::fs::create_dir_all(root.join("dev/cpu/1")).unwrap();
    std::fs::write(root.join("dev/cpu/1/msr"), msr).unwrap();
}

fn roots(root: &Path) -> Roots {
    Roots {
        proc: root.join("proc"),
        sys: root.join("sys"),
        dev: root.join("dev"),
    }
}

#[test]
fn reads_every_source_of_a_fixture_machine_as_changes_per_interval() {
    let dir = tempfile::tempdir().unwrap();
    lay_out(dir.path(), 1);
    let mut sampler = CounterSampler::open(&roots(dir.path()), &[1]);
    // Only ctxsw is absent: the fixture has no debugfs.
    let absent: Vec<&str> = sampler.absent.iter().map(|a| a.counter.as_str()).collect();
    assert_eq!(absent, vec!["ctxsw"], "{:?}", sampler.absent);
    sampler.read();
    lay_out(dir.path(), 5);
    sampler.read();
    let line = sampler.lines(0, 0, 1).next().unwrap();
    assert_eq!(line.cpu, 1);
    let got: Vec<(&str, Option<i64>)> = line
        .names
        .iter()
        .map(String::as_str)
        .zip(line.values.iter().copied())
        .collect();
    let expect: Vec<(&str, Option<i64>)> = vec![
        ("irq:29", Some(0)),
        ("irq:LOC", Some(4000)),
        ("softirq:NET_RX", Some(0)),
        ("softirq:TIMER", Some(4)),
        ("steal_ns", Some(0)),
        ("idle:state0:time_ns", Some(400_000)),
        ("idle:state0:usage", Some(8)),
        ("idle:state1:time_ns", Some(3_600_000)),
        ("idle:state1:usage", Some(4)),
        ("freq_khz", Some(1_000_005)),
        ("throttle:core", Some(2)),
        ("throttle:package", Some(0)),
        ("temp_mc", Some(50_005)),
        ("aperf", Some(6000)),
        ("mperf", Some(6000 * 256)),
        ("smi", Some(4)),
    ];
    assert_eq!(got, expect);
}

#[test]
fn steal_is_converted_from_ticks_and_the_other_cpu_is_left_out() {
    let dir = tempfile::tempdir().unwrap();
    lay_out(dir.path(), 1);
    let mut sampler = CounterSampler::open(&roots(dir.path()), &[0]);
    sampler.read();
    lay_out(dir.path(), 3);
    sampler.read();
    let line = sampler.lines(0, 0, 1).next().unwrap();
    let value = |name: &str| {
        let i = line.names.iter().position(|n| n == name).unwrap();
        line.values[i]
    };
    let tick_ns = 1_000_000_000 / crate::sys::mem::user_hz().unwrap() as i64;
    assert_eq!(value("steal_ns"), Some(6 * tick_ns));
    assert_eq!(value("irq:LOC"), Some(500));
    assert_eq!(value("softirq:NET_RX"), Some(14));
    assert_eq!(sampler.lines(0, 0, 1).count(), 1);
    // CPU 0 has none of CPU 1's files: absent, named.
    let absent: Vec<&str> = sampler.absent.iter().map(|a| a.counter.as_str()).collect();
    for c in [
        "ctxsw",
        "idle:",
        "freq_khz",
        "throttle:",
        "temp_mc",
        "aperf",
        "mperf",
        "smi",
    ] {
        assert!(absent.contains(&c), "{c} not absent: {absent:?}");
    }
}

#[test]
fn a_32_bit_count_that_wraps_is_a_change_and_a_64_bit_one_that_falls_is_unknown() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "proc/interrupts", "  CPU0\nLOC: 4294967290 x\n");
    write(
        root,
        "sys/devices/system/cpu/cpu0/cpuidle/state0/usage",
        "100\n",
    );
    let mut sampler = CounterSampler::open(&roots(root), &[0]);
    sampler.read();
    write(root, "proc/interrupts", "  CPU0\nLOC: 4 x\n");
    write(
        root,
        "sys/devices/system/cpu/cpu0/cpuidle/state0/usage",
        "50\n",
    );
    sampler.read();
    let line = sampler.lines(0, 0, 1).next().unwrap();
    assert_eq!(line.values[0], Some(10));
    assert_eq!(line.names[1], "idle:state0:usage");
    assert_eq!(line.values[1], None);
}

#[test]
fn the_log_reads_at_boundaries_and_writes_whole_lines_the_reader_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    lay_out(dir.path(), 1);
    let sampler = CounterSampler::open(&roots(dir.path()), &[0, 1]);
    let path = dir.path().join("counters.log");
    let file = File::create(&path).unwrap();
    let start = 1_000_000_000u64;
    let mut log = CounterLog::begin(sampler, Some(file), start, 100).unwrap();
    assert_eq!(log.due_in(start - 30), Duration::from_nanos(30));
    log.poll(start - 1); // before the first boundary: nothing
    assert_eq!(log.cost.reads, 0);
    log.poll(start + 2); // the first read
    assert_eq!(log.due_in(start + 2), Duration::from_nanos(98));
    lay_out(dir.path(), 2);
    log.poll(start + 101); // interval 0
    lay_out(dir.path(), 4);
    log.poll(start + 350); // late: interval 2 (from 101 to 350)
    log.finish(); // the partial interval 3
    assert_eq!(log.cost.reads, 4);
    let read = counters::read(&path).unwrap();
    let lines: Vec<(u64, usize)> = read.intervals.iter().map(|i| (i.interval, i.cpu)).collect();
    assert_eq!(lines, vec![(0, 0), (0, 1), (2, 0), (2, 1), (3, 0), (3, 1)]);
    let loc =
        |i: &counters::CounterInterval| i.values.iter().find(|(n, _)| &**n == "irq:LOC").unwrap().1;
    assert_eq!(loc(&read.intervals[0]), Some(250));
    assert_eq!(loc(&read.intervals[3]), Some(2000));
    assert_eq!(loc(&read.intervals[4]), Some(0));
    assert!(read.intervals[2].to_ns - read.intervals[2].from_ns > 200);
    let totals: Vec<_> = log.totals().filter(|t| t.1 == "irq:LOC").collect();
    assert_eq!(
        totals,
        vec![
            (0, "irq:LOC", Kind::Delta, 750),
            (1, "irq:LOC", Kind::Delta, 3000)
        ]
    );
}

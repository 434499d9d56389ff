//! counters.log written and read back, damaged, hostile and oversized.

use super::*;

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

#[test]
fn writes_and_reads_back_with_zeros_unknowns_and_redeclarations() {
    let mut out = Vec::new();
    let absent = [Absent {
        counter: "smi".into(),
        reason: "no /dev/cpu/0/msr".into(),
    }];
    let mut w = CountersWriter::begin(&mut out, 1_000_000_000, &absent).unwrap();
    let a = names(&["irq:LOC", "softirq:TIMER", "freq_khz"]);
    w.write_interval([LineRef {
        interval: 0,
        cpu: 1,
        from_ns: 10,
        to_ns: 1_000_000_020,
        names: &a,
        values: &[Some(250), Some(0), None],
    }])
    .unwrap();
    let b = names(&["irq:LOC", "softirq:TIMER", "freq_khz", "irq:44"]);
    w.write_interval([LineRef {
        interval: 1,
        cpu: 1,
        from_ns: 1_000_000_020,
        to_ns: 2_000_000_000,
        names: &b,
        values: &[Some(3), Some(4), Some(2_400_000), Some(7)],
    }])
    .unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(text.starts_with("#jitterlab-counters 1\n#interval_ns 1000000000\n#absent smi no /dev/cpu/0/msr\n#cpu 1 irq:LOC softirq:TIMER freq_khz\n0 1 10 1000000020 irq:LOC=250 freq_khz=?\n"), "{text}");
    let read = read_from(text.as_bytes()).unwrap();
    assert_eq!(read.interval_ns, 1_000_000_000);
    assert_eq!(read.absent, absent);
    assert_eq!(read.names_of(1), b.as_slice());
    assert_eq!(read.intervals.len(), 2);
    assert_eq!(
        read.intervals[0].values,
        vec![
            ("irq:LOC".into(), Some(250)),
            ("softirq:TIMER".into(), Some(0)),
            ("freq_khz".into(), None)
        ]
    );
    assert_eq!(read.intervals[1].values[3], ("irq:44".into(), Some(7)));
    assert!(read.damage.is_empty());
}

#[test]
fn a_torn_last_line_and_a_garbled_line_are_left_out_and_named() {
    let text = "#jitterlab-counters 1\n#interval_ns 5\n#cpu 0 irq:LOC\n0 0 0 5 irq:LOC=1\nxx yy\n1 0 5 10 irq:LOC=2\n2 0 10 1";
    let read = read_from(text.as_bytes()).unwrap();
    assert_eq!(read.intervals.len(), 2);
    assert_eq!(read.damage.len(), 2, "{:?}", read.damage);
    assert!(read.damage[0].contains("line 5"));
    assert!(read.damage[1].contains("torn"));
}

#[test]
fn refuses_other_files_and_later_versions() {
    assert!(read_from("#jitterlab-counters 2\n".as_bytes()).is_err());
    assert!(read_from("#[StartTime: 1]\n".as_bytes()).is_err());
    assert!(read_from("".as_bytes()).is_err());
}

#[test]
fn every_family_has_a_kind_and_the_gauges_are_the_readings() {
    assert_eq!(kind_of("freq_khz"), Kind::Gauge);
    assert_eq!(kind_of("temp_mc"), Kind::Gauge);
    assert_eq!(kind_of("irq:LOC"), Kind::Delta);
    assert_eq!(kind_of("idle:state1:time_ns"), Kind::Delta);
    assert!(family_of("softirq:NET_RX").is_some());
    assert!(family_of("bogus").is_none());
}

/// A counters log declaring `names` counters for CPU 0 (`irq:N`), the declaration repeated
/// `declarations` times, then `lines` data lines giving every counter a value.
fn many_names(names: usize, declarations: usize, lines: usize) -> String {
    let list: Vec<String> = (0..names).map(|n| format!("irq:{n}")).collect();
    let mut text = "#jitterlab-counters 1\n#interval_ns 1000000000\n".to_string();
    for _ in 0..declarations {
        text += &format!("#cpu 0 {}\n", list.join(" "));
    }
    for k in 0..lines {
        let values: Vec<String> = list.iter().map(|n| format!("{n}=1")).collect();
        text += &format!("{k} 0 {k}000 {k}001 {}\n", values.join(" "));
    }
    text
}

/// R10: a log declaring the most counters jitterlab reads for a CPU, declared four times, with
/// four data lines naming each, reads in time linear in its length (each name looked up in a
/// map: before, each re-declared name and each value was searched for in the list, 16 384²
/// string comparisons per line, tens of seconds here). One more counter is refused, naming
/// the cap.
#[test]
fn many_counters_read_in_linear_time_and_more_than_the_cap_are_refused() {
    let text = many_names(MAX_NAMES_PER_CPU, 4, 4);
    let t = std::time::Instant::now();
    let read = read_from(text.as_bytes()).unwrap();
    let took = t.elapsed();
    assert_eq!(read.names_of(0).len(), MAX_NAMES_PER_CPU);
    assert_eq!(read.intervals.len(), 4);
    assert!(read.intervals[3].values.iter().all(|(_, v)| *v == Some(1)));
    assert!(
        took < std::time::Duration::from_secs(3),
        "{MAX_NAMES_PER_CPU} counters took {took:?}"
    );
    let e = read_from(many_names(MAX_NAMES_PER_CPU + 1, 1, 0).as_bytes()).unwrap_err();
    assert!(
        e.contains(&format!(
            "more than {MAX_NAMES_PER_CPU} counters are declared for CPU 0"
        )),
        "{e}"
    );
}

/// N17 (fourth hostile re-run): declarations alone, each CPU under its cap, are bounded in
/// all: 65 CPUs of 16 384 names pass [`MAX_NAMES`] and are refused at the line that does,
/// naming the cap (a 251 MB file of them took 5.7 GB before).
#[test]
fn declarations_over_every_cpu_are_capped_in_all() {
    let list: Vec<String> = (0..MAX_NAMES_PER_CPU).map(|n| format!("irq:{n}")).collect();
    let list = list.join(" ");
    let mut text = "#jitterlab-counters 1\n#interval_ns 1000000000\n".to_string();
    let cpus = MAX_NAMES / MAX_NAMES_PER_CPU + 1;
    for cpu in 0..cpus {
        text += &format!("#cpu {cpu} {list}\n");
    }
    let e = read_from(text.as_bytes()).unwrap_err();
    assert!(
        e.contains(&format!(
            "line {}: more than 1 048 576 counters are declared in all",
            cpus + 2
        )),
        "{e}"
    );
}

/// R10: short data lines under a large declaration are refused past the values a scan hands
/// out ([`MAX_VALUES`]; here a small cap: each line costs a value per declared counter), and
/// [`read`] keeps at most its cap ([`MAX_KEPT_VALUES`], here a small one), naming it; under
/// both, the file reads.
#[test]
fn the_values_handed_out_and_kept_are_capped() {
    let mut text = many_names(1000, 1, 0);
    for k in 0..10 {
        text += &format!("{k} 0 0 0\n");
    }
    let mut handed = 0u64;
    let e = scan_from(
        text.as_bytes(),
        Some(&mut |i: CounterInterval| handed += i.values.len() as u64),
        9_999,
    )
    .unwrap_err();
    assert!(e.contains("line 13: more than 9 999 values"), "{e}");
    assert_eq!(handed, 9_000);
    // Counting makes no line and refuses at the same line; under the cap it counts them all.
    let e = scan_from(text.as_bytes(), None, 9_999).unwrap_err();
    assert!(e.contains("line 13: more than 9 999 values"), "{e}");
    assert_eq!(scan_from(text.as_bytes(), None, 10_000).unwrap().1, 10_000);
    let small = many_names(10, 1, 3);
    let kept = |most| {
        keep_all(
            |each| scan_from(small.as_bytes(), Some(each), MAX_VALUES).map(|(f, _)| f),
            most,
        )
    };
    assert_eq!(kept(30).unwrap().intervals.len(), 3);
    let e = kept(29).unwrap_err().unwrap_err();
    assert!(
        e.contains("it holds 30 values") && e.contains("more than the 29"),
        "{e}"
    );
}

/// R10: a line longer than [`MAX_LINE_BYTES`] is left out and named, the lines around it
/// kept; a file larger than [`MAX_FILE_BYTES`] (sparse here) is refused before reading,
/// naming the cap.
#[test]
fn an_overlong_line_is_left_out_and_an_oversized_file_refused() {
    let mut text = many_names(2, 1, 1);
    text += &format!("1 0 5 6 irq:0={}\n", "9".repeat(MAX_LINE_BYTES + 10));
    text += "2 0 6 7 irq:1=3\n";
    let got = read_from(text.as_bytes()).unwrap();
    assert_eq!(got.intervals.len(), 2);
    assert_eq!(got.intervals[1].values[1], ("irq:1".into(), Some(3)));
    assert_eq!(got.damage.len(), 1, "{:?}", got.damage);
    assert!(got.damage[0].contains("line 5 ("), "{:?}", got.damage);
    assert!(
        got.damage[0].contains("longer than 4 MiB"),
        "{:?}",
        got.damage
    );

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(FILE_NAME);
    std::fs::write(&path, many_names(2, 1, 1)).unwrap();
    assert_eq!(read_from_path(&path).intervals.len(), 1);
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(MAX_FILE_BYTES + 1)
        .unwrap();
    let e = read(&path).unwrap_err();
    assert!(e.contains("larger than 4 GiB"), "{e}");
}

fn read_from_path(path: &Path) -> CountersFile {
    read(path).unwrap()
}

/// Past its budget the writer writes no more intervals, from the first that would not fit on,
/// and counts them: the file stays whole and within the budget, and reads back (E1).
#[test]
fn intervals_past_the_budget_are_counted_not_written() {
    let mut out = Vec::new();
    let a = names(&["irq:LOC", "softirq:TIMER"]);
    let mut w = CountersWriter::with_budget(&mut out, 1_000, &[], 400).unwrap();
    for i in 0..20u64 {
        w.write_interval([LineRef {
            interval: i,
            cpu: 0,
            from_ns: i * 1_000,
            to_ns: (i + 1) * 1_000,
            names: &a,
            values: &[Some(250), Some(i as i64)],
        }])
        .unwrap();
    }
    let not_written = w.intervals_not_written;
    let text = String::from_utf8(out).unwrap();
    assert!(text.len() <= 400, "{} bytes", text.len());
    let read = read_from(text.as_bytes()).unwrap();
    assert!(read.damage.is_empty(), "{:?}", read.damage);
    assert!(not_written > 0 && not_written < 20);
    assert_eq!(read.intervals.len() as u64 + not_written, 20);
    let kept: Vec<u64> = read.intervals.iter().map(|i| i.interval).collect();
    assert_eq!(
        kept,
        (0..20 - not_written).collect::<Vec<_>>(),
        "the first ones, whole"
    );
}

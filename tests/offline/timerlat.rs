//! `jitterlab timerlat` on known inputs: its table against rtla timerlat hist's layout
//! (tests/data/import/rtla-timerlat-hist.txt, written in the layout of rtla's timerlat_hist.c),
//! byte for byte, from the figures that output states; what it refuses. Nothing here measures.

use crate::common::{jitterlab, text};
use jitterlab::commands::timerlat::hist::{Column, CpuHist, Layout, render};
use std::path::Path;

fn data(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/import")
        .join(name);
    std::fs::read_to_string(path).unwrap()
}

/// The columns the output states: per `IRQ-NNN` / `Thr-NNN` column its rows, `over:` and
/// summary rows (the sum as the average times the count: the same truncated average).
fn stated(output: &str, entries: usize) -> Vec<CpuHist> {
    let lines: Vec<&str> = output.lines().collect();
    let index = lines.iter().position(|l| l.starts_with("Index")).unwrap();
    let names: Vec<&str> = lines[index].split_whitespace().skip(1).collect();
    let mut columns: Vec<Column> = names.iter().map(|_| Column::new(entries)).collect();
    let summary = |label: &str| -> Vec<u64> {
        lines
            .iter()
            .find(|l| l.starts_with(label))
            .unwrap()
            .split_whitespace()
            .skip(1)
            .map(|v| v.parse().unwrap())
            .collect()
    };
    let (count, min, avg, max) = (
        summary("count:"),
        summary("min:"),
        summary("avg:"),
        summary("max:"),
    );
    for line in &lines[index + 1..] {
        let w: Vec<&str> = line.split_whitespace().collect();
        let at = match w[0] {
            "over:" => entries,
            n => match n.parse::<usize>() {
                Ok(n) => n,
                Err(_) => break,
            },
        };
        for (k, c) in columns.iter_mut().enumerate() {
            c.buckets[at] = w[k + 1].parse().unwrap();
        }
        if w[0] == "over:" {
            break;
        }
    }
    for (k, c) in columns.iter_mut().enumerate() {
        c.count = count[k];
        c.min = min[k];
        c.max = max[k];
        c.sum = avg[k] as u128 * count[k] as u128;
    }
    names
        .chunks(2)
        .zip(columns.chunks(2))
        .map(|(n, c)| CpuHist {
            cpu: n[0][4..].parse().unwrap(),
            irq: c[0].clone(),
            thread: c[1].clone(),
        })
        .collect()
}

#[test]
fn the_table_is_rtlas_byte_for_byte() {
    let real = data("rtla-timerlat-hist.txt");
    let layout = Layout {
        bucket_size: 1,
        entries: 256,
        ..Default::default()
    };
    let cpus = stated(&real, 256);
    assert_eq!(cpus.len(), 2);
    // `# Duration:   0 00:01:40`.
    assert_eq!(render(&cpus, &layout, 100), real);
    // Without IRQ (no --jitterlab-trace): the IRQ columns are gone everywhere, as rtla's
    // --no-irq, and the ALL line names Thr only.
    let no_irq = render(
        &cpus,
        &Layout {
            no_irq: true,
            ..layout
        },
        100,
    );
    assert!(no_irq.contains("Index   Thr-000   Thr-001\n"), "{no_irq}");
    assert!(no_irq.contains("\nALL:         Thr\n"), "{no_irq}");
    assert!(!no_irq.contains("IRQ"), "{no_irq}");
}

#[test]
fn refused_options_are_exit_2_with_the_reason() {
    for (args, says) in [
        (&["timerlat", "hist", "-t"][..], "--jitterlab-trace"),
        (&["timerlat", "-T", "100"][..], "--budget"),
        (&["timerlat", "top"][..], "hist"),
        (&["timerlat", "-P", "d:1ms:10ms"][..], "deadline"),
        (&["timerlat", "--frobnicate"][..], "unknown option"),
    ] {
        let out = jitterlab(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        assert!(text(&out).contains(says), "{args:?}: {}", text(&out));
    }
    let help = jitterlab(&["timerlat", "--help"]);
    assert_eq!(help.status.code(), Some(0));
    assert!(text(&help).contains("--jitterlab-trace"));
}

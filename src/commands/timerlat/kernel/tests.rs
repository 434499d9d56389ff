use super::*;

fn layout() -> Layout {
    Layout {
        bucket_size: 1,
        entries: 256,
        ..Default::default()
    }
}

#[test]
fn lines_to_rtlas_table() {
    let text = "\
# tracer: timerlat
          <idle>-0       [001] d.h1.    80.123456: #1     context    irq timer_latency      3999 ns
           <...>-9       [001] .....    80.123470: #1     context thread timer_latency     17999 ns
          <idle>-0       [001] d.h1.    80.124456: #2     context    irq timer_latency     12000 ns
           <...>-9       [001] .....    80.124490: #2     context thread timer_latency    300001 ns
          <idle>-0       [000] d.h1.    80.124500: #7     context    irq timer_latency      1000 ns
CPU:1 [LOST 3 EVENTS]
";
    let t = Tally::of_text(text, &[1], &layout());
    // CPU 0 is not measured: its line is counted as other, as is the header.
    assert_eq!(t.other, 2);
    assert_eq!(t.lost, vec![(1, 3, 0)]);
    assert_eq!(
        hist::render(&t.hists, &layout(), 10),
        "# RTLA timerlat histogram\n\
         # Time unit is microseconds (us)\n\
         # Duration:   0 00:00:10\n\
         Index   IRQ-001   Thr-001\n\
         3             1         0 \n\
         12            1         0 \n\
         17            0         1 \n\
         over:         0         1 \n\
         count:        2         2 \n\
         min:          3        17 \n\
         avg:          7       158 \n\
         max:         12       300 \n\
         ALL:        IRQ       Thr\n\
         count:        2         2 \n\
         min:          3        17 \n\
         avg:          7       158 \n\
         max:         12       300 \n"
    );
    // In ns (-n): the kernel's figures as they are.
    let ns = Layout {
        nano: true,
        ..layout()
    };
    let t = Tally::of_text(text, &[1], &ns);
    assert_eq!((t.hists[0].irq.min, t.hists[0].irq.max), (3999, 12000));
}

/// tests/data/timerlat/rt-6.1-capture.trace: one second of the tracer's `trace` on both CPUs of
/// the lab's guest (Debian 6.1.0-56-rt-amd64 under qemu TCG; ci/lab/checks/timerlat.guest.sh).
#[test]
fn kernel_engine_table_from_a_guest_capture() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/timerlat/rt-6.1-capture.trace"
    );
    let text = std::fs::read_to_string(path).unwrap();
    let t = Tally::of_text(
        &text,
        &[0, 1],
        &Layout {
            nano: true,
            ..layout()
        },
    );
    // The figures again, read another way: the last four words of each sample line are
    // `CONTEXT timer_latency N ns`, its CPU the `[NNN]` word.
    let mut expected: std::collections::BTreeMap<(usize, &str), Vec<u64>> = Default::default();
    let mut headers = 0;
    for line in text.lines() {
        if line.starts_with('#') {
            headers += 1;
            continue;
        }
        let w: Vec<&str> = line.split_whitespace().collect();
        let cpu = w
            .iter()
            .find(|x| x.starts_with("[0") && x.ends_with(']'))
            .map(|x| x[1..x.len() - 1].parse::<usize>().unwrap())
            .unwrap();
        assert_eq!(
            (w[w.len() - 3], w[w.len() - 1]),
            ("timer_latency", "ns"),
            "{line}"
        );
        expected
            .entry((cpu, w[w.len() - 4]))
            .or_default()
            .push(w[w.len() - 2].parse().unwrap());
    }
    assert_eq!(t.other, headers);
    assert!(t.lost.is_empty());
    for h in &t.hists {
        for (context, column) in [("irq", &h.irq), ("thread", &h.thread)] {
            let v = &expected[&(h.cpu, context)];
            assert_eq!(column.count, v.len() as u64, "CPU {} {context}", h.cpu);
            assert_eq!(column.min, *v.iter().min().unwrap());
            assert_eq!(column.max, *v.iter().max().unwrap());
            assert_eq!(column.sum, v.iter().map(|&x| x as u128).sum::<u128>());
            // About one activation per ms of the second captured, on each CPU.
            assert!((500..=1100).contains(&column.count), "{}", column.count);
        }
        // Every activation has both samples (the last one's thread may be cut off).
        assert!(h.irq.count - h.thread.count <= 1, "{h:?}");
    }
}

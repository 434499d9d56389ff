//! Parsers of the kernel's text counters, pure functions of the text (unit tests feed them
//! fixture text): /proc/interrupts and /proc/softirqs (one column per online CPU), /proc/stat's
//! cpuN lines, and the per-CPU sections of /sys/kernel/debug/sched/debug. Each hands out
//! `(cpu, label, value)` and allocates nothing.

/// The CPU numbers of a table's header line (`CPU0 CPU1 ...`), in column order.
fn header_cpus(header: &str, out: &mut Vec<usize>) {
    out.clear();
    out.extend(
        header
            .split_ascii_whitespace()
            .filter_map(|w| w.strip_prefix("CPU")?.parse::<usize>().ok()),
    );
}

/// /proc/interrupts or /proc/softirqs: a header of `CPUn` columns, then one line per source,
/// `LABEL: n0 n1 ... [description]`. Calls `found(cpu, label, count)` for every column of
/// every line that has one per CPU (lines with a single machine-wide count, such as ERR and
/// MIS, are not per CPU and are skipped). `columns` is scratch space kept by the caller.
pub(crate) fn per_cpu_table(
    text: &str,
    columns: &mut Vec<usize>,
    mut found: impl FnMut(usize, &str, u64),
) {
    let mut lines = text.lines();
    let Some(header) = lines.next() else {
        return;
    };
    header_cpus(header, columns);
    if columns.is_empty() {
        return;
    }
    for line in lines {
        let Some((label, rest)) = line.split_once(':') else {
            continue;
        };
        let label = label.trim();
        if label.is_empty() {
            continue;
        }
        // Only lines with a count for every column: the rest (ERR: 0) are machine-wide.
        let numeric = |w: &&str| w.bytes().all(|b| b.is_ascii_digit());
        if rest
            .split_ascii_whitespace()
            .take(columns.len())
            .filter(numeric)
            .count()
            < columns.len()
        {
            continue;
        }
        for (&cpu, w) in columns.iter().zip(rest.split_ascii_whitespace()) {
            if let Ok(v) = w.parse::<u64>() {
                found(cpu, label, v);
            }
        }
    }
}

/// /proc/stat: calls `found(cpu, steal_ticks)` for every `cpuN` line (the eighth number is the
/// time stolen by the hypervisor, in USER_HZ ticks; absent on kernels before 2.6.11).
pub(crate) fn stat_steal(text: &str, mut found: impl FnMut(usize, u64)) {
    for line in text.lines() {
        let mut words = line.split_ascii_whitespace();
        let Some(cpu) = words
            .next()
            .and_then(|w| w.strip_prefix("cpu"))
            .and_then(|n| n.parse::<usize>().ok())
        else {
            continue;
        };
        if let Some(steal) = words.nth(7).and_then(|w| w.parse::<u64>().ok()) {
            found(cpu, steal);
        }
    }
}

/// /sys/kernel/debug/sched/debug: calls `found(cpu, nr_switches)` for each `cpu#N` section's
/// `.nr_switches` line.
pub(crate) fn sched_debug_switches(text: &str, mut found: impl FnMut(usize, u64)) {
    let mut cpu: Option<usize> = None;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("cpu#") {
            cpu = rest
                .split(|c: char| !c.is_ascii_digit())
                .next()
                .and_then(|n| n.parse().ok());
            continue;
        }
        let trimmed = line.trim_start();
        if let (Some(c), Some(rest)) = (cpu, trimmed.strip_prefix(".nr_switches"))
            && let Some(v) = rest
                .trim_start()
                .strip_prefix(':')
                .and_then(|v| v.trim().parse::<u64>().ok())
        {
            found(c, v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// /proc/interrupts of a 2-CPU x86 VM (this project's), cut: numbered lines with their chip
    /// and name, named lines with a description, and the machine-wide ERR and MIS.
    const INTERRUPTS: &str = "           CPU0       CPU1       
  0:         44          0   IO-APIC   2-edge      timer
 24:          1          0  IO-APIC   5-edge      ACPI:Ged
 36:          0    1381631 PCI-MSIX-0000:00:02.0   1-edge      virtio1-req.0
NMI:          0          0   Non-maskable interrupts
LOC:   25082032   18800158   Local timer interrupts
RES:    1543058    1414431   Rescheduling interrupts
CAL:    4109043    3988396   Function call interrupts
ERR:          0
MIS:          0
";

    const SOFTIRQS: &str = "                    CPU0       CPU1       
          HI:          0          0
       TIMER:     791276    1142797
      NET_RX:      66584     101173
       SCHED:    2540044    2311932
";

    fn collect(text: &str) -> Vec<(usize, String, u64)> {
        let mut out = Vec::new();
        let mut columns = Vec::new();
        per_cpu_table(text, &mut columns, |c, l, v| {
            out.push((c, l.to_string(), v))
        });
        out
    }

    #[test]
    fn interrupts_per_line_and_cpu_without_the_machine_wide_lines() {
        let got = collect(INTERRUPTS);
        let expect: Vec<(usize, String, u64)> = [
            (0, "0", 44),
            (1, "0", 0),
            (0, "24", 1),
            (1, "24", 0),
            (0, "36", 0),
            (1, "36", 1381631),
            (0, "NMI", 0),
            (1, "NMI", 0),
            (0, "LOC", 25082032),
            (1, "LOC", 18800158),
            (0, "RES", 1543058),
            (1, "RES", 1414431),
            (0, "CAL", 4109043),
            (1, "CAL", 3988396),
        ]
        .iter()
        .map(|&(c, l, v)| (c, l.to_string(), v))
        .collect();
        // ERR and MIS have one machine-wide count, not one per CPU: left out.
        assert_eq!(got, expect);
    }

    #[test]
    fn softirqs_per_cpu() {
        let got = collect(SOFTIRQS);
        assert!(got.contains(&(0, "NET_RX".into(), 66584)));
        assert!(got.contains(&(1, "TIMER".into(), 1142797)));
        assert_eq!(got.len(), 8);
    }

    #[test]
    fn offline_cpus_are_missing_columns_not_shifted_ones() {
        // CPU1 offline: the columns are CPU0 and CPU2.
        let text = "       CPU0       CPU2\nLOC:   10   20   Local timer interrupts\n";
        assert_eq!(
            collect(text),
            vec![(0, "LOC".into(), 10), (2, "LOC".into(), 20)]
        );
    }

    #[test]
    fn steal_from_proc_stat_per_cpu_line_only() {
        let text = "cpu  3649603 2670504 561835 2186295 57409 0 6813 51832 0 0
cpu0 1824700 1297816 266013 1153532 20191 0 2019 25666 0 0
cpu1 1824903 1372688 295821 1032763 37218 0 4794 26166 0 0
intr 1 2 3
ctxt 12345
";
        let mut got = Vec::new();
        stat_steal(text, |c, v| got.push((c, v)));
        assert_eq!(got, vec![(0, 25666), (1, 26166)]);
    }

    #[test]
    fn context_switches_from_sched_debug_sections() {
        let text = "Sched Debug Version: v0.11, 6.8.0
cpu#0, 2400.000 MHz
  .nr_running                    : 1
  .nr_switches                   : 123456
cpu#1, 2400.000 MHz
  .nr_switches                   : 789
rt_rq[1]:
";
        let mut got = Vec::new();
        sched_debug_switches(text, |c, v| got.push((c, v)));
        assert_eq!(got, vec![(0, 123456), (1, 789)]);
    }
}

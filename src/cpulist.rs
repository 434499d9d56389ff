//! CPU lists in the kernel's notation (`0-3,8,10-11`), as in /sys and `taskset -c`.

use std::fs;

/// The largest CPU number a list may name. Linux supports at most 8192 CPUs today
/// (CONFIG_NR_CPUS); the bound is checked before a range is expanded, so that `0-4000000000`
/// is refused at once instead of allocating 32 GB, and whatever a list holds, its expansion
/// takes at most 64 Ki entries.
pub(crate) const MAX_CPU: usize = 65_535;

/// Parses a CPU list such as `0-3,5` into sorted, de-duplicated CPU numbers.
pub(crate) fn parse_cpu_list(text: &str) -> Result<Vec<usize>, String> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err("an empty CPU list; expected CPU numbers and ranges such as 0-3,5".into());
    }
    // First the ranges, checked, then one pass over a bitmap: linear in the text and bounded
    // by MAX_CPU however many ranges overlap.
    let mut ranges = Vec::new();
    for part in trimmed.split(',') {
        let part = part.trim();
        let number = |s: &str| {
            let n = s.trim().parse::<u64>().map_err(|_| {
                format!("'{part}' in CPU list '{text}' is not a CPU number or range; expected e.g. 0-3,5")
            })?;
            usize::try_from(n).ok().filter(|&n| n <= MAX_CPU).ok_or_else(|| {
                format!(
                    "CPU {n} in CPU list '{text}' is above {MAX_CPU}, the largest CPU number accepted; name CPUs of this system (see /sys/devices/system/cpu/online)"
                )
            })
        };
        let (lo, hi) = match part.split_once('-') {
            Some((lo, hi)) => (number(lo)?, number(hi)?),
            None => {
                let n = number(part)?;
                (n, n)
            }
        };
        if lo > hi {
            return Err(format!(
                "range '{part}' in CPU list '{text}' runs backwards"
            ));
        }
        ranges.push((lo, hi));
    }
    let top = ranges.iter().map(|&(_, hi)| hi).max().unwrap_or(0);
    let mut listed = vec![false; top + 1];
    for (lo, hi) in ranges {
        listed[lo..=hi].fill(true);
    }
    Ok(listed
        .iter()
        .enumerate()
        .filter_map(|(cpu, &on)| on.then_some(cpu))
        .collect())
}

/// Formats CPU numbers back into the compact kernel notation.
pub(crate) fn format_cpu_list(cpus: &[usize]) -> String {
    let mut out = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let start = cpus[i];
        let mut end = start;
        while i + 1 < cpus.len() && cpus[i + 1] == end + 1 {
            i += 1;
            end = cpus[i];
        }
        out.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    out.join(",")
}

/// The CPUs that are online now, from /sys/devices/system/cpu/online.
pub fn online_cpus() -> Result<Vec<usize>, String> {
    let path = "/sys/devices/system/cpu/online";
    let text = fs::read_to_string(path).map_err(|e| format!("cannot read {path}: {e}"))?;
    parse_cpu_list(&text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ranges_and_singles() {
        assert_eq!(parse_cpu_list("0-3,5"), Ok(vec![0, 1, 2, 3, 5]));
        assert_eq!(parse_cpu_list("7"), Ok(vec![7]));
        assert_eq!(parse_cpu_list("3,1,1-2\n"), Ok(vec![1, 2, 3]));
    }

    #[test]
    fn rejects_garbage() {
        assert!(parse_cpu_list("").is_err());
        assert!(parse_cpu_list("a").unwrap_err().contains("'a'"));
        assert!(parse_cpu_list("3-1").unwrap_err().contains("backwards"));
        assert!(parse_cpu_list("1,,2").is_err());
        assert!(parse_cpu_list("-1").is_err());
    }

    #[test]
    fn bounds_cpu_numbers_before_expanding() {
        let e = parse_cpu_list("0-4000000000").unwrap_err();
        assert!(e.contains("CPU 4000000000") && e.contains("65535"), "{e}");
        assert!(parse_cpu_list("99999999999999999999999").is_err());
        assert!(parse_cpu_list("65536").unwrap_err().contains("above 65535"));
        assert_eq!(parse_cpu_list("65535"), Ok(vec![65535]));
        // Overlapping ranges expand once: at most MAX_CPU + 1 entries, whatever the text.
        let many = vec!["0-65535"; 10_000].join(",");
        assert_eq!(parse_cpu_list(&many).unwrap().len(), MAX_CPU + 1);
    }

    #[test]
    fn formats_compactly() {
        assert_eq!(format_cpu_list(&[0, 1, 2, 3, 5, 7, 8]), "0-3,5,7-8");
        assert_eq!(format_cpu_list(&[]), "");
    }
}

//! CPU lists in the kernel's notation (`0-3,8,10-11`), as in /sys and `taskset -c`.

use std::fs;

/// Parses a CPU list such as `0-3,5` into sorted, de-duplicated CPU numbers.
pub fn parse_cpu_list(text: &str) -> Result<Vec<usize>, String> {
    let mut cpus = Vec::new();
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err("an empty CPU list; expected CPU numbers and ranges such as 0-3,5".into());
    }
    for part in trimmed.split(',') {
        let part = part.trim();
        let number = |s: &str| {
            s.trim().parse::<usize>().map_err(|_| {
                format!("'{part}' in CPU list '{text}' is not a CPU number or range; expected e.g. 0-3,5")
            })
        };
        match part.split_once('-') {
            Some((lo, hi)) => {
                let (lo, hi) = (number(lo)?, number(hi)?);
                if lo > hi {
                    return Err(format!(
                        "range '{part}' in CPU list '{text}' runs backwards"
                    ));
                }
                cpus.extend(lo..=hi);
            }
            None => cpus.push(number(part)?),
        }
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

/// Formats CPU numbers back into the compact kernel notation.
pub fn format_cpu_list(cpus: &[usize]) -> String {
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
    fn formats_compactly() {
        assert_eq!(format_cpu_list(&[0, 1, 2, 3, 5, 7, 8]), "0-3,5,7-8");
        assert_eq!(format_cpu_list(&[]), "");
    }
}

//! The `--json=FILE` file in rt-tests 2.x's layout (its `rt_write_json` and cyclictest's
//! `write_stats`), line for line: the header (file_version 1, the command line under the key
//! `"cmdline:"` with its colon, as rt-tests spells it, the times, uname and whether the kernel
//! is PREEMPT_RT), then per thread the histogram's non-zero buckets, cycles, min, max, avg
//! (two decimals), cpu and node. Strings are escaped as JSON (rt-tests writes them raw; the two
//! agree for every ordinary string).

use super::figures::ThreadFigures;
use std::fmt::Write;
use std::time::SystemTime;

/// What the header says of the run and the system.
#[derive(Debug, Clone)]
pub struct Header {
    /// `cyclictest` and its options, as a cyclictest command line.
    pub command_line: String,
    /// `rt_test_version:`: `jitterlab VERSION`, as `export --format cyclictest-json` writes it
    /// (no parser known reads it; a claim to be rt-tests would be false).
    pub version: String,
    pub start: SystemTime,
    pub end: SystemTime,
    pub return_code: i32,
    pub uname: crate::sys::host::Uname,
    pub realtime: bool,
}

/// One thread's entry: its figures, its CPU, its NUMA node.
pub struct ThreadEntry<'a> {
    pub figures: &'a ThreadFigures,
    pub cpu: usize,
    pub node: i64,
}

/// The whole file.
pub fn render(header: &Header, threads: &[ThreadEntry], nsecs: bool) -> String {
    let q = |s: &str| serde_json::to_string(s).expect("strings serialise");
    let mut f = String::from("{\n");
    let _ = writeln!(f, "  \"file_version\": 1,");
    let _ = writeln!(f, "  \"cmdline:\": {},", q(&header.command_line));
    let _ = writeln!(f, "  \"rt_test_version:\": {},", q(&header.version));
    let _ = writeln!(f, "  \"start_time\": {},", q(&rt_tests_time(header.start)));
    let _ = writeln!(f, "  \"end_time\": {},", q(&rt_tests_time(header.end)));
    let _ = writeln!(f, "  \"return_code\": {},", header.return_code);
    f += "  \"sysinfo\": {\n";
    let u = &header.uname;
    let _ = writeln!(f, "    \"sysname\": {},", q(&u.sysname));
    let _ = writeln!(f, "    \"nodename\": {},", q(&u.nodename));
    let _ = writeln!(f, "    \"release\": {},", q(&u.release));
    let _ = writeln!(f, "    \"version\": {},", q(&u.version));
    let _ = writeln!(f, "    \"machine\": {},", q(&u.machine));
    let _ = writeln!(f, "    \"realtime\": {}", u8::from(header.realtime));
    f += "  },\n";
    let _ = writeln!(f, "  \"num_threads\": {},", threads.len());
    let _ = writeln!(f, "  \"resolution_in_ns\": {},", u8::from(nsecs));
    f += "  \"thread\": {\n";
    for (k, t) in threads.iter().enumerate() {
        thread(&mut f, k, t, k + 1 == threads.len());
    }
    f += "  }\n}\n";
    f
}

fn thread(f: &mut String, k: usize, t: &ThreadEntry, last: bool) {
    let _ = writeln!(f, "    \"{k}\": {{");
    f.push_str("      \"histogram\": {");
    let buckets: Vec<String> = t
        .figures
        .histogram
        .iter()
        .enumerate()
        .filter(|(_, n)| **n > 0)
        .map(|(b, n)| format!("        \"{b}\": {n}"))
        .collect();
    if !buckets.is_empty() {
        f.push('\n');
        f.push_str(&buckets.join(",\n"));
        f.push('\n');
    }
    f.push_str("      },\n");
    let fig = t.figures;
    let _ = writeln!(f, "      \"cycles\": {},", fig.cycles);
    let _ = writeln!(f, "      \"min\": {},", fig.min);
    let _ = writeln!(f, "      \"max\": {},", fig.max);
    let _ = writeln!(f, "      \"avg\": {:.2},", fig.avg_exact());
    let _ = writeln!(f, "      \"cpu\": {},", t.cpu);
    let _ = writeln!(f, "      \"node\": {}", t.node);
    let _ = writeln!(f, "    }}{}", if last { "" } else { "," });
}

/// rt-tests' time stamp, in UTC: `Thu, 26 Nov 2026 20:17:31 +0000`, as
/// `export --format cyclictest-json` writes it (one place for the date arithmetic); a time
/// before 1970 (a clock set wrong) is written as the epoch.
pub fn rt_tests_time(t: SystemTime) -> String {
    crate::report::export::cyclictest_json::rfc2822(t)
        .unwrap_or_else(|| "Thu, 01 Jan 1970 00:00:00 +0000".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn times_as_rt_tests_writes_them() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_724_251);
        assert_eq!(rt_tests_time(t), "Thu, 26 Nov 2026 20:17:31 +0000");
        assert_eq!(
            rt_tests_time(SystemTime::UNIX_EPOCH),
            "Thu, 01 Jan 1970 00:00:00 +0000"
        );
        let leap = SystemTime::UNIX_EPOCH + Duration::from_secs(951_782_400);
        assert_eq!(rt_tests_time(leap), "Tue, 29 Feb 2000 00:00:00 +0000");
    }

    #[test]
    fn the_layout_is_rt_tests() {
        let mut a = ThreadFigures::new(30);
        [8, 9, 9, 40].iter().for_each(|&v| a.add(v));
        let b = ThreadFigures::new(0);
        let header = Header {
            command_line: "cyclictest -q -h 30".into(),
            version: "jitterlab 0.1.0".into(),
            start: SystemTime::UNIX_EPOCH,
            end: SystemTime::UNIX_EPOCH,
            return_code: 0,
            uname: crate::sys::host::Uname {
                sysname: "Linux".into(),
                nodename: "vm".into(),
                release: "6.1".into(),
                version: "#1".into(),
                machine: "x86_64".into(),
            },
            realtime: false,
        };
        let text = render(
            &header,
            &[
                ThreadEntry {
                    figures: &a,
                    cpu: 0,
                    node: 0,
                },
                ThreadEntry {
                    figures: &b,
                    cpu: 1,
                    node: 0,
                },
            ],
            false,
        );
        assert!(
            text.starts_with(
                "{\n  \"file_version\": 1,\n  \"cmdline:\": \"cyclictest -q -h 30\",\n"
            )
        );
        assert!(text.contains(
            "    \"0\": {\n      \"histogram\": {\n        \"8\": 1,\n        \"9\": 2\n      },\n      \"cycles\": 4,\n      \"min\": 8,\n      \"max\": 40,\n      \"avg\": 16.50,\n      \"cpu\": 0,\n      \"node\": 0\n    },\n"
        ), "{text}");
        assert!(text.contains("      \"histogram\": {      },\n"), "{text}");
        assert!(
            text.ends_with("      \"node\": 0\n    }\n  }\n}\n"),
            "{text}"
        );
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["thread"]["0"]["cycles"], 4);
    }
}

//! The `--json=FILE` file in rt-tests 2.x's layout (its `rt_write_json` and cyclictest's
//! `write_stats`), line for line: the header of every rt-tests JSON file (`rt_json`), then
//! per thread the histogram's non-zero buckets, cycles, min, max, avg
//! (two decimals), cpu and node. Strings are escaped as JSON (rt-tests writes them raw; the two
//! agree for every ordinary string).

use super::figures::ThreadFigures;
use crate::commands::rt_json;
pub use crate::commands::rt_json::Header;
use std::fmt::Write;

/// One thread's entry: its figures, its CPU, its NUMA node.
pub struct ThreadEntry<'a> {
    pub figures: &'a ThreadFigures,
    pub cpu: usize,
    pub node: i64,
}

/// The whole file.
pub fn render(header: &Header, threads: &[ThreadEntry], nsecs: bool) -> String {
    let mut f = rt_json::header(header);
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::SystemTime;

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

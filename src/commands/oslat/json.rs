//! The `--json=FILE` file in oslat's layout (rt-tests 2.40's `write_summary_json`): the rt-tests
//! header (`rt_json`), `num_threads`, then per thread `cpu`, `freq` (MHz), `min`, `avg` (six
//! decimals), `max` (us), `duration` (s, three decimals) and the non-zero buckets of its
//! `histogram`, keyed by their upper bound in us.

use super::figures::OslatFigures;
use crate::commands::rt_json::{self, Header};
use std::fmt::Write;

/// The whole file.
pub fn render(header: &Header, threads: &[OslatFigures]) -> String {
    let mut f = rt_json::header(header);
    let _ = writeln!(f, "  \"num_threads\": {},", threads.len());
    f += "  \"thread\": {\n";
    for (k, t) in threads.iter().enumerate() {
        let _ = writeln!(f, "    \"{k}\": {{");
        let _ = writeln!(f, "      \"cpu\": {},", t.cpu);
        let _ = writeln!(f, "      \"freq\": {},", t.counter_mhz);
        let _ = writeln!(f, "      \"min\": {},", t.min_us);
        let _ = writeln!(f, "      \"avg\": {:.6},", t.average_us().unwrap_or(0.0));
        let _ = writeln!(f, "      \"max\": {},", t.max_us);
        let _ = writeln!(f, "      \"duration\": {:.3},", t.duration_ns as f64 / 1e9);
        f += "      \"histogram\": {";
        let buckets: Vec<String> = t
            .buckets
            .iter()
            .enumerate()
            .filter(|(_, n)| **n > 0)
            .map(|(j, n)| format!("        \"{}\": {n}", j + 1))
            .collect();
        if !buckets.is_empty() {
            f.push('\n');
            f += &buckets.join(",\n");
            f.push('\n');
        }
        f += "      }\n";
        let _ = writeln!(f, "    }}{}", if k + 1 == threads.len() { "" } else { "," });
    }
    f += "  }\n}\n";
    f
}

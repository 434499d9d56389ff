//! The priority-inversion lines of a `--wake pi-mutex` run (run.json's `inversion`), for the
//! terminal summary and the HTML report: the roles, then each CPU's inversions.

use crate::format::run_record::{InversionRecord, RunRecord};
use crate::units::format_ns;

/// The heading and one line per CPU; empty for other runs.
pub fn lines(record: &RunRecord) -> Vec<String> {
    record
        .inversion
        .as_ref()
        .map(inversion_lines)
        .unwrap_or_default()
}

fn inversion_lines(inv: &InversionRecord) -> Vec<String> {
    let mut out = vec![heading(inv)];
    for t in &inv.threads {
        out.push(if t.inversions == 0 {
            format!(
                "cpu{}: no priority inversion (no wakeup later than {} while the hog ran inside the hold)",
                t.cpu,
                format_ns(inv.inversion_above_ns)
            )
        } else {
            format!(
                "cpu{}: PRIORITY INVERSION {} times, worst {} (wakeups later than {} while the hog preempted the holder)",
                t.cpu,
                t.inversions,
                format_ns(t.worst_inversion_ns),
                format_ns(inv.inversion_above_ns)
            )
        });
    }
    out
}

/// `Priority inversion: pthread_mutex PTHREAD_PRIO_INHERIT; measuring FIFO 95, hog FIFO 94
/// (spins 500.0 us from each due time), holder FIFO 93 (holds 200.0 us of CPU), each on the
/// measured CPU`.
fn heading(inv: &InversionRecord) -> String {
    let roles: Vec<String> = inv
        .roles
        .iter()
        .map(|r| {
            let what = match r.role.as_str() {
                "hog" => format!(" (spins {} from each due time)", format_ns(inv.hog_ns)),
                "holder" => format!(" (holds the mutex for {} of CPU)", format_ns(inv.hold_ns)),
                _ => String::new(),
            };
            format!(
                "{} {} {}{what}",
                r.role,
                r.policy.to_uppercase(),
                r.priority
            )
        })
        .collect();
    format!(
        "Priority inversion ({}): {}; all on the measured CPU",
        inv.mechanism,
        roles.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::run_record::{InversionCount, RoleRecord};

    #[test]
    fn names_the_roles_and_counts_per_cpu() {
        let role = |role: &str, priority| RoleRecord {
            role: role.into(),
            policy: "fifo".into(),
            priority,
        };
        let inv = InversionRecord {
            mechanism: "pthread_mutex PTHREAD_PRIO_NONE".into(),
            priority_inheritance: false,
            hold_ns: 200_000,
            hog_ns: 500_000,
            inversion_above_ns: 300_000,
            roles: vec![role("measuring", 95), role("hog", 94), role("holder", 93)],
            threads: vec![
                InversionCount {
                    cpu: 0,
                    inversions: 0,
                    worst_inversion_ns: 0,
                },
                InversionCount {
                    cpu: 1,
                    inversions: 12,
                    worst_inversion_ns: 650_000,
                },
            ],
        };
        assert_eq!(
            heading(&inv),
            "Priority inversion (pthread_mutex PTHREAD_PRIO_NONE): measuring FIFO 95, hog FIFO 94 (spins 500.0 us from each due time), holder FIFO 93 (holds the mutex for 200.0 us of CPU); all on the measured CPU"
        );
        let lines = inversion_lines(&inv);
        assert_eq!(lines.len(), 3);
        assert!(lines[1].starts_with("cpu0: no priority inversion"));
        assert!(lines[2].contains("PRIORITY INVERSION 12 times, worst 650.0 us"));
    }
}

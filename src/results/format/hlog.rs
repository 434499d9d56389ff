//! latency.hlog's naming: the file and its interval tags. The encoding (HdrHistogram's interval
//! log, V2 compressed histograms) is written by `record::hlog` and scanned by
//! `record::hlog_scan`.

/// The file name inside a result directory.
pub const FILE_NAME: &str = "latency.hlog";

/// What an interval's tag says: `cpu3` -> (Some(3), false), CPU 3's wakeup latency;
/// `cpu3.irq` -> (Some(3), true), its timer IRQ latency; any other tag -> (None, _).
pub fn parse_tag(tag: &str) -> (Option<usize>, bool) {
    let (base, irq) = match tag.strip_suffix(".irq") {
        Some(b) => (b, true),
        None => (tag, false),
    };
    (base.strip_prefix("cpu").and_then(|n| n.parse().ok()), irq)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_name_cpus() {
        assert_eq!(parse_tag("cpu3"), (Some(3), false));
        assert_eq!(parse_tag("cpu12.irq"), (Some(12), true));
        assert_eq!(parse_tag("other"), (None, false));
    }
}

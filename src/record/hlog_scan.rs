//! A fast, streaming reader of latency.hlog for long runs: each interval is decoded straight
//! from its V2 payload into the (value, count) pairs it holds, without building an
//! `hdrhistogram::Histogram` per interval.
//!
//! Why not [`super::hlog::read_intervals`]: a decoded `Histogram` carries a counts array sized
//! for its whole value range (about 100 KiB for a run whose worst wakeup took milliseconds), so a
//! day of 1 s intervals on 2 CPUs (172 800 intervals) would need 17 GB, and merging or iterating
//! them costs a scan of every array slot. An interval of a real-time run holds a few hundred
//! distinct values; this reader touches only those, reusing its buffers from line to line.
//!
//! The encoding is HdrHistogram's V2 (the "compressed" variant: a zlib stream of the V2
//! payload), counts as ZigZag LEB128 varints, negative numbers being runs of empty slots. A unit
//! test checks the decoded pairs against the hdrhistogram crate's own deserializer. The payload
//! decoding itself is in `hlog_scan/v2.rs`.

use hdrhistogram::Histogram;
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use std::io;
use std::path::Path;
mod v2;
use v2::PayloadDecoder;

/// One interval as the scanner hands it out. The slices live until the next interval.
#[derive(Debug)]
pub struct SparseInterval<'a> {
    pub tag: &'a str,
    /// Seconds from the log's base time (the run's first due time).
    pub start_s: f64,
    pub length_s: f64,
    /// (value, count) for each non-empty histogram slot, values ascending. The value is the
    /// highest value the slot stands for, as `Histogram::value_at_quantile` and `max` report it.
    pub counts: &'a [(u64, u64)],
    /// The sum of the counts.
    pub total: u64,
}

impl SparseInterval<'_> {
    /// The smallest recorded value v with at least `quantile` of the counts at or below it (the
    /// definition of `Histogram::value_at_quantile`); None for an empty interval.
    pub fn value_at_quantile(&self, quantile: f64) -> Option<u64> {
        if self.total == 0 {
            return None;
        }
        let wanted = ((quantile * self.total as f64).ceil() as u64).clamp(1, self.total);
        let mut seen = 0;
        for &(value, count) in self.counts {
            seen += count;
            if seen >= wanted {
                return Some(value);
            }
        }
        self.counts.last().map(|&(v, _)| v)
    }

    pub fn max(&self) -> Option<u64> {
        self.counts.last().map(|&(v, _)| v)
    }
}

impl SparseInterval<'_> {
    /// A copy that owns its pairs, for readers that keep intervals.
    pub fn to_stored(&self) -> StoredInterval {
        StoredInterval {
            tag: self.tag.to_string(),
            start_s: self.start_s,
            length_s: self.length_s,
            counts: self.counts.to_vec(),
        }
    }
}

/// One interval kept in memory as its non-empty (value, count) pairs: a few KiB where a decoded
/// `Histogram` takes about 100 KiB.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredInterval {
    pub tag: String,
    /// Seconds from the log's base time (the run's first due time).
    pub start_s: f64,
    pub length_s: f64,
    /// (value, count) for each non-empty slot, values ascending (see [`SparseInterval`]).
    pub counts: Vec<(u64, u64)>,
}

/// A last line without its end of line: the disk filled up, or the process was killed, while it
/// was being written. Readers use every complete interval before it and warn about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TornTail {
    /// Length of the torn line.
    pub bytes: usize,
}

impl TornTail {
    /// What readers tell the user (stderr, and the run's warnings in reports and exports).
    pub fn warning(&self, path: &Path) -> String {
        format!(
            "{}: the last line is torn ({} bytes without an end of line: the disk filled up or the run was killed while it was written); it is left out, every complete interval before it is used",
            path.display(),
            self.bytes
        )
    }
}

/// The whole lines of a log, and its torn tail if there is one.
pub fn complete_lines(bytes: &[u8]) -> (&[u8], Option<TornTail>) {
    let whole = bytes
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |at| at + 1);
    let torn = (whole < bytes.len()).then(|| TornTail {
        bytes: bytes.len() - whole,
    });
    (&bytes[..whole], torn)
}

/// Adds (value, count) pairs into a histogram of the crate's configuration.
pub fn add_counts(histogram: &mut Histogram<u64>, counts: &[(u64, u64)]) {
    for &(value, count) in counts {
        histogram
            .record_n(value, count)
            .expect("latency histograms resize automatically");
    }
}

/// Reads the log keeping at most `max_per_tag` intervals per tag: when a tag has more, runs of
/// `ceil(n / max_per_tag)` consecutive intervals are merged into one (its start is the first's,
/// its length the sum). Readers that need the run's time structure but not every second of a
/// day-long log (the block bootstrap of `compare`) stay within a few hundred MiB this way.
pub fn read_coarsened(
    path: &Path,
    max_per_tag: usize,
) -> io::Result<(Vec<StoredInterval>, Option<TornTail>)> {
    use std::collections::HashMap;
    let mut per_tag: HashMap<String, usize> = HashMap::new();
    scan(
        path,
        |i| *per_tag.entry(i.tag.to_string()).or_default() += 1,
        |_, _| {},
    )?;
    // Per tag: how many intervals go into one, and the group being filled.
    let mut groups: HashMap<String, (usize, usize, StoredInterval)> = HashMap::new();
    let mut out = Vec::new();
    let flush = |group: &mut StoredInterval, out: &mut Vec<StoredInterval>| {
        group.counts.sort_unstable_by_key(|&(v, _)| v);
        group.counts.dedup_by(|later, kept| {
            let same = later.0 == kept.0;
            if same {
                kept.1 += later.1;
            }
            same
        });
        // The pairs of several intervals were gathered; keep only what remains after merging.
        group.counts.shrink_to_fit();
        out.push(std::mem::replace(
            group,
            StoredInterval {
                tag: group.tag.clone(),
                start_s: 0.0,
                length_s: 0.0,
                counts: Vec::new(),
            },
        ));
    };
    let torn = scan(
        path,
        |i| {
            let (size, filled, group) = groups.entry(i.tag.to_string()).or_insert_with(|| {
                let n = per_tag.get(i.tag).copied().unwrap_or(1);
                (n.div_ceil(max_per_tag.max(1)).max(1), 0, i.to_stored())
            });
            if *filled == 0 {
                group.start_s = i.start_s;
                group.length_s = 0.0;
                group.counts.clear();
            }
            group.length_s += i.length_s;
            group.counts.extend_from_slice(i.counts);
            *filled += 1;
            if *filled == *size {
                flush(group, &mut out);
                *filled = 0;
            }
        },
        |_, _| {},
    )?;
    // Partial groups at the end of the log, in a stable order.
    let mut rest: Vec<_> = groups
        .into_values()
        .filter(|(_, filled, _)| *filled > 0)
        .collect();
    rest.sort_by(|a, b| a.2.tag.cmp(&b.2.tag));
    for (_, _, mut group) in rest {
        flush(&mut group, &mut out);
    }
    Ok((out, torn))
}

/// Calls `visit` for every interval of the log at `path`, in file order, and returns the torn
/// tail it left out, if any. `progress` is told the number of bytes of the file consumed so far
/// and the file's size, every few thousand intervals.
pub fn scan(
    path: &Path,
    mut visit: impl FnMut(&SparseInterval),
    mut progress: impl FnMut(u64, u64),
) -> io::Result<Option<TornTail>> {
    let bytes = std::fs::read(path)?;
    let size = bytes.len() as u64;
    let (whole, torn) = complete_lines(&bytes);
    scan_chunk(whole, path, &mut visit, &mut |done| progress(done, size))?;
    progress(size, size);
    Ok(torn)
}

/// Scans the log at `path` on `workers` threads, each taking a contiguous share of its lines
/// with a state made by `init`. Returns the states in file order, for the caller to merge (so
/// the order of intervals is preserved chunk by chunk), and the torn tail left out, if any.
/// `progress` gets the bytes scanned so far by all workers and the file's size.
pub fn scan_parallel<S: Send>(
    path: &Path,
    workers: usize,
    init: impl Fn() -> S + Sync,
    visit: impl Fn(&mut S, &SparseInterval) + Sync,
    progress: impl Fn(u64, u64) + Sync,
) -> io::Result<(Vec<S>, Option<TornTail>)> {
    use std::sync::atomic::{AtomicU64, Ordering};
    let bytes = std::fs::read(path)?;
    let size = bytes.len() as u64;
    let done = AtomicU64::new(0);
    let (whole, torn) = complete_lines(&bytes);
    let chunks = split_at_lines(whole, workers.max(1));
    let results: Vec<io::Result<S>> = std::thread::scope(|scope| {
        let handles: Vec<_> = chunks
            .iter()
            .map(|chunk| {
                let (init, visit, progress, done) = (&init, &visit, &progress, &done);
                scope.spawn(move || {
                    let mut state = init();
                    let mut reported = 0u64;
                    scan_chunk(chunk, path, &mut |i| visit(&mut state, i), &mut |at| {
                        let total = done.fetch_add(at - reported, Ordering::Relaxed);
                        progress(total + at - reported, size);
                        reported = at;
                    })?;
                    done.fetch_add(chunk.len() as u64 - reported, Ordering::Relaxed);
                    Ok(state)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a scanning thread panicked"))
            .collect()
    });
    progress(size, size);
    Ok((results.into_iter().collect::<io::Result<_>>()?, torn))
}

/// Splits `bytes` into up to `n` pieces of similar size, each ending at a line end.
fn split_at_lines(bytes: &[u8], n: usize) -> Vec<&[u8]> {
    let mut out = Vec::with_capacity(n);
    let mut from = 0;
    for k in 1..=n {
        let target = (bytes.len() * k / n).max(from);
        let to = if k == n {
            bytes.len()
        } else {
            bytes[target..]
                .iter()
                .position(|&b| b == b'\n')
                .map_or(bytes.len(), |p| target + p + 1)
        };
        if to > from {
            out.push(&bytes[from..to]);
        }
        from = to;
    }
    out
}

/// Scans whole lines of a log; `progress` gets the bytes of `chunk` consumed so far.
fn scan_chunk(
    chunk: &[u8],
    path: &Path,
    visit: &mut dyn FnMut(&SparseInterval),
    progress: &mut dyn FnMut(u64),
) -> io::Result<()> {
    let bad = |what: String| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{}: {what}", path.display()),
        )
    };
    let mut decoder = PayloadDecoder::default();
    let mut encoded = Vec::new();
    let mut counts = Vec::new();
    let base = chunk.as_ptr() as usize;
    for (n, entry) in IntervalLogIterator::new(chunk).enumerate() {
        let entry = entry.map_err(|e| bad(format!("malformed interval log: {e:?}")))?;
        let LogEntry::Interval(interval) = entry else {
            continue;
        };
        encoded.clear();
        let text = interval.encoded_histogram();
        base64::Engine::decode_vec(
            &base64::engine::general_purpose::STANDARD,
            text,
            &mut encoded,
        )
        .map_err(|_| bad("bad base64 in an interval".into()))?;
        counts.clear();
        let total = decoder
            .decode(&encoded, &mut counts)
            .map_err(|e| bad(format!("bad histogram: {e}")))?;
        visit(&SparseInterval {
            tag: interval.tag().map(|t| t.as_str()).unwrap_or(""),
            start_s: interval.start_timestamp().as_secs_f64(),
            length_s: interval.duration().as_secs_f64(),
            counts: &counts,
            total,
        });
        if n % 4096 == 4095 {
            progress((text.as_ptr() as usize - base) as u64);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::hlog::{self, HlogWriter};
    use super::*;
    use crate::record::stats::new_histogram;
    use std::time::{Duration, SystemTime};

    /// The decoded pairs are exactly what the hdrhistogram crate reads from the same file.
    #[test]
    fn agrees_with_the_hdrhistogram_deserializer() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(hlog::FILE_NAME);
        let mut w = HlogWriter::create(&path).unwrap();
        w.begin(SystemTime::UNIX_EPOCH, "t").unwrap();
        let mut x: u64 = 0x1234_5678_9abc_def1;
        let mut h = new_histogram();
        for k in 0..20u64 {
            h.reset();
            for i in 0..(k * 700) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                // 0 ns to ~70 ms, dense at the low end, a few enormous values
                let v = match i % 500 {
                    0 => x % 70_000_000,
                    1 => 0,
                    2 => 3_600_000_000_000 + k,
                    _ => 1_000 + x % 40_000,
                };
                h.record(v).unwrap();
            }
            w.write_interval(
                &format!("cpu{}", k % 2),
                Duration::from_secs(k / 2),
                Duration::from_secs(1),
                &h,
            )
            .unwrap();
        }
        drop(w);
        let reference = hlog::read_intervals(&path).unwrap();
        let mut seen = 0;
        scan(
            &path,
            |i| {
                let r = &reference[seen];
                assert_eq!(i.tag, r.tag);
                assert_eq!(i.start_s, r.start_s);
                assert_eq!(i.total, r.histogram.len());
                let want: Vec<(u64, u64)> = r
                    .histogram
                    .iter_recorded()
                    .map(|v| (v.value_iterated_to(), v.count_at_value()))
                    .collect();
                assert_eq!(i.counts, &want[..], "interval {seen}");
                for q in [0.0, 0.5, 0.99, 0.999, 1.0] {
                    if i.total > 0 {
                        assert_eq!(
                            i.value_at_quantile(q),
                            Some(r.histogram.value_at_quantile(q)),
                            "q {q}"
                        );
                    }
                }
                assert_eq!(i.max().unwrap_or(0), r.histogram.max());
                seen += 1;
            },
            |_, _| {},
        )
        .unwrap();
        assert_eq!(seen, 20);

        // Three workers see the same intervals, in file order chunk by chunk.
        let states = scan_parallel(
            &path,
            3,
            Vec::new,
            |v: &mut Vec<(String, f64, u64)>, i| v.push((i.tag.to_string(), i.start_s, i.total)),
            |_, _| {},
        )
        .unwrap();
        let flat: Vec<(String, f64, u64)> = states.0.into_iter().flatten().collect();
        let want: Vec<(String, f64, u64)> = reference
            .iter()
            .map(|r| (r.tag.clone(), r.start_s, r.histogram.len()))
            .collect();
        assert_eq!(flat, want);
    }

    #[test]
    fn coarsening_merges_consecutive_intervals_of_each_tag_and_keeps_every_count() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(hlog::FILE_NAME);
        let mut w = HlogWriter::create(&path).unwrap();
        w.begin(SystemTime::UNIX_EPOCH, "t").unwrap();
        let mut h = new_histogram();
        // 10 one-second intervals per CPU; interval k of cpu c holds k+1 samples of 1000*(k+1)+c.
        for k in 0..10u64 {
            for cpu in 0..2u64 {
                h.reset();
                h.record_n(1000 * (k + 1) + cpu, k + 1).unwrap();
                w.write_interval(
                    &format!("cpu{cpu}"),
                    Duration::from_secs(k),
                    Duration::from_secs(1),
                    &h,
                )
                .unwrap();
            }
        }
        drop(w);
        // At most 4 per tag: groups of 3 intervals (3 + 3 + 3 + 1).
        let coarse = read_coarsened(&path, 4).unwrap().0;
        for cpu in 0..2u64 {
            let tag = format!("cpu{cpu}");
            let mine: Vec<&StoredInterval> = coarse.iter().filter(|i| i.tag == tag).collect();
            assert_eq!(mine.len(), 4, "{tag}");
            let starts: Vec<f64> = mine.iter().map(|i| i.start_s).collect();
            assert_eq!(starts, [0.0, 3.0, 6.0, 9.0]);
            let lengths: Vec<f64> = mine.iter().map(|i| i.length_s).collect();
            assert_eq!(lengths, [3.0, 3.0, 3.0, 1.0]);
            // Values as the histogram reports them: the highest value of each slot.
            let slot = |v: u64| h.highest_equivalent(v);
            assert_eq!(
                mine[1].counts,
                vec![
                    (slot(4000 + cpu), 4),
                    (slot(5000 + cpu), 5),
                    (slot(6000 + cpu), 6)
                ]
            );
            let total: u64 = mine.iter().flat_map(|i| &i.counts).map(|&(_, c)| c).sum();
            assert_eq!(total, 55);
        }
        // Short logs are kept as they are.
        assert_eq!(read_coarsened(&path, 2000).unwrap().0.len(), 20);
    }

    /// A log cut in the middle of a line (a full disk, a kill): every complete interval is read,
    /// the torn line is reported, by every reader.
    #[test]
    fn a_torn_last_line_is_left_out_and_reported() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(hlog::FILE_NAME);
        let mut w = HlogWriter::create(&path).unwrap();
        w.begin(SystemTime::UNIX_EPOCH, "t").unwrap();
        let mut h = new_histogram();
        for k in 0..3u64 {
            h.record(1000 * (k + 1)).unwrap();
            w.write_interval("cpu0", Duration::from_secs(k), Duration::from_secs(1), &h)
                .unwrap();
        }
        drop(w);
        let full = std::fs::read(&path).unwrap();
        let last_line = full[..full.len() - 1]
            .iter()
            .rposition(|&b| b == b'\n')
            .unwrap()
            + 1;
        // Cut 10 bytes into the third interval's line.
        std::fs::write(&path, &full[..last_line + 10]).unwrap();

        let mut seen = 0;
        let torn = scan(&path, |_| seen += 1, |_, _| {}).unwrap();
        assert_eq!((seen, torn), (2, Some(TornTail { bytes: 10 })));
        let (states, torn) = scan_parallel(&path, 2, || 0, |n, _| *n += 1, |_, _| {}).unwrap();
        assert_eq!(
            (states.iter().sum::<i32>(), torn),
            (2, Some(TornTail { bytes: 10 }))
        );
        let (kept, torn) = read_coarsened(&path, 1000).unwrap();
        assert_eq!((kept.len(), torn), (2, Some(TornTail { bytes: 10 })));
        assert!(torn.unwrap().warning(&path).contains("10 bytes"));
        assert_eq!(hlog::read_intervals(&path).unwrap().len(), 2);
        // A complete log has no torn tail.
        std::fs::write(&path, &full).unwrap();
        assert_eq!(scan(&path, |_| {}, |_, _| {}).unwrap(), None);
    }
}

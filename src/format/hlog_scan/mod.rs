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
//! test checks the decoded pairs against the hdrhistogram crate's own deserializer.
//!
//! The parts: `v2` decodes one histogram payload, `interval` holds the decoded pairs, `torn`
//! handles a last line cut by a full disk or a kill, `coarsen` reads a long log merged down to
//! a bounded number of intervals per tag; this file walks the log's lines, on one thread or
//! several.

mod coarsen;
mod interval;
mod torn;
mod v2;

pub use coarsen::{ReadNotes, read_coarsened, read_coarsened_files};
pub use interval::{SparseInterval, StoredInterval, add_counts};
pub use torn::{TornTail, complete_lines};

use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use std::io;
use std::path::Path;
use v2::PayloadDecoder;

/// Calls `visit` for every interval of the log at `path`, in file order, and returns the torn
/// tail it left out, if any. `progress` is told the number of bytes of the file consumed so far
/// and the file's size, every few thousand intervals.
pub fn scan(
    path: &Path,
    mut visit: impl FnMut(&SparseInterval),
    mut progress: impl FnMut(u64, u64),
) -> io::Result<Option<TornTail>> {
    let bytes = crate::input::read_result_bytes(path, u64::MAX)?;
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
pub(crate) fn scan_parallel<S: Send>(
    path: &Path,
    workers: usize,
    init: impl Fn() -> S + Sync,
    visit: impl Fn(&mut S, &SparseInterval) + Sync,
    progress: impl Fn(u64, u64) + Sync,
) -> io::Result<(Vec<S>, Option<TornTail>)> {
    use std::sync::atomic::{AtomicU64, Ordering};
    let bytes = crate::input::read_result_bytes(path, u64::MAX)?;
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
    use crate::format::stats::new_histogram;
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

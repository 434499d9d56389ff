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
//! handles a last line cut by a full disk or a kill; this file walks the log's lines in chunks of
//! bounded size, on one thread or several (`results::cells` folds them into time cells).

mod interval;
mod torn;
mod v2;

pub use interval::{SparseInterval, StoredInterval};
pub(crate) use interval::{add_counts, merge_counts};
pub use torn::TornTail;
pub(crate) use torn::complete_lines;
#[cfg(test)]
pub(crate) use v2::MAX_PAYLOAD_BYTES;

use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry, LogIteratorError};
use std::io;
use std::path::Path;
use v2::PayloadDecoder;

/// The most of a log held in memory at once while scanning: the log is read in chunks of about
/// this size (each cut at a line end), so a month-long log of gigabytes is scanned in the memory
/// of one chunk, not of the file.
pub(crate) const CHUNK_BYTES: usize = 32 << 20;
/// The longest line of a log read: an interval's line holds one histogram of at most
/// `v2::MAX_PAYLOAD_BYTES` (16 MiB) inflated, base64 of its zlib stream; a longer line (a file that
/// is not a log, or a last line that never ends) is refused without reading further.
pub(crate) const MAX_LINE_BYTES: usize = 32 << 20;

/// Reads the log at `path` in chunks of whole lines of about [`CHUNK_BYTES`], handing each to
/// `lines` in file order with the offset of its first byte in the file; returns the torn tail
/// (a last line without its end of line) left out, if any.
fn for_each_chunk(
    path: &Path,
    mut lines: impl FnMut(u64, &[u8]) -> io::Result<()>,
) -> io::Result<Option<TornTail>> {
    use std::io::Read;
    let mut file = crate::input::open_result_file(path)?;
    let mut buf: Vec<u8> = Vec::new();
    let mut want = CHUNK_BYTES;
    let mut at = 0u64;
    loop {
        let before = buf.len();
        (&mut file)
            .take(want.saturating_sub(before) as u64)
            .read_to_end(&mut buf)?;
        let eof = buf.len() == before;
        let whole_len = complete_lines(&buf).0.len();
        if whole_len == 0 && !eof {
            if buf.len() > MAX_LINE_BYTES {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!(
                        "a line longer than {}, the longest line of an interval log jitterlab reads: not an interval log",
                        crate::input::format_bytes(MAX_LINE_BYTES as u64)
                    ),
                ));
            }
            // One line longer than the chunk: read on until it ends.
            want = buf.len() * 2;
            continue;
        }
        want = CHUNK_BYTES;
        if whole_len > 0 {
            lines(at, &buf[..whole_len])?;
            buf.drain(..whole_len);
            at += whole_len as u64;
        }
        if eof {
            return Ok((!buf.is_empty()).then_some(TornTail { bytes: buf.len() }));
        }
    }
}

/// Calls `visit` for every interval of the log at `path`, in file order, and returns the torn
/// tail it left out, if any. `progress` is told the number of bytes of the file consumed so far
/// and the file's size, every few thousand intervals. Memory: one chunk ([`CHUNK_BYTES`]).
pub fn scan(
    path: &Path,
    mut visit: impl FnMut(&SparseInterval),
    mut progress: impl FnMut(u64, u64),
) -> io::Result<Option<TornTail>> {
    let size = std::fs::symlink_metadata(path).map_or(0, |m| m.len());
    for_each_chunk(path, |at, chunk| {
        scan_chunk(chunk, at, &mut visit, &mut |done| progress(at + done, size))
    })
    .inspect(|_| progress(size, size))
}

/// Scans the log at `path` on as many threads as `states` has states, each folding into its
/// own state a contiguous share of every chunk's lines; the states live on from file to file
/// (a segmented log is many files). Worker k sees the k-th share of every chunk, so a state
/// must fold intervals by their time stamps, not by the order it sees them. Returns the torn
/// tail left out, if any. `progress` gets the bytes of this file scanned so far by all workers
/// and its size. Memory: one chunk ([`CHUNK_BYTES`]) and the states.
pub(crate) fn scan_parallel<S: Send>(
    path: &Path,
    states: &mut [S],
    visit: impl Fn(&mut S, &SparseInterval) + Sync,
    progress: impl Fn(u64, u64) + Sync,
) -> io::Result<Option<TornTail>> {
    use std::sync::atomic::{AtomicU64, Ordering};
    let size = std::fs::symlink_metadata(path).map_or(0, |m| m.len());
    let done = AtomicU64::new(0);
    let torn = for_each_chunk(path, |at, chunk| {
        let shares = split_at_lines(chunk, states.len().max(1));
        std::thread::scope(|scope| {
            let handles: Vec<_> = shares
                .iter()
                .zip(states.iter_mut())
                .map(|(share, state)| {
                    let (visit, progress, done) = (&visit, &progress, &done);
                    // The share's first byte in the file, for an error's offset.
                    let from = at + (share.as_ptr() as usize - chunk.as_ptr() as usize) as u64;
                    scope.spawn(move || {
                        let mut reported = 0u64;
                        scan_chunk(share, from, &mut |i| visit(state, i), &mut |at| {
                            let total = done.fetch_add(at - reported, Ordering::Relaxed);
                            progress(total + at - reported, size);
                            reported = at;
                        })?;
                        done.fetch_add(share.len() as u64 - reported, Ordering::Relaxed);
                        Ok(())
                    })
                })
                .collect();
            handles
                .into_iter()
                .try_for_each(|h| h.join().expect("a scanning thread panicked"))
        })
    })?;
    progress(size, size);
    Ok(torn)
}

/// What a reader says of a log whose line, at `offset` bytes into `chunk` (`at` being the
/// chunk's offset in its file), is neither an interval, a comment nor a header line (the
/// hdrhistogram crate's `ParseError`): where, in bytes from the file's start, what the line
/// starts with, and what the user can do. Without the file's name: the callers name it.
pub(crate) fn malformed(chunk: &[u8], at: u64, e: LogIteratorError) -> String {
    let LogIteratorError::ParseError { offset } = e;
    let line = chunk.get(offset..).unwrap_or_default();
    let line = &line[..line.iter().position(|&b| b == b'\n').unwrap_or(line.len())];
    let shown = if line.is_empty() {
        "an empty line".to_string()
    } else {
        const SHOWN: usize = 40;
        let text = String::from_utf8_lossy(&line[..line.len().min(SHOWN)]);
        let text: String = text.chars().flat_map(char::escape_default).collect();
        format!("\"{text}{}\"", if line.len() > SHOWN { "..." } else { "" })
    };
    let byte = at + offset as u64;
    format!(
        "not an interval log from byte {byte} on: the line that starts there ({shown}) is neither an interval, a comment nor a header line, so the file was damaged or edited there; restore it from a copy, or read the intervals before that line from a copy of the result directory with this file cut there (truncate -s {byte})"
    )
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

/// Scans whole lines of a log, `chunk` being the bytes from offset `at` of its file;
/// `progress` gets the bytes of `chunk` consumed so far. The errors do not name the file: each
/// caller says which file it could not read, once.
fn scan_chunk(
    chunk: &[u8],
    at: u64,
    visit: &mut dyn FnMut(&SparseInterval),
    progress: &mut dyn FnMut(u64),
) -> io::Result<()> {
    let bad = |what: String| io::Error::new(io::ErrorKind::InvalidData, what);
    let mut decoder = PayloadDecoder::default();
    let mut encoded = Vec::new();
    let mut counts = Vec::new();
    let base = chunk.as_ptr() as usize;
    for (n, entry) in IntervalLogIterator::new(chunk).enumerate() {
        let entry = entry.map_err(|e| bad(malformed(chunk, at, e)))?;
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
        let mut states = vec![Vec::new(); 3];
        scan_parallel(
            &path,
            &mut states,
            |v: &mut Vec<(String, f64, u64)>, i| v.push((i.tag.to_string(), i.start_s, i.total)),
            |_, _| {},
        )
        .unwrap();
        let flat: Vec<(String, f64, u64)> = states.into_iter().flatten().collect();
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
        let mut states = [0, 0];
        let torn = scan_parallel(&path, &mut states, |n, _| *n += 1, |_, _| {}).unwrap();
        assert_eq!(
            (states.iter().sum::<i32>(), torn),
            (2, Some(TornTail { bytes: 10 }))
        );
        assert!(torn.unwrap().warning(&path).contains("10 bytes"));
        assert_eq!(hlog::read_intervals(&path).unwrap().len(), 2);
        // A complete log has no torn tail.
        std::fs::write(&path, &full).unwrap();
        assert_eq!(scan(&path, |_| {}, |_, _| {}).unwrap(), None);
    }

    /// The hostile re-run's L3-d: a damaged line read "X/latency.hlog: malformed interval log:
    /// ParseError { offset: 1923 }" (a Debug value, the path twice, an offset within a chunk
    /// or a worker's share, not the file). Every reader now says the byte of the file where
    /// the damaged line starts, what it starts with, and what to do; no Debug value, and the
    /// scanners leave the path to their callers.
    #[test]
    fn a_damaged_line_is_named_by_its_byte_in_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(hlog::FILE_NAME);
        let mut w = HlogWriter::create(&path).unwrap();
        w.begin(SystemTime::UNIX_EPOCH, "t").unwrap();
        let mut h = new_histogram();
        for k in 0..30u64 {
            h.record(1000 * (k + 1)).unwrap();
            w.write_interval("cpu0", Duration::from_secs(k), Duration::from_secs(1), &h)
                .unwrap();
        }
        drop(w);
        let full = std::fs::read(&path).unwrap();
        // The start of a line about two thirds in: in the last of three workers' shares.
        let cut = full[..full.len() * 2 / 3]
            .iter()
            .rposition(|&b| b == b'\n')
            .unwrap()
            + 1;
        for (damage, shown) in [
            (&b"\n"[..], "(an empty line)".to_string()),
            (
                &b"\"garbage\"\tand a line longer than forty bytes\n"[..],
                "(\"\\\"garbage\\\"\\tand a line longer than forty b...\")".to_string(),
            ),
        ] {
            let mut bytes = full[..cut].to_vec();
            bytes.extend_from_slice(damage);
            bytes.extend_from_slice(&full[cut..]);
            std::fs::write(&path, &bytes).unwrap();
            let scanned = scan(&path, |_| {}, |_, _| {}).unwrap_err().to_string();
            let mut states = [0, 0, 0];
            let parallel = scan_parallel(&path, &mut states, |n, _| *n += 1, |_, _| {})
                .unwrap_err()
                .to_string();
            let read = hlog::read_intervals(&path).unwrap_err().to_string();
            for e in [&scanned, &parallel, &read] {
                assert!(
                    e.contains(&format!("not an interval log from byte {cut} on: ")),
                    "{e}"
                );
                assert!(e.contains(&shown), "{e}");
                assert!(e.contains(&format!("(truncate -s {cut})")), "{e}");
                assert!(!e.contains("ParseError") && !e.contains('{'), "{e}");
            }
            let shown_path = path.display().to_string();
            assert!(!scanned.contains(&shown_path), "{scanned}");
            assert!(!parallel.contains(&shown_path), "{parallel}");
            assert_eq!(read.matches(&shown_path).count(), 1, "{read}");
        }
    }
}

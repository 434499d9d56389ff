//! Reading a long log coarsened: at most so many intervals per tag, consecutive ones merged.
//! Apart from the scanner because it is a policy on top of it (two passes, grouping per tag),
//! used by readers that need the run's time structure but not every interval.

use super::{StoredInterval, TornTail, scan};
use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};

/// What reading several log files (the segments of a continuous run) met besides intervals.
#[derive(Debug, Default)]
pub struct ReadNotes {
    /// Files whose last line was torn, and the tail left out.
    pub torn: Vec<(PathBuf, TornTail)>,
    /// Files listed but gone when read (deleted by retention meanwhile).
    pub vanished: Vec<PathBuf>,
}

/// Scans `paths` in order as one log; a file that has disappeared is skipped and noted.
fn scan_files(
    paths: &[PathBuf],
    visit: &mut dyn FnMut(&super::SparseInterval),
    notes: &mut ReadNotes,
) -> io::Result<()> {
    for path in paths {
        if notes.vanished.contains(path) {
            continue;
        }
        match scan(path, &mut *visit, |_, _| {}) {
            Ok(torn) => {
                if let Some(t) = torn
                    && !notes.torn.iter().any(|(p, _)| p == path)
                {
                    notes.torn.push((path.clone(), t));
                }
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => notes.vanished.push(path.clone()),
            Err(e) => return Err(io::Error::new(e.kind(), format!("{}: {e}", path.display()))),
        }
    }
    Ok(())
}

/// Reads the log keeping at most `max_per_tag` intervals per tag: when a tag has more, runs of
/// `ceil(n / max_per_tag)` consecutive intervals are merged into one (its start is the first's,
/// its length the sum). Readers that need the run's time structure but not every second of a
/// day-long log (the block bootstrap of `compare`) stay within a few hundred MiB this way.
pub fn read_coarsened(
    path: &Path,
    max_per_tag: usize,
) -> io::Result<(Vec<StoredInterval>, Option<TornTail>)> {
    let (intervals, notes) = read_coarsened_files(&[path.to_path_buf()], max_per_tag)?;
    if let Some(p) = notes.vanished.first() {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("{}: no such file", p.display()),
        ));
    }
    Ok((intervals, notes.torn.first().map(|(_, t)| *t)))
}

/// [`read_coarsened`] over several files read in order as one log (the segments of a
/// continuous run): a file gone when read is skipped and noted, as is each torn last line.
pub fn read_coarsened_files(
    paths: &[PathBuf],
    max_per_tag: usize,
) -> io::Result<(Vec<StoredInterval>, ReadNotes)> {
    let mut notes = ReadNotes::default();
    let mut per_tag: HashMap<String, usize> = HashMap::new();
    scan_files(
        paths,
        &mut |i| *per_tag.entry(i.tag.to_string()).or_default() += 1,
        &mut notes,
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
    scan_files(
        paths,
        &mut |i| {
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
        &mut notes,
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
    Ok((out, notes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::hlog::{self, HlogWriter};
    use crate::format::stats::new_histogram;
    use std::time::{Duration, SystemTime};

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
}

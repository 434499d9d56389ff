//! The ring-buffer page format of `per_cpu/cpuN/trace_pipe_raw`, parsed with the layout of
//! `events/header_page` and `events/header_event` ([`super::format`]).
//!
//! A page is a header (`timestamp`, `commit`) followed by `commit` bytes of events. Each event
//! starts with a 32-bit word split into `type_len` and `time_delta` (the bit widths of
//! header_event); the event's time is the page timestamp plus the deltas of every event before
//! it. The reserved type values (also from header_event) are
//!
//! - padding: unused space (`array[0]` more bytes). A padding with time_delta 0 marks the end of
//!   the data; one with a delta is a discarded event. Neither moves the time (as the kernel's
//!   reader, `rb_update_read_stamp`, does);
//! - time extend: a delta too long for the header: `array[0] << time_delta_bits | time_delta`
//!   is added to the time;
//! - absolute time stamp: the time itself, in the same encoding (its top bits from the current
//!   time, as the kernel's `rb_fix_abs_ts` does);
//! - type_len 0: a data event whose length is in `array[0]` (including that word);
//! - 1..=data max: a data event of type_len × 4 bytes.
//!
//! The format files do not give the two flag bits the kernel sets in `commit` when events were
//! lost before this page (`RB_MISSED_EVENTS`, bit 31; and `RB_MISSED_STORED`, bit 30, when the
//! number lost is stored as an unsigned long right after the data); those are named here.

use super::format::{Formats, HeaderEvent, HeaderPage};

/// `RB_MISSED_EVENTS` in kernel/trace/ring_buffer.c: events were lost before this page.
pub(crate) const MISSED_EVENTS: u64 = 1 << 31;
/// `RB_MISSED_STORED`: the number lost follows the data, as an unsigned long.
pub(crate) const MISSED_STORED: u64 = 1 << 30;
/// The bits of `commit` that hold the data length.
const COMMIT_MASK: u64 = MISSED_STORED - 1;

/// Events lost before a page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Missed {
    None,
    /// Lost, and how many.
    Count(u64),
    /// Lost, number unknown (no room on the page to store it).
    Unknown,
}

/// What a page held, besides its events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageInfo {
    pub(crate) timestamp: u64,
    /// Bytes of event data.
    pub(crate) data_len: usize,
    pub missed: Missed,
    pub events: usize,
    pub paddings: usize,
    pub time_extends: usize,
    pub(crate) time_stamps: usize,
    /// Data events whose length was in `array[0]`.
    pub long_events: usize,
}

/// Why a page could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageError(pub String);

impl std::fmt::Display for PageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// Splits an event header word into (type_len, time_delta). Bit-fields are laid out from the
/// least significant bit on little-endian machines and from the most significant on big-endian.
fn split_header(word: u32, type_len_bits: u32) -> (u32, u32) {
    let delta_bits = 32 - type_len_bits;
    if cfg!(target_endian = "little") {
        (word & ((1 << type_len_bits) - 1), word >> type_len_bits)
    } else {
        (word >> delta_bits, word & ((1 << delta_bits) - 1))
    }
}

/// Walks one page, calling `event(timestamp_ns, record)` for every data event in order, where
/// `record` starts at the event's `common_type` field. `page` is what one read of
/// trace_pipe_raw returned (a whole page).
pub fn read_page(
    formats: &Formats,
    page: &[u8],
    mut event: impl FnMut(u64, &[u8]),
) -> Result<PageInfo, PageError> {
    let he = &formats.header_event;
    let (mut info, data) = read_page_header(&formats.header_page, page)?;
    let mut ts = info.timestamp;
    let mut pos = 0usize;
    while pos + 4 <= data.len() {
        match entry_at(he, data, pos)? {
            Entry::End => {
                info.paddings += 1;
                break;
            }
            Entry::Padding { size } => {
                info.paddings += 1;
                pos += size;
            }
            Entry::TimeExtend { delta } => {
                ts += delta;
                info.time_extends += 1;
                pos += 8;
            }
            Entry::TimeStamp { stamp } => {
                ts = absolute_time(stamp, ts, he.time_delta_bits);
                info.time_stamps += 1;
                pos += 8;
            }
            Entry::Data {
                delta,
                record,
                size,
                long,
            } => {
                ts += delta;
                event(ts, record);
                info.events += 1;
                if long {
                    info.long_events += 1;
                }
                pos += size;
            }
        }
    }
    Ok(info)
}

fn malformed(what: String) -> PageError {
    PageError(format!("malformed trace page: {what}"))
}

/// Reads the page header: the page's time stamp, the length of its data (checked against the
/// page) and the events lost before it. Returns the page's info with no entries counted yet,
/// and its event data.
fn read_page_header<'p>(
    hp: &HeaderPage,
    page: &'p [u8],
) -> Result<(PageInfo, &'p [u8]), PageError> {
    if page.len() < hp.data.offset {
        return Err(malformed(format!(
            "{} bytes, shorter than the {}-byte page header",
            page.len(),
            hp.data.offset
        )));
    }
    let timestamp = hp
        .timestamp
        .uint(page)
        .ok_or_else(|| malformed("no timestamp".into()))?;
    let commit = hp
        .commit
        .uint(page)
        .ok_or_else(|| malformed("no commit word".into()))?;
    let data_len = (commit & COMMIT_MASK) as usize;
    let data = &page[hp.data.offset..];
    if data_len > data.len() || data_len > hp.data.size {
        return Err(malformed(format!(
            "commit says {data_len} bytes of events, the page holds {}",
            data.len().min(hp.data.size)
        )));
    }
    let missed = if commit & MISSED_EVENTS == 0 {
        Missed::None
    } else if commit & MISSED_STORED != 0 {
        // Stored as an unsigned long: the size of the commit word (local_t) in header_page.
        let n = hp.commit.size;
        match data.get(data_len..data_len + n) {
            Some(b) if n == 8 => Missed::Count(u64::from_ne_bytes(b.try_into().unwrap())),
            Some(b) if n == 4 => Missed::Count(u32::from_ne_bytes(b.try_into().unwrap()) as u64),
            _ => Missed::Unknown,
        }
    } else {
        Missed::Unknown
    };
    let info = PageInfo {
        timestamp,
        data_len,
        missed,
        events: 0,
        paddings: 0,
        time_extends: 0,
        time_stamps: 0,
        long_events: 0,
    };
    Ok((info, &data[..data_len]))
}

/// One entry of a page's event data, as its header word (and `array[0]`) say; `size` is the
/// bytes it takes on the page, header included.
enum Entry<'d> {
    /// A padding with time_delta 0: the rest of the page is unused.
    End,
    /// Unused space or a discarded event; neither moves the time.
    Padding {
        size: usize,
    },
    TimeExtend {
        delta: u64,
    },
    /// The absolute time's low bits.
    TimeStamp {
        stamp: u64,
    },
    Data {
        delta: u64,
        record: &'d [u8],
        size: usize,
        /// Its length was in `array[0]` (type_len 0).
        long: bool,
    },
}

/// Decodes the entry at byte `pos` of `data` (at least its header word is on the page).
fn entry_at<'d>(he: &HeaderEvent, data: &'d [u8], pos: usize) -> Result<Entry<'d>, PageError> {
    let (type_len, delta) = split_header(u32_at(data, pos).unwrap(), he.type_len_bits);
    let array0 = || {
        u32_at(data, pos + 4)
            .ok_or_else(|| malformed(format!("event at byte {pos} is cut off by the page end")))
    };
    let long_time = |a: u32| ((a as u64) << he.time_delta_bits) | delta as u64;
    let record = |range: std::ops::Range<usize>| {
        data.get(range)
            .ok_or_else(|| malformed(format!("event at byte {pos} runs past the page end")))
    };
    if type_len == he.padding {
        if delta == 0 {
            return Ok(Entry::End);
        }
        Ok(Entry::Padding {
            size: 4 + array0()? as usize,
        })
    } else if type_len == he.time_extend {
        Ok(Entry::TimeExtend {
            delta: long_time(array0()?),
        })
    } else if type_len == he.time_stamp {
        Ok(Entry::TimeStamp {
            stamp: long_time(array0()?),
        })
    } else if type_len == 0 {
        let len = array0()? as usize;
        if len < 4 {
            return Err(malformed(format!("event at byte {pos} has length {len}")));
        }
        Ok(Entry::Data {
            delta: delta as u64,
            record: record(pos + 8..pos + 4 + len)?,
            size: 4 + len.next_multiple_of(4),
            long: true,
        })
    } else if type_len <= he.data_max_type_len {
        let len = type_len as usize * 4;
        Ok(Entry::Data {
            delta: delta as u64,
            record: record(pos + 4..pos + 4 + len)?,
            size: 4 + len,
            long: false,
        })
    } else {
        Err(malformed(format!(
            "event at byte {pos} has type_len {type_len}, which header_event does not define"
        )))
    }
}

/// The time an absolute time stamp gives, `ts` being the time before it. The stamp keeps the
/// low 59 bits; the top bits come from the current time.
fn absolute_time(stamp: u64, ts: u64, time_delta_bits: u32) -> u64 {
    let top_mask = !((1u64 << (time_delta_bits + 32)) - 1);
    let mut t = stamp | (ts & top_mask);
    if t < ts && ts & top_mask != 0 {
        t += 1 << (time_delta_bits + 32);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::format::{HeaderEvent, HeaderPage};

    fn formats() -> Formats {
        Formats {
            header_page: HeaderPage::parse(
                "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n",
            )
            .unwrap(),
            header_event: HeaderEvent {
                type_len_bits: 5,
                time_delta_bits: 27,
                padding: 29,
                time_extend: 30,
                time_stamp: 31,
                data_max_type_len: 28,
            },
        }
    }

    fn word(type_len: u32, delta: u32) -> [u8; 4] {
        (type_len | (delta << 5)).to_ne_bytes()
    }

    /// A synthetic page with every kind of entry: the deltas, extends, stamps and lengths must
    /// add up exactly.
    #[test]
    fn walks_every_entry_kind() {
        let mut data = Vec::new();
        data.extend(word(2, 10)); // 8-byte event at +10
        data.extend(7u64.to_ne_bytes());
        data.extend(word(30, 5)); // extend by (3 << 27) + 5
        data.extend(3u32.to_ne_bytes());
        data.extend(word(1, 1)); // 4-byte event
        data.extend(8u32.to_ne_bytes());
        data.extend(word(29, 9)); // a discarded 8-byte event: padding, no time
        data.extend(8u32.to_ne_bytes());
        data.extend(0u32.to_ne_bytes());
        data.extend(word(0, 2)); // long event, 12 bytes of data
        data.extend(16u32.to_ne_bytes());
        data.extend([9u8; 12]);
        data.extend(word(31, 100)); // absolute stamp 100 + (1 << 27)
        data.extend(1u32.to_ne_bytes());
        data.extend(word(1, 0));
        data.extend(5u32.to_ne_bytes());
        let mut page = vec![0u8; 4096];
        page[0..8].copy_from_slice(&1_000u64.to_ne_bytes());
        page[8..16].copy_from_slice(&(data.len() as u64).to_ne_bytes());
        page[16..16 + data.len()].copy_from_slice(&data);
        let mut seen = Vec::new();
        let info = read_page(&formats(), &page, |ts, rec| seen.push((ts, rec.len()))).unwrap();
        let t1 = 1_010;
        let t2 = t1 + (3 << 27) + 5 + 1;
        let t3 = t2 + 2;
        let t4 = 100 + (1 << 27);
        assert_eq!(seen, vec![(t1, 8), (t2, 4), (t3, 12), (t4, 4)]);
        assert_eq!((info.events, info.paddings, info.time_extends), (4, 1, 1));
        assert_eq!((info.time_stamps, info.long_events), (1, 1));
        assert_eq!(info.missed, Missed::None);
    }

    #[test]
    fn reads_missed_event_flags_and_counts() {
        let mut page = vec![0u8; 4096];
        let commit: i64 = (MISSED_EVENTS | MISSED_STORED) as i32 as i64 | 8;
        page[8..16].copy_from_slice(&commit.to_ne_bytes());
        page[16..20].copy_from_slice(&word(1, 0));
        page[24..32].copy_from_slice(&1234u64.to_ne_bytes());
        let info = read_page(&formats(), &page, |_, _| {}).unwrap();
        assert_eq!(info.missed, Missed::Count(1234));
        assert_eq!(info.data_len, 8);
        let commit: i64 = MISSED_EVENTS as i32 as i64 | 8;
        page[8..16].copy_from_slice(&commit.to_ne_bytes());
        let info = read_page(&formats(), &page, |_, _| {}).unwrap();
        assert_eq!(info.missed, Missed::Unknown);
    }

    #[test]
    fn refuses_corrupt_pages() {
        let mut page = vec![0u8; 4096];
        page[8..16].copy_from_slice(&5000u64.to_ne_bytes());
        assert!(read_page(&formats(), &page, |_, _| {}).is_err());
        page[8..16].copy_from_slice(&8u64.to_ne_bytes());
        page[16..20].copy_from_slice(&word(0, 0));
        page[20..24].copy_from_slice(&400u32.to_ne_bytes());
        let e = read_page(&formats(), &page, |_, _| {}).unwrap_err();
        assert!(e.0.contains("past the page end"), "{e}");
        assert!(read_page(&formats(), &page[..10], |_, _| {}).is_err());
    }
}

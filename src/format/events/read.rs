//! Reading events.jsonl: one line at a time, bounded, each line that does not parse counted
//! (damaged, too long, not text, another version's type) rather than a refusal of the file.
//! The writer and the event types are the parent's; both sides must agree line for line.

use super::Event;
use std::io;
use std::path::Path;

/// The longest line of events.jsonl read as an event: a longer line is skipped and counted,
/// never held (its bytes are read past). The longest event jitterlab writes, a spike
/// explanation with its contributors and a kernel stack, takes a few KiB.
pub(crate) const MAX_LINE_BYTES: usize = 1 << 20;

/// What one pass over event files met, line by line.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Scanned {
    /// Lines handed over as events.
    pub events: u64,
    /// Lines of a type the reader did not ask for, counted by their `type` and not parsed.
    pub(crate) passed_over: u64,
    /// Lines that are no event this version reads (another version's type, a line without a
    /// `type`, or not JSON at all): skipped, as they always were.
    pub(crate) unreadable: u64,
    /// Lines of a type this version knows ([`KINDS`]) and the reader asked for that do not
    /// parse as that event (a field of the wrong type, a torn line): skipped, and counted
    /// apart from [`Scanned::unreadable`], for they are damage, not another version's event
    /// (twelfth hostile re-run of issue 39, M12-c: the report's shares silently covered the
    /// rest).
    pub(crate) damaged: u64,
    /// The first damaged line's type.
    pub(crate) damaged_kind: Option<&'static str>,
    /// The `spike_explained` events handed over, when the reader asked for them (None when it
    /// did not): checked against run.json's count by `results::loaded`.
    pub(crate) explanations: Option<u64>,
    /// Lines longer than [`MAX_LINE_BYTES`]: skipped without being held.
    pub(crate) too_long: u64,
    /// Lines that are not UTF-8 text (a flipped byte, a multi-byte character torn by a full
    /// disk): read with each such byte replaced by U+FFFD, so that a line whose JSON is
    /// whole still counts and one that is not is [`Scanned::damaged`] or unreadable like any
    /// other (thirteenth hostile re-run, L13-d: one such byte made `report` refuse the whole
    /// run, and a multi-run report every run, exit 2, while a damaged line of UTF-8 text is
    /// counted and left out).
    pub(crate) not_text: u64,
}

impl Scanned {
    /// Adds another file's counts.
    pub(crate) fn add(&mut self, other: Scanned) {
        self.events += other.events;
        self.passed_over += other.passed_over;
        self.unreadable += other.unreadable;
        self.damaged += other.damaged;
        self.damaged_kind = self.damaged_kind.or(other.damaged_kind);
        self.explanations = match (self.explanations, other.explanations) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
        };
        self.too_long += other.too_long;
        self.not_text += other.not_text;
    }
}

/// Every event type this version reads (`type` in events.jsonl), as [`Event::kind`] names
/// them: a line of one of these that does not parse is damaged ([`Scanned::damaged`]); a line
/// of another type is another version's, skipped without a word.
pub(crate) const KINDS: [&str; 13] = [
    "run_start",
    "run_end",
    "spike_injection",
    "thread_failed",
    "warning",
    "phase_start",
    "phase_end",
    "load_finished",
    "budget_breach",
    "spike_explained",
    "noise_interval",
    "wakeup_summary",
    "action",
];

/// The type of a line that did not parse as an event, when it is one of [`KINDS`].
fn known_kind(peeked: Option<&str>, text: &str) -> Option<&'static str> {
    let kind = match peeked {
        Some(kind) => kind.to_string(),
        // `type` not first (a file written by another tool): the line's JSON, if it is some.
        None => serde_json::from_str::<serde_json::Value>(text)
            .ok()?
            .get("type")?
            .as_str()?
            .to_string(),
    };
    KINDS.iter().copied().find(|k| *k == kind)
}

/// Reads the events of one file into a Vec: for tests and small files. The readers of a
/// result directory stream its events instead (`results::loaded::scan_events`), keeping only
/// what they show, in memory that does not grow with the file.
pub fn read_events(path: &Path) -> io::Result<Vec<Event>> {
    let mut out = Vec::new();
    scan_events(path, crate::input::EVENTS_MAX_BYTES, &|_| true, &mut |e| {
        out.push(e)
    })?;
    Ok(out)
}

/// Streams the events of the file at `path` (a result directory's file: regular, not a link)
/// to `visit`, in file order, `max_bytes` of it at most (a larger file is refused, as one
/// that grows past it while read). One line is held at a time, and at most
/// [`MAX_LINE_BYTES`] of it. A line whose `type` `wants` refuses is counted and not parsed
/// (jitterlab writes `type` first; a line that does not start so is parsed, then asked).
/// Lines of event types this version does not know are skipped. A leading byte-order mark is
/// ignored; a line that is not UTF-8 is read with its bad bytes replaced and counted
/// ([`Scanned::not_text`]), as a damaged line is, not a refusal of the whole file.
pub(crate) fn scan_events(
    path: &Path,
    max_bytes: u64,
    wants: &dyn Fn(&str) -> bool,
    visit: &mut dyn FnMut(Event),
) -> io::Result<Scanned> {
    use crate::input::ReadError;
    use std::io::{BufRead, Read};
    let file = crate::input::open_result_file(path)?;
    if file.metadata()?.len() > max_bytes {
        return Err(ReadError::TooLarge { max_bytes }.into());
    }
    let mut reader = io::BufReader::with_capacity(256 << 10, file.take(max_bytes + 1));
    let mut scanned = Scanned {
        explanations: wants("spike_explained").then_some(0),
        ..Scanned::default()
    };
    // The line being gathered (at most MAX_LINE_BYTES), and whether it outgrew that.
    let mut line: Vec<u8> = Vec::new();
    let mut too_long = false;
    let mut read: u64 = 0;
    let mut first = true;
    loop {
        let buf = reader.fill_buf()?;
        let done = buf.is_empty();
        let (chunk, ended) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (&buf[..i], true),
            None => (buf, done),
        };
        if !too_long {
            if line.len() + chunk.len() > MAX_LINE_BYTES {
                too_long = true;
                line = Vec::new();
            } else {
                line.extend_from_slice(chunk);
            }
        }
        let used = chunk.len() + usize::from(ended && !done);
        reader.consume(used);
        read += used as u64;
        if read > max_bytes {
            return Err(ReadError::TooLarge { max_bytes }.into());
        }
        if !ended {
            continue;
        }
        if too_long {
            scanned.too_long += 1;
        } else if !(done && line.is_empty()) {
            let lossy;
            let mut text = match std::str::from_utf8(&line) {
                Ok(text) => text,
                Err(_) => {
                    scanned.not_text += 1;
                    lossy = String::from_utf8_lossy(&line);
                    &*lossy
                }
            };
            if first {
                text = text.strip_prefix('\u{feff}').unwrap_or(text);
            }
            take_line(
                text.strip_suffix('\r').unwrap_or(text),
                wants,
                visit,
                &mut scanned,
            );
        }
        if done {
            return Ok(scanned);
        }
        first = false;
        too_long = false;
        line.clear();
    }
}

/// A line as an event. The many-per-run types are read straight into their struct when the line
/// starts with their `type` (the struct ignores the `type` key): the same event, without serde
/// buffering the whole line first as it does to find an internally tagged enum's tag.
fn parse(peeked: Option<&str>, text: &str) -> serde_json::Result<Event> {
    match peeked {
        Some("spike_explained") => serde_json::from_str(text).map(Event::SpikeExplained),
        Some("noise_interval") => serde_json::from_str(text).map(Event::NoiseInterval),
        Some("wakeup_summary") => serde_json::from_str(text).map(Event::WakeupSummary),
        Some("action") => serde_json::from_str(text).map(Event::Action),
        _ => serde_json::from_str(text),
    }
}

/// One line of events.jsonl, counted in `scanned` and handed to `visit` when it is a wanted event.
fn take_line(
    text: &str,
    wants: &dyn Fn(&str) -> bool,
    visit: &mut dyn FnMut(Event),
    scanned: &mut Scanned,
) {
    let peeked = text
        .strip_prefix("{\"type\":\"")
        .and_then(|rest| rest.split_once('"'))
        .map(|(kind, _)| kind);
    if peeked.is_some_and(|kind| !wants(kind)) {
        scanned.passed_over += 1;
        return;
    }
    match parse(peeked, text) {
        Ok(e) if wants(e.kind()) => {
            scanned.events += 1;
            if let (Event::SpikeExplained(_), Some(n)) = (&e, &mut scanned.explanations) {
                *n += 1;
            }
            visit(e)
        }
        Ok(_) => scanned.passed_over += 1,
        Err(_) if text.trim().is_empty() => {}
        Err(_) => match known_kind(peeked, text) {
            Some(kind) if !wants(kind) => scanned.passed_over += 1,
            Some(kind) => {
                scanned.damaged += 1;
                scanned.damaged_kind.get_or_insert(kind);
            }
            None => scanned.unreadable += 1,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::super::FILE_NAME;
    use super::*;

    fn scan(bytes: &[u8], wants: &dyn Fn(&str) -> bool) -> io::Result<(Vec<Event>, Scanned)> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        std::fs::write(&path, bytes).unwrap();
        let mut out = Vec::new();
        let scanned = scan_events(&path, 1 << 30, wants, &mut |e| out.push(e))?;
        Ok((out, scanned))
    }

    /// A byte that is not UTF-8 damages its line, not the file (thirteenth hostile re-run,
    /// L13-d: `report` refused the whole run, exit 2): the line is read with it replaced and
    /// counted; a whole JSON line still counts, a torn one is damaged as any other.
    #[test]
    fn a_line_that_is_not_utf8_is_counted_not_fatal() {
        let mut text = b"{\"type\":\"run_start\",\"time_ns\":1}\n".to_vec();
        text.extend_from_slice(b"{\"type\":\"warning\",\"time_ns\":2,\"message\":\"caf\xc3\"}\n");
        text.extend_from_slice(b"{\"type\":\"run_end\",\"time_ns\":3,\"ended\":\"completed\"}\n");
        text.extend_from_slice(b"{\"type\":\"warning\",\"time_ns\":4,\"message\":\"caf\xc3");
        let (events, scanned) = scan(&text, &|_| true).unwrap();
        let times: Vec<u64> = events.iter().map(Event::time_ns).collect();
        assert_eq!(times, [1, 2, 3]);
        match &events[1] {
            Event::Warning { message, .. } => assert_eq!(message, "caf\u{fffd}"),
            other => panic!("{other:?}"),
        }
        assert_eq!((scanned.not_text, scanned.damaged), (2, 1));
    }

    /// Line by line: a BOM, CRLF, a torn last line without a newline, a blank line, another
    /// version's type, a line over the cap (skipped and counted), types not wanted (counted,
    /// not parsed, even when damaged), a line not written `type` first (parsed, then asked).
    #[test]
    fn lines_are_read_one_at_a_time_and_counted() {
        let long = format!(
            "{{\"type\":\"warning\",\"time_ns\":9,\"message\":\"{}\"}}",
            "x".repeat(MAX_LINE_BYTES)
        );
        let text = format!(
            "\u{feff}{{\"type\":\"run_start\",\"time_ns\":1}}\r\n\n{{\"type\":\"future\",\"time_ns\":2}}\n{long}\n{{\"type\":\"action\",damaged\n{{\"time_ns\":3,\"type\":\"warning\",\"message\":\"m\"}}\n{{\"type\":\"run_end\",\"time_ns\":4,\"ended\":\"completed\"}}\n{{\"type\":\"run_e"
        );
        let (events, scanned) = scan(text.as_bytes(), &|_| true).unwrap();
        let times: Vec<u64> = events.iter().map(Event::time_ns).collect();
        assert_eq!(times, [1, 3, 4]);
        assert_eq!(
            scanned,
            Scanned {
                events: 3,
                passed_over: 0,
                // `future` (another version's type) and the torn last line (no type read).
                unreadable: 2,
                // The `action` that does not parse: a known type, damaged.
                damaged: 1,
                damaged_kind: Some("action"),
                explanations: Some(0),
                too_long: 1,
                not_text: 0,
            }
        );
        let (events, scanned) =
            scan(text.as_bytes(), &|k| k != "action" && k != "warning").unwrap();
        assert_eq!(
            events.iter().map(Event::time_ns).collect::<Vec<_>>(),
            [1, 4]
        );
        assert_eq!((scanned.passed_over, scanned.unreadable), (2, 2));
        // A line exactly at the cap is read.
        let warning = |n| {
            format!(
                "{{\"type\":\"warning\",\"time_ns\":9,\"message\":\"{}\"}}",
                "x".repeat(n)
            )
        };
        let at_cap = warning(MAX_LINE_BYTES - warning(0).len());
        assert_eq!(at_cap.len(), MAX_LINE_BYTES);
        let (events, scanned) = scan(format!("{at_cap}\n").as_bytes(), &|_| true).unwrap();
        assert_eq!((events.len(), scanned.too_long), (1, 0));
    }

    /// [`KINDS`] is every type [`Event`] reads: serde's own list of its variants, taken from
    /// the error it gives for an unknown type.
    #[test]
    fn kinds_are_the_events_types() {
        let e = serde_json::from_str::<Event>(r#"{"type":"no_such_type"}"#).unwrap_err();
        let text = e.to_string();
        let listed = text
            .split("expected one of ")
            .nth(1)
            .unwrap_or_else(|| panic!("{text}"));
        let mut serde: Vec<&str> = listed
            .split(", ")
            .map(|k| k.trim_matches(|c: char| c == '`' || !c.is_ascii() || c == ' '))
            .map(|k| k.split('`').next().unwrap())
            .collect();
        let mut kinds = KINDS.to_vec();
        serde.sort_unstable();
        kinds.sort_unstable();
        assert_eq!(serde, kinds, "{text}");
    }

    /// A line of a known type that does not parse is damage, counted apart from another
    /// version's types and lines without a type (the hostile re-run's `"duration_ns": "x"`),
    /// whether `type` comes first or not; one of a type not asked for is passed over unparsed;
    /// the explanations read are counted when asked for.
    #[test]
    fn damaged_lines_of_a_known_type_are_counted_apart() {
        let good = r#"{"type":"spike_explained","time_ns":5,"cpu":0,"due_ns":1,"latency_ns":4,"irq_latency_ns":null,"thread_latency_ns":null,"verdict":"v","contributors":[{"kind":"task","name":"a","pid":1,"policy":null,"prio":null,"duration_ns":3}]}"#;
        let bad = good.replace(r#""duration_ns":3"#, r#""duration_ns":"x""#);
        let bad_late_type = format!(
            "{{\"time_ns\":6,{}",
            bad.replace(r#""time_ns":5,"#, "").trim_start_matches('{')
        );
        assert!(!bad_late_type.starts_with("{\"type\""), "{bad_late_type}");
        let text = format!(
            "{good}\n{bad}\n{bad_late_type}\n{{\"type\":\"future\",\"x\":1}}\nnot json\n{{\"type\":\"warning\",\"time_ns\":\"x\"}}\n"
        );
        let (events, scanned) = scan(text.as_bytes(), &|_| true).unwrap();
        assert_eq!(events.len(), 1);
        assert_eq!(
            (
                scanned.damaged,
                scanned.damaged_kind,
                scanned.unreadable,
                scanned.explanations
            ),
            (3, Some("spike_explained"), 2, Some(1))
        );
        let (_, scanned) = scan(text.as_bytes(), &|k| k == "warning").unwrap();
        assert_eq!(
            (
                scanned.damaged,
                scanned.damaged_kind,
                scanned.passed_over,
                scanned.explanations
            ),
            (1, Some("warning"), 4, None)
        );
    }

    #[test]
    fn a_file_too_large_is_refused_and_a_line_not_utf8_counted() {
        // A byte that is not UTF-8 damages its line, not the file (thirteenth hostile re-run,
        // L13-d: the file was refused whole): the line, no JSON, is unreadable and counted.
        let (events, scanned) = scan(
            b"{\"type\":\"run_start\",\"time_ns\":1}\nab\xffc\n",
            &|_| true,
        )
        .unwrap();
        assert_eq!(events.len(), 1);
        assert_eq!((scanned.not_text, scanned.unreadable), (1, 1));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        std::fs::write(&path, "{}\n{}\n").unwrap();
        let e = scan_events(&path, 5, &|_| true, &mut |_| {}).unwrap_err();
        assert!(e.to_string().contains("larger than 5 bytes"), "{e}");
    }

    /// The many-per-run types read straight into their struct are the events the enum reads.
    #[test]
    fn the_direct_reading_gives_the_enums_event() {
        for line in [
            r#"{"type":"spike_explained","time_ns":5,"cpu":0,"due_ns":1,"latency_ns":4,"irq_latency_ns":null,"thread_latency_ns":null,"verdict":"v","contributors":[{"kind":"task","name":"x","pid":9,"policy":"FIFO","prio":99,"duration_ns":3}]}"#,
            r#"{"type":"noise_interval","time_ns":5,"cpu":1,"offset_ns":0,"length_ns":10,"gaps":1,"noise_ns":2}"#,
            r#"{"type":"action","time_ns":42,"trigger":"threshold","action":"exec:true","suppressed_before":0,"refused_before":0,"outcome":"ok","pid":21657,"program":"exited","exit_code":0,"detail":"pid 21657 exited with 0"}"#,
        ] {
            let kind = line[9..].split('"').next();
            let direct = parse(kind, line).unwrap();
            assert_eq!(direct, serde_json::from_str::<Event>(line).unwrap());
            assert_eq!(Some(direct.kind()), kind);
        }
    }
}

//! events.jsonl: one JSON object per line, in the order things happened. Every event carries
//! `type` and `time_ns` (CLOCK_MONOTONIC). Lines are written through at once: the log must
//! survive a crash of jitterlab.

use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;

pub const FILE_NAME: &str = "events.jsonl";

/// Everything events.jsonl can hold. Later issues add load phases, budget breaches and spike
/// attributions here.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// Measurement starts: the first wakeups are due at `time_ns`.
    RunStart { time_ns: u64 },
    /// The run ended (`completed`, `interrupted` or `failed`).
    RunEnd { time_ns: u64, ended: String },
    /// One injection of the spike load: it held `cpu` from `start_ns` to `end_ns`.
    SpikeInjection {
        time_ns: u64,
        cpu: usize,
        index: u64,
        due_ns: u64,
        start_ns: u64,
        end_ns: u64,
    },
    /// A measuring thread stopped with an error.
    ThreadFailed {
        time_ns: u64,
        cpu: usize,
        message: String,
    },
    /// Something the reader of the results must know.
    Warning { time_ns: u64, message: String },
}

/// Appends events to events.jsonl.
pub struct EventLog {
    file: File,
}

impl EventLog {
    pub fn create(path: &Path) -> io::Result<Self> {
        Ok(EventLog {
            file: OpenOptions::new().create(true).append(true).open(path)?,
        })
    }

    pub fn write(&mut self, event: &Event) -> io::Result<()> {
        let mut line = serde_json::to_vec(event).map_err(io::Error::other)?;
        line.push(b'\n');
        self.file.write_all(&line)
    }
}

/// Reads events.jsonl; lines of event types this version does not know are skipped.
pub fn read_events(path: &Path) -> io::Result<Vec<Event>> {
    let text = std::fs::read_to_string(path)?;
    Ok(text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect())
}

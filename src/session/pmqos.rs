//! PM QoS: holding /dev/cpu_dma_latency keeps CPUs out of idle states whose exit latency is
//! above the value, the largest source of idle wakeup latency on most hardware. The request
//! lasts exactly as long as the file stays open, so the kernel itself undoes it when jitterlab
//! exits, however it exits.
//!
//! PM QoS is the whole machine's: the value in force is the lowest request of any process. A
//! run that leaves it alone (`--pm-qos off`, a tune's baseline arm) beside another run (which
//! holds 0 by default), or beside `tuned`'s `force_latency` or a real cyclictest, measures with
//! that process's value in force (seventh hostile re-run, S1: such a run recorded "PM QoS: left
//! alone", and nothing else). So every run reads the value in force (the device's read: the
//! kernel's aggregate) when it takes its own request, every [`READ_EVERY_NS`] from the drain
//! side, and at its end; when it is below the run's own request (or, left alone, below
//! [`NO_REQUEST_US`]), the processes that hold the device open are found in /proc and named,
//! in run.json (`environment.pm_qos`: `in_force_us`, `held_by_others`) and in a warning.

use super::open_files::{Openers, Search};
use crate::format::run_record::{PmQosHolderRecord, PmQosRecord};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{FileExt, FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

pub(crate) const DEVICE: &str = "/dev/cpu_dma_latency";

/// The value in force when no process asks for any: the kernel's
/// `PM_QOS_CPU_LATENCY_DEFAULT_VALUE` (2000 s, in us).
pub(crate) const NO_REQUEST_US: u32 = 2_000_000_000;

/// How often a run reads the value in force, ns (from the drain side's poll: a read of 4 bytes).
pub(crate) const READ_EVERY_NS: u64 = 1_000_000_000;

/// At most this many other holders are named (a machine where hundreds of processes hold the
/// device says so in the first few).
const MAX_HOLDERS: usize = 8;

/// How long one search of /proc for the device's holders may take (open_files.rs): it runs
/// on the drain side, whose stall delays draining and a stop request.
const HOLDER_SEARCH_BUDGET: std::time::Duration = std::time::Duration::from_millis(100);

/// An open PM QoS request; dropping it (or dying) releases it.
pub(crate) struct PmQosHold {
    /// The request, when one is held.
    file: Option<File>,
    /// The lowest value this run does not change the machine's: its own request, or
    /// [`NO_REQUEST_US`].
    own_us: u32,
    /// When the value in force is read next (CLOCK_MONOTONIC, ns).
    next_read_ns: u64,
    /// The lowest value in force the warnings have named so far.
    warned_us: Option<u32>,
    /// The device (a fixture file in the tests) and where its holders are looked for
    /// (`/proc`; a fixture tree in the tests).
    device: PathBuf,
    proc: PathBuf,
    pub record: PmQosRecord,
}

impl PmQosHold {
    /// Gives the request back now (the record stays, for run.json), after a last read of the
    /// value in force: [`PmQosHold::news`] then says what the end found.
    pub(crate) fn release(&mut self) {
        self.read_in_force();
        self.file = None;
    }

    /// Reads the value in force when it is due (`now_ns`, CLOCK_MONOTONIC): a pread of 4 bytes
    /// every [`READ_EVERY_NS`]; /proc is searched only when a value lower than any before is
    /// seen.
    pub(crate) fn watch(&mut self, now_ns: u64) {
        if now_ns < self.next_read_ns {
            return;
        }
        self.next_read_ns = now_ns.saturating_add(READ_EVERY_NS);
        self.read_in_force();
    }

    /// A warning when the value in force has gone below this run's own request since the last
    /// one said (once per lower value), naming its holders; None otherwise.
    pub(crate) fn news(&mut self) -> Option<String> {
        let lowest = self.record.in_force_us?;
        if lowest >= self.own_us || self.warned_us.is_some_and(|w| w <= lowest) {
            return None;
        }
        self.warned_us = Some(lowest);
        Some(warning(lowest, self.record.held_us, &self.record))
    }

    fn read_in_force(&mut self) {
        let mut value = [0u8; 4];
        let read = match &self.file {
            Some(file) => file.read_exact_at(&mut value, 0),
            // Left alone: the device opened to read, and closed at once. An open is a request
            // at the kernel's default value, which changes nothing, but another run searching
            // /proc for holders meanwhile would name this one (a user other than root cannot
            // open it, and is told nothing: `in_force_us` stays null).
            None => OpenOptions::new()
                .read(true)
                .open(&self.device)
                .and_then(|f| f.read_exact_at(&mut value, 0)),
        };
        if read.is_err() {
            return;
        }
        let now = i32::from_ne_bytes(value).max(0) as u32;
        let lowest = self.record.in_force_us.map_or(now, |l| l.min(now));
        let lower = self.record.in_force_us.is_none_or(|l| now < l);
        self.record.in_force_us = Some(lowest);
        if lower && now < self.own_us && self.record.held_by_others.len() < MAX_HOLDERS {
            let mut search = Search::new(HOLDER_SEARCH_BUDGET);
            for h in holders(&self.proc, &self.device, std::process::id(), &mut search) {
                if self.record.held_by_others.len() < MAX_HOLDERS
                    && !self.record.held_by_others.iter().any(|o| o.pid == h.pid)
                {
                    self.record.held_by_others.push(h);
                }
            }
            self.record.holders_not_all_searched |= search.cut_short();
        }
    }
}

/// Holds /dev/cpu_dma_latency at `us` for as long as the result lives; `None` leaves it alone.
/// A failure is recorded (and warned about by the caller), not fatal: the measurement is still
/// valid, just of a system allowed deeper idle states. Either way the value in force is read
/// (see the module's documentation).
pub(crate) fn hold(us: Option<u32>) -> PmQosHold {
    hold_at(Path::new(DEVICE), Path::new("/proc"), us)
}

fn hold_at(device: &Path, proc: &Path, us: Option<u32>) -> PmQosHold {
    let mut hold = PmQosHold {
        file: None,
        own_us: us.unwrap_or(NO_REQUEST_US),
        next_read_ns: 0,
        warned_us: None,
        device: device.to_path_buf(),
        proc: proc.to_path_buf(),
        record: PmQosRecord::default(),
    };
    let Some(us) = us else {
        hold.read_in_force();
        return hold;
    };
    let attempt = OpenOptions::new()
        .read(true)
        .write(true)
        .open(device)
        .and_then(|mut f| {
            let mut current = [0u8; 4];
            if f.read_exact_at(&mut current, 0).is_ok() {
                hold.record.previous_us = Some(i32::from_ne_bytes(current).max(0) as u32);
            }
            f.write_all(&(us as i32).to_ne_bytes())?;
            Ok(f)
        });
    match attempt {
        Ok(file) => {
            hold.file = Some(file);
            hold.record.held_us = Some(us);
            hold.read_in_force();
        }
        Err(e) => {
            hold.record.error = Some(format!(
                "cannot hold {DEVICE} at {us} us: {e}; idle states stay enabled (run as root, or pass --pm-qos off to silence this)"
            ));
            // Not held: what the others ask for is what is in force.
            hold.own_us = NO_REQUEST_US;
        }
    }
    hold
}

/// A PM QoS request of another process in force now, in words (`PM QoS 0 us is in force, held
/// by ...`); None when none is, or when the device cannot be read (a user other than root).
pub(crate) fn held_elsewhere() -> Option<String> {
    let hold = hold(None);
    let in_force = hold.record.in_force_us.filter(|&us| us < NO_REQUEST_US)?;
    Some(format!(
        "PM QoS {in_force} us is in force; {}",
        holders_text(&hold.record)
    ))
}

/// Who held the device open, for a message. The device does not say which open holds which
/// value (tenth hostile re-run, L10-a), so they are named as holding requests, not as holding
/// the value in force.
fn holders_text(record: &PmQosRecord) -> String {
    let others = &record.held_by_others;
    let named = others
        .iter()
        .map(|o| o.text.clone())
        .collect::<Vec<_>>()
        .join("; ");
    match (others.is_empty(), record.holders_not_all_searched) {
        (true, false) => {
            "held by a process this user cannot see (run as root to have it named)".to_string()
        }
        (true, true) => format!(
            "held by a process not found: the search of /proc for the processes holding {DEVICE} open stopped after {} ms",
            HOLDER_SEARCH_BUDGET.as_millis()
        ),
        (false, false) => format!(
            "processes holding requests on {DEVICE} when it was seen (each one's value is not known): {named}"
        ),
        (false, true) => format!(
            "processes holding requests on {DEVICE} when it was seen (each one's value is not known): {named}; the search of /proc for them stopped after {} ms, so others may hold requests too",
            HOLDER_SEARCH_BUDGET.as_millis()
        ),
    }
}

/// The warning of a run measured with `in_force` in force, below what it asked for (`held`,
/// None: left alone).
fn warning(in_force: u32, held: Option<u32>, record: &PmQosRecord) -> String {
    let asked = match held {
        Some(us) => format!("this run held {us} us"),
        None => "this run left it alone".to_string(),
    };
    let by = holders_text(record);
    format!(
        "PM QoS {in_force} us was in force during this run ({DEVICE}; {asked}); {by}: PM QoS is the whole machine's, so every CPU was kept out of idle states slower than {in_force} us to exit, and this run's latencies were measured so; measure when it is not held, or hold the same value in every run compared"
    )
}

/// The processes other than `me` that hold `device` (/dev/cpu_dma_latency) open (each open is
/// a PM QoS request), as /proc names them, jitterlab runs first; looked for by `search`, among
/// the processes of the users who may open the device (root's alone for its usual 0600).
fn holders(proc: &Path, device: &Path, me: u32, search: &mut Search) -> Vec<PmQosHolderRecord> {
    let Ok(device) = std::fs::metadata(device) else {
        return Vec::new();
    };
    // A device is known by its number (any node of it), a fixture file by its inode.
    let same = |m: &std::fs::Metadata| match device.file_type().is_char_device() {
        true => m.file_type().is_char_device() && m.rdev() == device.rdev(),
        false => m.dev() == device.dev() && m.ino() == device.ino(),
    };
    let is_open =
        |_: &Path, fd: &std::fs::DirEntry| std::fs::metadata(fd.path()).is_ok_and(|m| same(&m));
    let openers = Openers::of(&device, 0o6);
    let mut found: Vec<PmQosHolderRecord> = search
        .processes_with(proc, None, openers, Some(me), &is_open)
        .into_iter()
        .map(|pid| holder(proc, pid))
        .collect();
    found.sort_by_key(|h| (!h.jitterlab, h.pid));
    found
}

/// The holder `pid` for run.json: its command line, and for a jitterlab run the CPUs it
/// measures (the CPU locks it holds).
fn holder(proc: &Path, pid: u32) -> PmQosHolderRecord {
    let p = super::cpulock::identify(proc, pid);
    let cpus = match p.jitterlab || p.named_jitterlab {
        true => super::cpulock::cpus_with_locks_open(proc, pid),
        false => Vec::new(),
    };
    let what = match (p.jitterlab || p.named_jitterlab, cpus.is_empty()) {
        (true, false) => format!(
            "another jitterlab measuring CPUs {}",
            crate::cpulist::format_cpu_list(&cpus)
        ),
        (true, true) => "another jitterlab".to_string(),
        (false, _) => "a process that is not jitterlab".to_string(),
    };
    PmQosHolderRecord {
        pid,
        uid: p.uid,
        command: p.command.clone(),
        jitterlab: p.jitterlab,
        cpus,
        text: format!("{what}: pid {pid} of {}, '{}'", p.user, p.command),
    }
}

#[cfg(test)]
mod tests;

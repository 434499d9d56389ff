//! PM QoS: holding /dev/cpu_dma_latency keeps CPUs out of idle states whose exit latency is
//! above the value, the largest source of idle wakeup latency on most hardware. The request
//! lasts exactly as long as the file stays open, so the kernel itself undoes it when jitterlab
//! exits, however it exits.

use crate::format::run_record::PmQosRecord;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};

pub(crate) const DEVICE: &str = "/dev/cpu_dma_latency";

/// An open PM QoS request; dropping it (or dying) releases it.
pub(crate) struct PmQosHold {
    _file: Option<File>,
    pub record: PmQosRecord,
}

impl PmQosHold {
    /// Gives the request back now (the record stays, for run.json).
    pub(crate) fn release(&mut self) {
        self._file = None;
    }
}

/// Holds /dev/cpu_dma_latency at `us` for as long as the result lives; `None` leaves it alone.
/// A failure is recorded (and warned about by the caller), not fatal: the measurement is still
/// valid, just of a system allowed deeper idle states.
pub(crate) fn hold(us: Option<u32>) -> PmQosHold {
    let Some(us) = us else {
        return PmQosHold {
            _file: None,
            record: PmQosRecord {
                held_us: None,
                previous_us: None,
                error: None,
            },
        };
    };
    let mut previous_us = None;
    let attempt = OpenOptions::new()
        .read(true)
        .write(true)
        .open(DEVICE)
        .and_then(|mut f| {
            let mut current = [0u8; 4];
            if f.read_exact(&mut current).is_ok() {
                previous_us = Some(i32::from_ne_bytes(current).max(0) as u32);
            }
            f.write_all(&(us as i32).to_ne_bytes())?;
            Ok(f)
        });
    match attempt {
        Ok(file) => PmQosHold {
            _file: Some(file),
            record: PmQosRecord {
                held_us: Some(us),
                previous_us,
                error: None,
            },
        },
        Err(e) => PmQosHold {
            _file: None,
            record: PmQosRecord {
                held_us: None,
                previous_us,
                error: Some(format!(
                    "cannot hold {DEVICE} at {us} us: {e}; idle states stay enabled (run as root, or pass --pm-qos off to silence this)"
                )),
            },
        },
    }
}

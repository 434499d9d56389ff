//! `jitterlab doctor`: is this system ready for real-time work? The checks and the snapshot
//! are in `doctor/`; this is the command around them.

use crate::cli::DoctorArgs;
use crate::cpulist::{format_cpu_list, online_cpus, parse_cpu_list};
use crate::doctor::render;
use crate::doctor::snapshot;
use crate::error::{Failure, Result};

/// Runs `jitterlab doctor`; prints the grouped table (or JSON with `json`) and returns the
/// exit code: 0 when no check failed, 1 when some did. Bad `--cpus` is a usage error (exit 2);
/// a system that cannot be inspected at all (no /proc or /sys) is a system error (exit 3).
pub fn run(args: &DoctorArgs) -> Result<i32> {
    let (json, cpus) = (args.json, args.cpus.as_deref());
    let online = online_cpus().map_err(|e| {
        Failure::system(format!(
            "cannot inspect the system: {e}; doctor needs sysfs at /sys and procfs at /proc \
             (in a container or chroot, mount them: `mount -t sysfs sysfs /sys; mount -t proc proc /proc`)"
        ))
    })?;
    if let Err(e) = std::fs::read_to_string("/proc/version") {
        return Err(Failure::system(format!(
            "cannot inspect the system: cannot read /proc/version: {e}; mount procfs at /proc (`mount -t proc proc /proc`)"
        )));
    }
    let measured = match cpus {
        None => online.clone(),
        Some(list) => {
            let cpus = parse_cpu_list(list).map_err(|e| Failure::usage(format!("--cpus: {e}")))?;
            let offline: Vec<usize> = cpus
                .iter()
                .copied()
                .filter(|c| !online.contains(c))
                .collect();
            if !offline.is_empty() {
                return Err(Failure::usage(format!(
                    "--cpus {list}: CPU {} not online; the online CPUs are {}",
                    format_cpu_list(&offline),
                    format_cpu_list(&online)
                )));
            }
            cpus
        }
    };
    let snap = snapshot(&measured);
    if json {
        crate::stdout::line(&render::json(&snap))?;
    } else {
        crate::stdout::write(&render::table(&snap))?;
    }
    Ok(if snap.any_fail() { 1 } else { 0 })
}

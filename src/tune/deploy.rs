//! The files people deploy, for the worthwhile fixes of a tune: a sysctl.d file, a script of
//! the other writes (interrupt affinity, sysfs), a systemd unit that runs it at boot, and a
//! tuned profile that does both. Written into the tune directory's `deploy/`, never applied:
//! deciding to change a production machine is the user's.

use super::TunePlan;
use super::fixes::{Change, PlanChange};
use crate::error::{OrFailure, Result};
use crate::results::ResultDir;

/// The deploy directory's name in the tune directory.
pub(crate) const DIR: &str = "deploy";
pub(crate) const SYSCTL: &str = "99-jitterlab-tune.conf";
pub(crate) const SCRIPT: &str = "jitterlab-tune.sh";
pub(crate) const UNIT: &str = "jitterlab-tune.service";
pub(crate) const TUNED: &str = "tuned.conf";

/// The files' texts for the fixes at `worthwhile` (indexes into the plan's measured fixes):
/// (name, text) pairs; empty when there is nothing worth deploying.
pub(crate) fn files(plan: &TunePlan, worthwhile: &[usize]) -> Vec<(&'static str, String)> {
    if worthwhile.is_empty() {
        return Vec::new();
    }
    let mut sysctl = String::from(
        "# Written by `jitterlab tune`: the kernel settings it measured as worth applying here.\n# Install: copy to /etc/sysctl.d/ and run `sysctl --system`.\n",
    );
    let mut script = String::from(
        "#!/bin/sh\n# Written by `jitterlab tune`: the settings it measured as worth applying here\n# that are not sysctls. Run at boot (jitterlab-tune.service) or from tuned.conf.\nset -e\n",
    );
    let mut tuned_sysctl = String::new();
    let mut force_latency = false;
    let mut notes = Vec::new();
    for &i in worthwhile {
        let m = &plan.measured[i];
        match &m.change {
            Change::Settings(settings) => {
                let mut in_script = Vec::new();
                for s in settings {
                    match s.file.strip_prefix("proc/sys/") {
                        Some(key) => {
                            let line = format!("{} = {}\n", key.replace('/', "."), s.value);
                            sysctl.push_str(&format!("# {}\n{line}", m.fix.name));
                            tuned_sysctl.push_str(&line);
                        }
                        None => in_script.push(format!(
                            "echo {} > /{}{}\n",
                            s.value,
                            s.file,
                            // An interrupt whose affinity is fixed refuses it: not an error.
                            if s.may_refuse { " || true" } else { "" }
                        )),
                    }
                }
                if !in_script.is_empty() {
                    script.push_str(&format!("# {}: {}\n", m.fix.name, m.fix.what));
                    in_script.iter().for_each(|l| script.push_str(l));
                }
            }
            Change::Plan(PlanChange::PmQos) => force_latency = true,
            Change::Plan(PlanChange::CpusetPartition) => notes.push(
                "# cpuset: give the real-time application an isolated cgroup v2 partition of its CPUs\n# (systemd: AllowedCPUs= with cpuset.cpus.partition=isolated), as `--cpuset-partition` did.\n",
            ),
        }
    }
    let mut tuned = String::from(
        "# Written by `jitterlab tune`: a tuned profile of the fixes it measured as worth applying.\n# Install: mkdir /etc/tuned/jitterlab-tune, copy this file and jitterlab-tune.sh there,\n# `tuned-adm profile jitterlab-tune`.\n[main]\nsummary=jitterlab tune: fixes measured as worthwhile\n",
    );
    if !tuned_sysctl.is_empty() {
        tuned.push_str("\n[sysctl]\n");
        tuned.push_str(&tuned_sysctl);
    }
    if force_latency {
        tuned.push_str(
            "\n[cpu]\n# PM QoS 0 us: the CPUs kept out of deep idle states.\nforce_latency=0\n",
        );
        script.push_str("# pm-qos: hold /dev/cpu_dma_latency open with 0 in the application, or use tuned's force_latency=0.\n");
    }
    tuned.push_str("\n[script]\nscript=${i:PROFILE_DIR}/jitterlab-tune.sh\n");
    notes.iter().for_each(|n| script.push_str(n));
    let unit = "# Written by `jitterlab tune`. Install: copy jitterlab-tune.sh to /usr/local/sbin/ (chmod 755)\n# and this file to /etc/systemd/system/, then `systemctl enable --now jitterlab-tune`.\n[Unit]\nDescription=Real-time settings measured as worthwhile by jitterlab tune\nAfter=sysinit.target\n\n[Service]\nType=oneshot\nExecStart=/usr/local/sbin/jitterlab-tune.sh\nRemainAfterExit=yes\n\n[Install]\nWantedBy=multi-user.target\n".to_string();
    vec![
        (SYSCTL, sysctl),
        (SCRIPT, script),
        (UNIT, unit),
        (TUNED, tuned),
    ]
}

/// Writes [`files`] into `dir`'s `deploy/`; the paths written, relative to `dir`.
pub(crate) fn write(dir: &ResultDir, plan: &TunePlan, worthwhile: &[usize]) -> Result<Vec<String>> {
    let files = files(plan, worthwhile);
    if files.is_empty() {
        return Ok(Vec::new());
    }
    let deploy = dir
        .subdir(DIR)
        .or_run(|| format!("cannot make {}", dir.file(DIR).display()))?;
    let mut written = Vec::new();
    for (name, text) in files {
        deploy
            .replace_file(name, text.as_bytes())
            .or_run(|| format!("cannot write {}", deploy.file(name).display()))?;
        written.push(format!("{DIR}/{name}"));
    }
    Ok(written)
}

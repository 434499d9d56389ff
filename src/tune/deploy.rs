//! The files people deploy, for the worthwhile fixes of a tune: a sysctl.d file, a script of
//! the other writes (interrupt affinity, sysfs), a systemd unit that runs it at boot, and a
//! tuned profile that does both. Written into the tune directory's `deploy/`, never applied:
//! deciding to change a production machine is the user's.
//!
//! The script finds each interrupt by its handler's name, not its number (twelfth hostile
//! re-run, L12-d: a number is given when the device is probed and can name another device
//! after a reboot), sets the default affinity of interrupts requested later, and sets back on
//! `stop` what its `start` changed (tuned runs its `[script]` with both).

use super::fixes::{Change, PlanChange};
use super::{Measured, TunePlan};
use crate::error::{OrFailure, Result};
use crate::results::ResultDir;
use crate::session::settings::Setting;
use std::path::Path;

/// The deploy directory's name in the tune directory.
pub(crate) const DIR: &str = "deploy";
pub(crate) const SYSCTL: &str = "99-jitterlab-tune.conf";
pub(crate) const SCRIPT: &str = "jitterlab-tune.sh";
pub(crate) const UNIT: &str = "jitterlab-tune.service";
pub(crate) const TUNED: &str = "tuned.conf";

/// The shell functions of the script: `put` (a file's value: written and its old value saved,
/// or checked), `pin` (the interrupts with a handler of a name to CPUs), and the `stop` that
/// writes the saved values back. Before the settings' lines; the script ends with
/// `exit $failed`.
const SCRIPT_HEAD: &str = r#"#!/bin/sh
# Written by `jitterlab tune`: the settings it measured as worth applying here that are not
# sysctls (those are in 99-jitterlab-tune.conf and tuned.conf's [sysctl]).
#   jitterlab-tune.sh [start]  applies them, saving each file's value first (in $saved)
#   jitterlab-tune.sh stop     writes the saved values back: what tuned's [script] runs when
#                              the profile is left, and `systemctl stop jitterlab-tune`
#   jitterlab-tune.sh verify   exits 1 when one is not in force (`tuned-adm verify`)
# Interrupts are found by their handlers' names (the last column of /proc/interrupts; a
# directory of /proc/irq/N/), not by number: a number is given when the device is probed and
# can name another device after a reboot, a kernel update or a card added. An interrupt whose
# name is not found is left alone, with a message. Interrupts requested later (a module
# loaded, a device plugged in) take /proc/irq/default_smp_affinity, set here too.
# JITTERLAB_TUNE_ROOT: a directory standing for / (a test on a copy of /proc and /sys);
# empty on a real system.
set -u
root=${JITTERLAB_TUNE_ROOT:-}
saved=$root/run/jitterlab-tune.saved
what=${1:-start}
failed=0

say() { echo "jitterlab-tune.sh: $*" >&2; }

# value FILE: its value; a choice file's selected word (madvise of `always [madvise] never`).
value() { sed -n '1{s/.*\[\(.*\)\].*/\1/;p;}' "$root$1"; }

# same FILE A B: A and B are the same value of FILE (a hex mask's commas and leading zeros
# aside).
same() {
    case $1 in
    *_list) [ "$2" = "$3" ] ;;
    *mask | *smp_affinity) [ "$(echo "$2" | tr -d , | sed 's/^0*//')" = "$(echo "$3" | tr -d , | sed 's/^0*//')" ] ;;
    *) [ "$2" = "$3" ] ;;
    esac
}

# put FILE VALUE [may-refuse]: start writes VALUE and saves FILE's value before (once: a
# second start keeps the first's); verify checks it. may-refuse: the kernel may refuse it
# without the change being wrong (a per-CPU or managed interrupt keeps its own affinity).
put() {
    if [ ! -e "$root$1" ]; then
        say "$1 does not exist here: left out"
        return
    fi
    now=$(value "$1")
    if [ "$what" = verify ]; then
        same "$1" "$now" "$2" && return
        say "$1 is $now, not $2"
        [ "${3:-}" = may-refuse ] || failed=1
        return
    fi
    if ! echo "$2" 2>/dev/null >"$root$1"; then
        if [ "${3:-}" = may-refuse ]; then
            say "$1: the kernel keeps $now (a per-CPU or managed interrupt)"
        else
            say "$1: the kernel refused $2: left $now"
            failed=1
        fi
        return
    fi
    awk -v f="$1" '$1 == f { found = 1 } END { exit !found }' "$saved" 2>/dev/null ||
        printf '%s %s\n' "$1" "$now" >>"$saved" ||
        say "cannot save $1's value $now in $saved: stop will not set it back"
}

# pin NAME CPUS: every interrupt with a handler named NAME to CPUS.
pin() {
    found=
    for dir in "$root"/proc/irq/*/; do
        [ -d "$dir$1" ] || continue
        irq=${dir%/}
        irq=${irq##*/}
        found=1
        put "/proc/irq/$irq/smp_affinity_list" "$2" may-refuse
    done
    [ -n "$found" ] || say "no interrupt has a handler named '$1' now (its device gone, renamed or not probed yet): not moved"
}

case $what in
start | verify) ;;
stop)
    if [ ! -f "$saved" ]; then
        say "stop: nothing saved in $saved: nothing to set back"
        exit 0
    fi
    while read -r file old; do
        echo "$old" 2>/dev/null >"$root$file" || {
            say "stop: $file refused its old value $old"
            failed=1
        }
    done <"$saved"
    rm -f "$saved"
    exit $failed
    ;;
*)
    say "usage: jitterlab-tune.sh [start | stop | verify]"
    exit 2
    ;;
esac
"#;

/// An interrupt's handlers' names, sorted: the directories of `/proc/irq/<irq>/` under `root`,
/// one per handler registered with a name (the names `/proc/interrupts` lists after the
/// interrupt's chip and type). Empty when it has none or cannot be read.
fn handler_names(root: &Path, irq: &str) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(root.join("proc/irq").join(irq)) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    names.sort();
    names
}

/// `text` as one word of sh, single-quoted.
fn quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// `cpus` as the hex mask `/proc/irq/default_smp_affinity` takes: 32-bit words, most
/// significant first, separated by commas (`1`, `3`, `1,00000000` for CPU 32).
fn hex_mask(cpus: &[usize]) -> String {
    let words = cpus.iter().max().map_or(1, |&m| m / 32 + 1);
    let mut w = vec![0u32; words];
    for &c in cpus {
        w[c / 32] |= 1 << (c % 32);
    }
    let mut out = format!("{:x}", w[words - 1]);
    for x in w[..words - 1].iter().rev() {
        out.push_str(&format!(",{x:08x}"));
    }
    out
}

/// The interrupt's number of an interrupt's affinity file (`proc/irq/25/smp_affinity_list`).
fn irq_of(file: &str) -> Option<&str> {
    file.strip_prefix("proc/irq/")?
        .strip_suffix("/smp_affinity_list")
        .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// The script's lines for the interrupts moved by a fix's `settings` (theirs only), their
/// handlers' names read under `root`: one `pin` per name, the default affinity of interrupts
/// requested later, and a comment for each interrupt that has no name to find it by.
fn irq_lines(root: &Path, settings: &[&Setting]) -> String {
    let mut out = String::new();
    let mut pinned: Vec<(String, String)> = Vec::new();
    let mut targets: Vec<&str> = Vec::new();
    for s in settings {
        let Some(irq) = irq_of(&s.file) else { continue };
        if !targets.contains(&s.value.as_str()) {
            targets.push(&s.value);
        }
        let names = handler_names(root, irq);
        // The first name of a shared interrupt names it; a name no line of sh can carry is
        // none.
        match names.iter().find(|n| !n.chars().any(char::is_control)) {
            Some(name) if pinned.iter().any(|(n, v)| n == name && *v == s.value) => {
                out.push_str(&format!(
                    "# (interrupt {irq} at the tune: its handler {} is pinned above)\n",
                    quoted(name)
                ));
            }
            Some(name) => {
                // A name with a line break would end the comment and run as sh: left out.
                let printable: Vec<&str> = names
                    .iter()
                    .filter(|n| !n.chars().any(char::is_control))
                    .map(String::as_str)
                    .collect();
                out.push_str(&format!(
                    "# interrupt {irq} at the tune ({}):\npin {} {}\n",
                    printable.join(", "),
                    quoted(name),
                    s.value
                ));
                pinned.push((name.clone(), s.value.clone()));
            }
            None => out.push_str(&format!(
                "# interrupt {irq} at the tune had no handler's name to find it by after a reboot: not moved here\n"
            )),
        }
    }
    // Every moved interrupt went to the same CPUs (the ones not measured): later ones too.
    if let [target] = targets[..]
        && let Ok(cpus) = crate::cpulist::parse_cpu_list(target)
    {
        out.push_str(&format!(
            "# interrupts requested after this script ran: CPUs {target}\nput /proc/irq/default_smp_affinity {}\n",
            hex_mask(&cpus)
        ));
    }
    out
}

/// The files' texts for the fixes `worthwhile`, the handlers' names of the interrupts they move
/// read under `root` (`/`): (name, text) pairs; empty when there is nothing worth deploying.
pub(crate) fn files(worthwhile: &[&Measured], root: &Path) -> Vec<(&'static str, String)> {
    if worthwhile.is_empty() {
        return Vec::new();
    }
    let mut sysctl = String::from(
        "# Written by `jitterlab tune`: the kernel settings it measured as worth applying here.\n# Install: copy to /etc/sysctl.d/ and run `sysctl --system`.\n",
    );
    let mut script = String::from(SCRIPT_HEAD);
    let mut tuned_sysctl = String::new();
    let mut force_latency = false;
    let mut notes = Vec::new();
    for m in worthwhile {
        match &m.change {
            Change::Settings(settings) => {
                let mut in_script = String::new();
                let mut irqs = Vec::new();
                for s in settings {
                    match s.file.strip_prefix("proc/sys/") {
                        Some(key) => {
                            let line = format!("{} = {}\n", key.replace('/', "."), s.value);
                            sysctl.push_str(&format!("# {}\n{line}", m.fix.name));
                            tuned_sysctl.push_str(&line);
                        }
                        None if irq_of(&s.file).is_some() => irqs.push(s),
                        None => in_script.push_str(&format!(
                            "put /{} {}{}\n",
                            s.file,
                            quoted(&s.value),
                            if s.may_refuse { " may-refuse" } else { "" }
                        )),
                    }
                }
                if !irqs.is_empty() {
                    in_script.push_str(&irq_lines(root, &irqs));
                }
                if !in_script.is_empty() {
                    script.push_str(&format!("\n# {}: {}\n{in_script}", m.fix.name, m.fix.what));
                }
            }
            Change::Plan(PlanChange::PmQos) => force_latency = true,
            Change::Plan(PlanChange::CpusetPartition) => notes.push(
                "# cpuset: give the real-time application an isolated cgroup v2 partition of its CPUs\n# (systemd: AllowedCPUs= with cpuset.cpus.partition=isolated), as `--cpuset-partition` did.\n",
            ),
        }
    }
    let mut tuned = String::from(
        "# Written by `jitterlab tune`: a tuned profile of the fixes it measured as worth applying.\n# Install: mkdir /etc/tuned/jitterlab-tune, copy this file and jitterlab-tune.sh there,\n# `tuned-adm profile jitterlab-tune`. tuned sets the sysctls back itself when the profile\n# is left, and runs the script with `stop`, which sets its files back.\n[main]\nsummary=jitterlab tune: fixes measured as worthwhile\n",
    );
    if !tuned_sysctl.is_empty() {
        tuned.push_str("\n[sysctl]\n");
        tuned.push_str(&tuned_sysctl);
    }
    if force_latency {
        tuned.push_str(
            "\n[cpu]\n# PM QoS 0 us: the CPUs kept out of deep idle states.\nforce_latency=0\n",
        );
        script.push_str("\n# pm-qos: hold /dev/cpu_dma_latency open with 0 in the application, or use tuned's force_latency=0.\n");
    }
    tuned.push_str("\n[script]\nscript=${i:PROFILE_DIR}/jitterlab-tune.sh\n");
    notes.iter().for_each(|n| script.push_str(n));
    script.push_str("\nexit $failed\n");
    let unit = "# Written by `jitterlab tune`. Install: copy jitterlab-tune.sh to /usr/local/sbin/ (chmod 755)\n# and this file to /etc/systemd/system/, then `systemctl enable --now jitterlab-tune`.\n# `systemctl stop jitterlab-tune` sets the script's files back.\n[Unit]\nDescription=Real-time settings measured as worthwhile by jitterlab tune\nAfter=sysinit.target\n\n[Service]\nType=oneshot\nExecStart=/usr/local/sbin/jitterlab-tune.sh start\nExecStop=/usr/local/sbin/jitterlab-tune.sh stop\nRemainAfterExit=yes\n\n[Install]\nWantedBy=multi-user.target\n".to_string();
    vec![
        (SYSCTL, sysctl),
        (SCRIPT, script),
        (UNIT, unit),
        (TUNED, tuned),
    ]
}

/// Writes [`files`] into `dir`'s `deploy/`; the paths written, relative to `dir`.
pub(crate) fn write(dir: &ResultDir, plan: &TunePlan, worthwhile: &[usize]) -> Result<Vec<String>> {
    let fixes: Vec<&Measured> = worthwhile.iter().map(|&i| &plan.measured[i]).collect();
    let files = files(&fixes, Path::new("/"));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tune::fixes::FIXES;
    use std::fs;
    use std::process::{Command, Output};

    fn measured(name: &str, settings: Vec<Setting>) -> Measured {
        Measured {
            fix: FIXES.iter().find(|f| f.name == name).unwrap(),
            change: Change::Settings(settings),
            now: String::new(),
        }
    }

    fn irq(n: u32) -> Setting {
        Setting {
            may_refuse: true,
            ..Setting::new(format!("proc/irq/{n}/smp_affinity_list"), "0")
        }
    }

    /// A fake /proc/irq: each interrupt's affinity `0-1` and a directory per handler's name.
    fn interrupts(root: &Path, irqs: &[(u32, &[&str])]) {
        let _ = fs::remove_dir_all(root.join("proc/irq"));
        for (n, names) in irqs {
            let dir = root.join(format!("proc/irq/{n}"));
            fs::create_dir_all(&dir).unwrap();
            fs::write(dir.join("smp_affinity_list"), "0-1\n").unwrap();
            fs::write(dir.join("node"), "0\n").unwrap();
            for name in *names {
                fs::create_dir(dir.join(name)).unwrap();
            }
        }
        fs::write(root.join("proc/irq/default_smp_affinity"), "3\n").unwrap();
    }

    fn script(root: &Path, text: &str, what: &str) -> Output {
        let file = root.join("jitterlab-tune.sh");
        fs::write(&file, text).unwrap();
        Command::new("sh")
            .arg(&file)
            .arg(what)
            .env("JITTERLAB_TUNE_ROOT", root)
            .output()
            .unwrap()
    }

    fn read(root: &Path, file: &str) -> String {
        fs::read_to_string(root.join(file))
            .unwrap()
            .trim()
            .to_string()
    }

    fn affinity(root: &Path, n: u32) -> String {
        read(root, &format!("proc/irq/{n}/smp_affinity_list"))
    }

    #[test]
    fn interrupts_are_found_by_name_after_a_reboot_and_stop_sets_back() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        fs::create_dir_all(root.join("run")).unwrap();
        fs::create_dir_all(root.join("sys/kernel/mm/transparent_hugepage")).unwrap();
        let defrag = "sys/kernel/mm/transparent_hugepage/defrag";
        fs::write(root.join(defrag), "always defer [madvise] never\n").unwrap();
        // At the tune: a network queue on 41, one handler's name on two interrupts, a serial
        // port, a shared line, and an interrupt with no handler's name.
        interrupts(
            root,
            &[
                (24, &["ACPI:Ged"]),
                (25, &["ACPI:Ged"]),
                (26, &["ttyS0"]),
                (30, &[]),
                (41, &["virtio3-rx"]),
                (16, &["i801_smbus", "ehci_hcd:usb1"]),
            ],
        );
        let fixes = [
            measured(
                "irq-affinity",
                [41, 24, 25, 26, 30, 16].into_iter().map(irq).collect(),
            ),
            measured("thp", vec![Setting::new(defrag, "never")]),
            measured(
                "timer-migration",
                vec![Setting::new("proc/sys/kernel/timer_migration", "0")],
            ),
        ];
        let files = files(&fixes.iter().collect::<Vec<_>>(), root);
        let text = |name: &str| &files.iter().find(|(n, _)| *n == name).unwrap().1;
        let sh = text(SCRIPT);
        assert!(
            sh.contains("# interrupt 41 at the tune (virtio3-rx):\npin 'virtio3-rx' 0\n"),
            "{sh}"
        );
        assert_eq!(sh.matches("pin 'ACPI:Ged' 0\n").count(), 1, "{sh}");
        assert!(sh.contains("pin 'ehci_hcd:usb1' 0\n"), "{sh}");
        assert!(
            sh.contains("interrupt 30 at the tune had no handler's name"),
            "{sh}"
        );
        assert!(
            sh.contains("put /proc/irq/default_smp_affinity 1\n"),
            "{sh}"
        );
        assert!(sh.contains(&format!("put /{defrag} 'never'\n")), "{sh}");
        // No interrupt written by its number, no sysctl in the script.
        assert!(
            !sh.contains("echo 0 >") && !sh.contains("timer_migration"),
            "{sh}"
        );
        assert!(text(SYSCTL).contains("kernel.timer_migration = 0"));
        assert!(text(UNIT).contains("ExecStop=/usr/local/sbin/jitterlab-tune.sh stop"));
        assert!(text(TUNED).contains("script=${i:PROFILE_DIR}/jitterlab-tune.sh"));

        // After a reboot: the queue's interrupt is 50, 41 another device's, the serial port
        // gone; 16 refuses a new affinity (its file a directory: the write fails).
        interrupts(
            root,
            &[
                (24, &["ACPI:Ged"]),
                (25, &["ACPI:Ged"]),
                (41, &["nvme0q1"]),
                (50, &["virtio3-rx"]),
                (16, &["ehci_hcd:usb1", "i801_smbus"]),
            ],
        );
        fs::remove_file(root.join("proc/irq/16/smp_affinity_list")).unwrap();
        fs::create_dir(root.join("proc/irq/16/smp_affinity_list")).unwrap();
        let o = script(root, sh, "start");
        let err = String::from_utf8_lossy(&o.stderr).to_string();
        assert!(o.status.success(), "{err}");
        assert_eq!(affinity(root, 50), "0");
        assert_eq!(
            affinity(root, 41),
            "0-1",
            "another device's interrupt moved"
        );
        assert_eq!(
            (affinity(root, 24), affinity(root, 25)),
            ("0".into(), "0".into())
        );
        assert_eq!(read(root, "proc/irq/default_smp_affinity"), "1");
        assert_eq!(read(root, defrag), "never");
        assert!(
            err.contains("no interrupt has a handler named 'ttyS0' now"),
            "{err}"
        );
        assert!(
            err.contains("/proc/irq/16/smp_affinity_list: the kernel keeps"),
            "{err}"
        );
        let saved = read(root, "run/jitterlab-tune.saved");
        assert!(saved.contains(&format!("/{defrag} madvise")), "{saved}");
        assert!(
            !saved.contains("/16/"),
            "a refused write is not set back: {saved}"
        );

        // verify: in force; a file set otherwise fails it.
        assert!(script(root, sh, "verify").status.success());
        fs::write(root.join(defrag), "always [madvise] never\n").unwrap();
        let o = script(root, sh, "verify");
        assert_eq!(o.status.code(), Some(1));
        assert!(String::from_utf8_lossy(&o.stderr).contains("is madvise, not never"));
        // A second start keeps the first's saved values.
        assert!(script(root, sh, "start").status.success());
        assert_eq!(read(root, "run/jitterlab-tune.saved"), saved);

        // stop: every file as it was before the first start, the saved values gone.
        let o = script(root, sh, "stop");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        for n in [24, 25, 41, 50] {
            assert_eq!(affinity(root, n), "0-1", "interrupt {n}");
        }
        assert_eq!(read(root, "proc/irq/default_smp_affinity"), "3");
        assert_eq!(read(root, defrag), "madvise");
        assert!(!root.join("run/jitterlab-tune.saved").exists());
        let o = script(root, sh, "stop");
        assert!(o.status.success());
        assert!(String::from_utf8_lossy(&o.stderr).contains("nothing to set back"));
        assert_eq!(script(root, sh, "again").status.code(), Some(2));

        // A file the kernel refuses that may not be refused: exit 1, said.
        fs::remove_file(root.join(defrag)).unwrap();
        fs::create_dir(root.join(defrag)).unwrap();
        let o = script(root, sh, "start");
        assert_eq!(o.status.code(), Some(1));
        assert!(String::from_utf8_lossy(&o.stderr).contains("the kernel refused never"));
    }

    /// A handler's name is a directory name any driver chooses: one with a line break never
    /// reaches the script, in a comment or a `pin` (it would end the comment and run as sh).
    #[test]
    fn a_handler_name_with_a_line_break_never_reaches_the_script() {
        let root = tempfile::tempdir().unwrap();
        interrupts(
            root.path(),
            &[(30, &["eth0", "zz\ntouch owned"]), (31, &["x\ny"])],
        );
        let (a, b) = (irq(30), irq(31));
        let lines = irq_lines(root.path(), &[&a, &b]);
        assert!(
            !lines.contains("owned") && !lines.contains("x\ny"),
            "{lines}"
        );
        assert!(lines.contains("pin 'eth0' 0"), "{lines}");
        assert!(
            lines.contains("interrupt 31 at the tune had no handler's name"),
            "{lines}"
        );
    }

    #[test]
    fn the_default_affinity_is_a_mask_of_32_bit_words() {
        assert_eq!(hex_mask(&[0]), "1");
        assert_eq!(hex_mask(&[0, 1]), "3");
        assert_eq!(hex_mask(&[2, 3, 4]), "1c");
        assert_eq!(hex_mask(&[32]), "1,00000000");
        assert_eq!(hex_mask(&[0, 33, 64]), "1,00000002,00000001");
        assert_eq!(quoted("it's"), r"'it'\''s'");
        assert_eq!(irq_of("proc/irq/25/smp_affinity_list"), Some("25"));
        assert_eq!(irq_of("proc/irq/default_smp_affinity"), None);
    }
}

//! Where each counter is read, opened once at the start and read again at every interval
//! boundary through the same open file (`pread` at offset 0: /proc and sysfs files produce
//! their text anew at each read from the start), into buffers kept from read to read. A source
//! the system does not offer is not opened, and the reason is kept for counters.log's
//! `#absent` lines. The paths start at [`Roots`], so that tests read fixture trees.

use super::parse;
use crate::format::counters::Absent;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// Where the kernel's files are: `/proc`, `/sys` and `/dev`, or a fixture tree's.
#[derive(Debug, Clone)]
pub(crate) struct Roots {
    pub(crate) proc: PathBuf,
    pub sys: PathBuf,
    pub(crate) dev: PathBuf,
}

impl Roots {
    pub(crate) fn system() -> Roots {
        Roots {
            proc: "/proc".into(),
            sys: "/sys".into(),
            dev: "/dev".into(),
        }
    }

    fn cpu_dir(&self, cpu: usize) -> PathBuf {
        self.sys.join(format!("devices/system/cpu/cpu{cpu}"))
    }
}

/// Reads the whole of `file` from offset 0 into `buf` (kept: no allocation once it is large
/// enough).
fn read_whole(file: &File, buf: &mut Vec<u8>) -> io::Result<()> {
    buf.clear();
    if buf.capacity() < 4096 {
        buf.reserve(4096);
    }
    loop {
        let len = buf.len();
        let cap = buf.capacity();
        buf.resize(cap, 0);
        let n = file.read_at(&mut buf[len..], len as u64);
        match n {
            Ok(0) => {
                buf.truncate(len);
                return Ok(());
            }
            Ok(n) => {
                buf.truncate(len + n);
                if buf.len() == buf.capacity() {
                    buf.reserve(buf.capacity());
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => buf.truncate(len),
            Err(e) => {
                buf.truncate(len);
                return Err(e);
            }
        }
    }
}

/// A text file read whole at each boundary.
struct TextSource {
    file: File,
    buf: Vec<u8>,
}

impl TextSource {
    fn open(path: &Path) -> io::Result<TextSource> {
        let file = File::open(path)?;
        let mut s = TextSource {
            file,
            buf: Vec::new(),
        };
        // A file that opens but cannot be read (debugfs without permission) is absent too.
        read_whole(&s.file, &mut s.buf)?;
        Ok(s)
    }

    fn text(&mut self) -> Option<&str> {
        read_whole(&self.file, &mut self.buf).ok()?;
        std::str::from_utf8(&self.buf).ok()
    }
}

/// A sysfs file holding one number.
struct NumberSource {
    name: String,
    file: File,
    /// Multiplies the number read (cpuidle's time is in us, stored in ns).
    scale: u64,
    signed: bool,
}

impl NumberSource {
    fn open(path: &Path, name: String, scale: u64, signed: bool) -> Option<NumberSource> {
        let file = File::open(path).ok()?;
        let s = NumberSource {
            name,
            file,
            scale,
            signed,
        };
        s.read().map(|_| s)
    }

    fn read(&self) -> Option<u64> {
        let mut buf = [0u8; 32];
        let n = self.file.read_at(&mut buf, 0).ok()?;
        let text = std::str::from_utf8(&buf[..n]).ok()?.trim();
        if self.signed {
            // Stored as its two's complement: a gauge is read back as i64.
            text.parse::<i64>()
                .ok()
                .map(|v| v.wrapping_mul(self.scale as i64) as u64)
        } else {
            text.parse::<u64>().ok().map(|v| v.wrapping_mul(self.scale))
        }
    }
}

/// The MSRs read through /dev/cpu/N/msr: (counter name, register).
const MSRS: &[(&str, u64)] = &[("aperf", 0xE8), ("mperf", 0xE7), ("smi", 0x34)];

/// One measured CPU's own files.
struct CpuSources {
    cpu: usize,
    numbers: Vec<NumberSource>,
    msr: Option<(File, Vec<(&'static str, u64)>)>,
}

/// Every source of the measured CPUs.
pub(crate) struct Sources {
    interrupts: Option<TextSource>,
    softirqs: Option<TextSource>,
    stat: Option<TextSource>,
    sched_debug: Option<TextSource>,
    /// ns per /proc/stat tick.
    tick_ns: u64,
    cpus: Vec<CpuSources>,
    columns: Vec<usize>,
}

impl Sources {
    /// Opens what the system offers for `cpus`; returns the sources and what is absent, with
    /// the reason.
    pub(crate) fn open(roots: &Roots, cpus: &[usize]) -> (Sources, Vec<Absent>) {
        let mut absent = Vec::new();
        let text = |path: PathBuf, counter: &str, absent: &mut Vec<Absent>| match TextSource::open(
            &path,
        ) {
            Ok(s) => Some(s),
            Err(e) => {
                absent.push(Absent {
                    counter: counter.into(),
                    reason: format!("cannot read {}: {e}", path.display()),
                });
                None
            }
        };
        let interrupts = text(roots.proc.join("interrupts"), "irq:", &mut absent);
        let softirqs = text(roots.proc.join("softirqs"), "softirq:", &mut absent);
        let user_hz = crate::sys::mem::user_hz();
        let stat = match user_hz {
            Some(_) => text(roots.proc.join("stat"), "steal_ns", &mut absent),
            None => {
                absent.push(Absent {
                    counter: "steal_ns".into(),
                    reason: "the C library does not say USER_HZ (sysconf(_SC_CLK_TCK))".into(),
                });
                None
            }
        };
        // Never mounted by jitterlab: read only where someone mounted debugfs.
        let debug = roots.sys.join("kernel/debug/sched/debug");
        let sched_debug = match TextSource::open(&debug) {
            Ok(s) => Some(s),
            Err(e) => {
                absent.push(Absent {
                    counter: "ctxsw".into(),
                    reason: format!(
                        "cannot read {}: {e} (per-CPU context switches are there only; jitterlab does not mount debugfs)",
                        debug.display()
                    ),
                });
                None
            }
        };
        let per_cpu: Vec<CpuSources> = cpus.iter().map(|&c| cpu_sources(roots, c)).collect();
        let has = |pred: &dyn Fn(&CpuSources) -> bool| per_cpu.iter().any(pred);
        let named = |prefix: &'static str| {
            move |c: &CpuSources| c.numbers.iter().any(|n| n.name.starts_with(prefix))
        };
        let cpu0 = cpus.first().copied().unwrap_or(0);
        let dir = roots.cpu_dir(cpu0);
        for (counter, found, path) in [
            ("idle:", has(&named("idle:")), dir.join("cpuidle")),
            (
                "freq_khz",
                has(&named("freq_khz")),
                dir.join("cpufreq/scaling_cur_freq"),
            ),
            (
                "throttle:",
                has(&named("throttle:")),
                dir.join("thermal_throttle"),
            ),
        ] {
            if !found {
                absent.push(Absent {
                    counter: counter.into(),
                    reason: format!(
                        "{} is not there (nor for the other measured CPUs)",
                        path.display()
                    ),
                });
            }
        }
        if !has(&named("temp_mc")) {
            absent.push(Absent {
                counter: "temp_mc".into(),
                reason: format!(
                    "no coretemp sensor in {} and no x86_pkg_temp zone in {}",
                    roots.sys.join("class/hwmon").display(),
                    roots.sys.join("class/thermal").display()
                ),
            });
        }
        for (name, _) in MSRS {
            if !per_cpu.iter().any(|c| {
                c.msr
                    .as_ref()
                    .is_some_and(|(_, m)| m.iter().any(|(n, _)| n == name))
            }) {
                absent.push(Absent {
                    counter: (*name).into(),
                    reason: format!(
                        "{} cannot be read (no msr driver loaded, not root, or not this CPU's register)",
                        roots.dev.join(format!("cpu/{cpu0}/msr")).display()
                    ),
                });
            }
        }
        (
            Sources {
                interrupts,
                softirqs,
                stat,
                sched_debug,
                tick_ns: user_hz.map_or(0, |hz| 1_000_000_000 / hz),
                cpus: per_cpu,
                columns: Vec::new(),
            },
            absent,
        )
    }

    /// Reads every source once, handing out `(cpu, name, value)`: names are `irq:LABEL`,
    /// `softirq:NAME` and the families of [`crate::format::counters::FAMILIES`]; `prefix` and
    /// `label` make the name (the caller joins them without allocating when it knows them).
    pub(crate) fn read(&mut self, mut found: impl FnMut(usize, &str, &str, u64)) {
        let columns = &mut self.columns;
        if let Some(text) = self.interrupts.as_mut().and_then(TextSource::text) {
            parse::per_cpu_table(text, columns, |c, l, v| found(c, "irq:", l, v));
        }
        if let Some(text) = self.softirqs.as_mut().and_then(TextSource::text) {
            parse::per_cpu_table(text, columns, |c, l, v| found(c, "softirq:", l, v));
        }
        let tick_ns = self.tick_ns;
        if let Some(text) = self.stat.as_mut().and_then(TextSource::text) {
            parse::stat_steal(text, |c, ticks| found(c, "steal_ns", "", ticks * tick_ns));
        }
        if let Some(text) = self.sched_debug.as_mut().and_then(TextSource::text) {
            parse::sched_debug_switches(text, |c, v| found(c, "ctxsw", "", v));
        }
        for c in &self.cpus {
            for n in &c.numbers {
                if let Some(v) = n.read() {
                    found(c.cpu, &n.name, "", v);
                }
            }
            if let Some((file, msrs)) = &c.msr {
                for &(name, register) in msrs {
                    let mut b = [0u8; 8];
                    if file.read_exact_at(&mut b, register).is_ok() {
                        found(c.cpu, name, "", u64::from_le_bytes(b));
                    }
                }
            }
        }
    }
}

/// The per-CPU files of `cpu` that can be read.
fn cpu_sources(roots: &Roots, cpu: usize) -> CpuSources {
    let dir = roots.cpu_dir(cpu);
    let mut numbers = Vec::new();
    // Idle states in their order (state0, state1, ...).
    let idle = dir.join("cpuidle");
    let mut states: Vec<(usize, String)> = std::fs::read_dir(&idle)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let k = name.strip_prefix("state")?.parse::<usize>().ok()?;
            Some((k, name))
        })
        .collect();
    states.sort();
    for (_, state) in states {
        let d = idle.join(&state);
        numbers.extend(NumberSource::open(
            &d.join("time"),
            format!("idle:{state}:time_ns"),
            1000,
            false,
        ));
        numbers.extend(NumberSource::open(
            &d.join("usage"),
            format!("idle:{state}:usage"),
            1,
            false,
        ));
    }
    numbers.extend(NumberSource::open(
        &dir.join("cpufreq/scaling_cur_freq"),
        "freq_khz".into(),
        1,
        false,
    ));
    for which in ["core", "package"] {
        numbers.extend(NumberSource::open(
            &dir.join(format!("thermal_throttle/{which}_throttle_count")),
            format!("throttle:{which}"),
            1,
            false,
        ));
    }
    if let Some(path) = temperature_file(roots, cpu) {
        numbers.extend(NumberSource::open(&path, "temp_mc".into(), 1, true));
    }
    let msr = File::open(roots.dev.join(format!("cpu/{cpu}/msr")))
        .ok()
        .and_then(|f| {
            let readable: Vec<(&'static str, u64)> = MSRS
                .iter()
                .copied()
                .filter(|&(_, r)| f.read_exact_at(&mut [0u8; 8], r).is_ok())
                .collect();
            (!readable.is_empty()).then_some((f, readable))
        });
    CpuSources { cpu, numbers, msr }
}

/// The temperature of the sensor that holds `cpu`: hwmon coretemp's `Core N` (N the CPU's
/// core_id) in the coretemp of its package, else that package's `Package id P`, else the
/// first `x86_pkg_temp` thermal zone.
fn temperature_file(roots: &Roots, cpu: usize) -> Option<PathBuf> {
    let topology = roots.cpu_dir(cpu).join("topology");
    let read = |p: PathBuf| {
        std::fs::read_to_string(p)
            .ok()
            .map(|s| s.trim().to_string())
    };
    let core = read(topology.join("core_id"));
    let package = read(topology.join("physical_package_id"));
    let hwmons = std::fs::read_dir(roots.sys.join("class/hwmon")).ok();
    let mut coretemps: Vec<PathBuf> = hwmons
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| read(p.join("name")).as_deref() == Some("coretemp"))
        .collect();
    coretemps.sort();
    for hwmon in &coretemps {
        let labels: Vec<(String, PathBuf)> = std::fs::read_dir(hwmon)
            .into_iter()
            .flatten()
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                let stem = name.strip_suffix("_label")?;
                Some((read(e.path())?, hwmon.join(format!("{stem}_input"))))
            })
            .collect();
        // This package's sensor: it has the package's label (one coretemp per package).
        let pkg_label = package.as_ref().map(|p| format!("Package id {p}"));
        let of_package = match &pkg_label {
            Some(l) => labels.iter().any(|(x, _)| x == l),
            None => coretemps.len() == 1,
        };
        if !of_package {
            continue;
        }
        if let Some(core) = &core
            && let Some((_, p)) = labels.iter().find(|(l, _)| *l == format!("Core {core}"))
        {
            return Some(p.clone());
        }
        if let Some(l) = &pkg_label
            && let Some((_, p)) = labels.iter().find(|(x, _)| x == l)
        {
            return Some(p.clone());
        }
    }
    let mut zones: Vec<PathBuf> = std::fs::read_dir(roots.sys.join("class/thermal"))
        .ok()
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| read(p.join("type")).as_deref() == Some("x86_pkg_temp"))
        .collect();
    zones.sort();
    zones.first().map(|z| z.join("temp"))
}

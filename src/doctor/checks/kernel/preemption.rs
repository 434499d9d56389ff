//! The preemption model check: the one kernel property that decides whether a waiting
//! real-time task can be kept off the CPU for milliseconds. Its own module because the model
//! is read from five sources that disagree in known ways (a PREEMPT_DYNAMIC kernel's boot
//! default vs its current mode), and the snapshot reuses the answer ([`read_preemption`]).

use crate::doctor::checks::Ctx;
use crate::doctor::root;
use crate::doctor::verdict::{Check, Spec};

/// The preemption models of Linux, most to least preemptible.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Model {
    Rt,
    Lazy,
    Full,
    Voluntary,
    None,
    /// A non-dynamic kernel whose version string carries no PREEMPT marker and whose config is
    /// unavailable.
    NoneOrVoluntary,
}

impl Model {
    fn from_word(word: &str) -> Option<Model> {
        match word {
            "none" => Some(Model::None),
            "voluntary" => Some(Model::Voluntary),
            "full" => Some(Model::Full),
            "lazy" => Some(Model::Lazy),
            _ => None,
        }
    }
    fn name(self) -> &'static str {
        match self {
            Model::Rt => "PREEMPT_RT",
            Model::Lazy => "lazy",
            Model::Full => "full",
            Model::Voluntary => "voluntary",
            Model::None => "none",
            Model::NoneOrVoluntary => "none or voluntary",
        }
    }
}

/// What the kernel says about its preemption, with the sources it was read from.
#[derive(Debug, Clone)]
pub(crate) struct Preemption {
    pub model: Option<Model>,
    pub(crate) dynamic: bool,
    pub(crate) evidence: Vec<String>,
}

impl Preemption {
    /// A short label for the snapshot: `PREEMPT_RT`, `PREEMPT_DYNAMIC (full)`, `voluntary`.
    pub(crate) fn label(&self) -> String {
        match (self.model, self.dynamic) {
            (None, _) => "unknown".into(),
            (Some(Model::Rt), _) => "PREEMPT_RT".into(),
            (Some(m), true) => format!("PREEMPT_DYNAMIC ({})", m.name()),
            (Some(m), false) => m.name().into(),
        }
    }
}

/// Finds the preemption model from every source there is: /sys/kernel/realtime, the version
/// string, the kernel config, the `preempt=` parameter and debugfs's sched/preempt.
pub(crate) fn read_preemption(ctx: &Ctx) -> Preemption {
    let mut ev = Vec::new();
    let realtime = read_realtime_flag(ctx, &mut ev);
    let version = read_version_string(ctx, &mut ev);
    let config = read_config(ctx, &mut ev);
    let rt = realtime || version.rt || config.rt;
    let dynamic = version.dynamic || config.dynamic;
    let model = if rt {
        Some(Model::Rt)
    } else if dynamic {
        dynamic_mode(ctx, config.model, &mut ev)
    } else {
        // A non-dynamic kernel: the config knows none from voluntary, the version string doesn't.
        config.model.or(version.model)
    };
    Preemption {
        model,
        dynamic,
        evidence: ev,
    }
}

/// What one source says of the kernel: PREEMPT_RT, PREEMPT_DYNAMIC, and the model it names.
#[derive(Default)]
struct SourceSays {
    rt: bool,
    dynamic: bool,
    model: Option<Model>,
}

/// /sys/kernel/realtime, which PREEMPT_RT kernels have (1).
fn read_realtime_flag(ctx: &Ctx, ev: &mut Vec<String>) -> bool {
    let Ok(v) = root::read_trim(ctx.root, "sys/kernel/realtime") else {
        return false;
    };
    ev.push(format!("/sys/kernel/realtime = {v}"));
    v == "1"
}

/// The marker in /proc/version: the strongest one of PREEMPT_RT, PREEMPT_DYNAMIC, PREEMPT_LAZY,
/// PREEMPT; none means no preemption or voluntary.
fn read_version_string(ctx: &Ctx, ev: &mut Vec<String>) -> SourceSays {
    let mut says = SourceSays::default();
    let Ok(version) = root::read(ctx.root, "proc/version") else {
        return says;
    };
    let words: Vec<&str> = version.split_whitespace().collect();
    let marker = ["PREEMPT_RT", "PREEMPT_DYNAMIC", "PREEMPT_LAZY", "PREEMPT"]
        .into_iter()
        .find(|m| words.contains(m));
    match marker {
        Some("PREEMPT_RT") => says.rt = true,
        Some("PREEMPT_DYNAMIC") => says.dynamic = true,
        Some("PREEMPT_LAZY") => says.model = Some(Model::Lazy),
        Some(_) => says.model = Some(Model::Full),
        None => says.model = Some(Model::NoneOrVoluntary),
    }
    ev.push(format!(
        "/proc/version: {}",
        marker.unwrap_or("no PREEMPT marker")
    ));
    says
}

/// The kernel config's preemption options. The config's choice is the compiled (or, with
/// PREEMPT_DYNAMIC, the boot-default) model.
fn read_config(ctx: &Ctx, ev: &mut Vec<String>) -> SourceSays {
    let Ok(c) = &ctx.config else {
        return SourceSays::default();
    };
    let says = SourceSays {
        rt: c.enabled("PREEMPT_RT"),
        dynamic: c.enabled("PREEMPT_DYNAMIC"),
        model: [
            ("PREEMPT_NONE", Model::None),
            ("PREEMPT_VOLUNTARY", Model::Voluntary),
            ("PREEMPT_LAZY", Model::Lazy),
            ("PREEMPT", Model::Full),
        ]
        .into_iter()
        .find(|(name, _)| c.enabled(name))
        .map(|(_, m)| m),
    };
    let opts: Vec<String> = [
        "PREEMPT_RT",
        "PREEMPT_DYNAMIC",
        "PREEMPT_NONE",
        "PREEMPT_VOLUNTARY",
        "PREEMPT",
        "PREEMPT_LAZY",
    ]
    .into_iter()
    .filter(|o| c.enabled(o))
    .map(|o| format!("CONFIG_{o}"))
    .collect();
    ev.push(format!(
        "{}: {}",
        c.source,
        if opts.is_empty() {
            "no preemption options".into()
        } else {
            opts.join(" ")
        }
    ));
    says
}

/// A PREEMPT_DYNAMIC kernel's mode: the current one from debugfs when readable, else the boot
/// mode (`preempt=`, or the config's default). Returns it and whether it is the current one.
fn dynamic_mode(ctx: &Ctx, from_config: Option<Model>, ev: &mut Vec<String>) -> Option<Model> {
    // debugfs shows the current mode in parentheses: "none voluntary (full) lazy".
    let current = root::read(ctx.root, "sys/kernel/debug/sched/preempt")
        .ok()
        .and_then(|t| {
            let word = t.split_whitespace().find(|w| w.starts_with('('))?;
            Model::from_word(word.trim_matches(|c| c == '(' || c == ')'))
        });
    let cmdline = ctx.cmdline("preempt").and_then(|v| Model::from_word(&v));
    if let Some(m) = current {
        ev.push(format!(
            "/sys/kernel/debug/sched/preempt: current mode {}",
            m.name()
        ));
        return Some(m);
    }
    ev.push("current mode unreadable (/sys/kernel/debug/sched/preempt needs debugfs and root); using the boot mode".into());
    if let Some(m) = cmdline {
        ev.push(format!("preempt={} on the command line", m.name()));
        Some(m)
    } else {
        from_config
    }
}

const PREEMPTION: Spec = Spec {
    id: "kernel.preemption",
    area: "kernel",
    why: "Only a PREEMPT_RT kernel bounds how long the kernel can keep a waiting real-time task \
          off the CPU; other models leave non-preemptible sections of milliseconds.",
};

pub(crate) fn preemption(ctx: &Ctx) -> Check {
    let p = read_preemption(ctx);
    let evidence = format!("{}; {}", p.label(), p.evidence.join("; "));
    let to_rt = "boot a PREEMPT_RT kernel (CONFIG_PREEMPT_RT=y; distributions ship one, e.g. \
                 linux-image-rt-*, kernel-rt)";
    match p.model {
        Some(Model::Rt) => PREEMPTION.ok(evidence),
        Some(Model::Full) | Some(Model::Lazy) => PREEMPTION.warn(evidence, to_rt),
        Some(_) if p.dynamic => PREEMPTION.warn(
            evidence,
            format!(
                "{to_rt}; short of that, switch this PREEMPT_DYNAMIC kernel to full preemption: \
                     boot with preempt=full, or {}",
                switch_now(debugfs_mounted(ctx))
            ),
        ),
        Some(_) => PREEMPTION.warn(evidence, to_rt),
        None => PREEMPTION.unknown(
            format!("no source readable: {}", p.evidence.join("; ")),
            "check that /proc is mounted; `uname -v` shows PREEMPT_RT on a real-time kernel",
        ),
    }
}

/// Whether debugfs is mounted at /sys/kernel/debug, from /proc/mounts (None: unreadable).
fn debugfs_mounted(ctx: &Ctx) -> Option<bool> {
    let mounts = root::read(ctx.root, "proc/mounts").ok()?;
    Some(mounts.lines().any(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        f.get(1) == Some(&"/sys/kernel/debug") && f.get(2) == Some(&"debugfs")
    }))
}

/// The commands that switch a running PREEMPT_DYNAMIC kernel to full preemption: the switch
/// is a debugfs file, so where debugfs is not mounted (most distributions leave it unmounted)
/// the fix mounts it first, or else `echo` fails with "No such file or directory".
fn switch_now(debugfs: Option<bool>) -> String {
    const ECHO: &str = "`echo full > /sys/kernel/debug/sched/preempt`";
    const MOUNT: &str = "`mount -t debugfs none /sys/kernel/debug`";
    match debugfs {
        Some(true) => ECHO.to_string(),
        Some(false) => format!("as root {MOUNT} (debugfs is not mounted), then {ECHO}"),
        None => format!(
            "as root {ECHO} (where /sys/kernel/debug is empty, {MOUNT} first: /proc/mounts is unreadable here)"
        ),
    }
}

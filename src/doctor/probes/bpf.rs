//! Probe of the bpf(2) system call.

use super::describe;
use crate::doctor::root;
use crate::doctor::verdict::{Check, Spec};

const BPF: Spec = Spec {
    id: "tracing.bpf",
    area: "tracing",
    why: "eBPF lets tracing aggregate in the kernel instead of streaming every event; it needs \
          the bpf(2) system call and the privilege to use it.",
};

pub(super) fn bpf() -> Check {
    let Err(err) = crate::sys::ipc_probes::bpf_map_round_trip() else {
        return BPF.ok("bpf(BPF_MAP_CREATE) created a one-entry array map, closed again");
    };
    let setting = root::read_trim(
        std::path::Path::new("/"),
        "proc/sys/kernel/unprivileged_bpf_disabled",
    )
    .map(|v| format!("; kernel.unprivileged_bpf_disabled = {v}"))
    .unwrap_or_default();
    BPF.warn(
        format!("bpf(BPF_MAP_CREATE) failed: {}{setting}", describe(err)),
        if err == crate::sys::errno::ENOSYS {
            "use a kernel with CONFIG_BPF_SYSCALL=y"
        } else {
            "run as root or grant CAP_BPF and CAP_PERFMON"
        },
    )
}

const BACKEND: Spec = Spec {
    id: "tracing.backend",
    area: "tracing",
    why: "`run --trace` collects with BPF programs where the kernel allows it (BTF, bpf() \
          permission, the verifier accepting the programs): filtered in the kernel, far cheaper \
          than tracefs, which is the fallback (--trace-backend).",
};

/// What `--trace-backend auto` would use: the BPF object loaded and verified (nothing
/// attached), then released.
pub(super) fn trace_backend() -> Check {
    let chosen = crate::trace::auto_backend();
    match chosen.backend {
        "bpf" => BACKEND.ok(format!("--trace uses bpf ({})", chosen.reason)),
        _ => BACKEND.warn(
            format!("--trace uses tracefs ({})", chosen.reason),
            "for the BPF back end use a kernel with CONFIG_DEBUG_INFO_BTF=y and run as root \
             (or with CAP_BPF and CAP_PERFMON)",
        ),
    }
}

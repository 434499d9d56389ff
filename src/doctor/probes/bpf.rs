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
///
/// The fix is the refusal's own: root or capabilities only for a process without them, BTF
/// only for a kernel without it.
pub(super) fn trace_backend() -> Check {
    match crate::trace::auto_backend_why() {
        (chosen, None) => BACKEND.ok(format!(
            "--trace uses {} ({})",
            chosen.backend, chosen.reason
        )),
        (chosen, Some(refusal)) => BACKEND.warn(
            format!("--trace uses {} ({})", chosen.backend, chosen.reason),
            refusal.fix,
        ),
    }
}

/// The back end a traced run set up, as the check says it: what `auto` chose and why (a
/// fallback to tracefs warns, as the probe does).
pub(super) fn backend_used(chosen: &crate::trace::BackendChoice) -> Check {
    let evidence = format!("--trace uses {} ({})", chosen.backend, chosen.reason);
    match chosen.fell_back() {
        false => BACKEND.ok(evidence),
        true => BACKEND.warn(
            evidence,
            "`jitterlab doctor` loads the BPF object and names what refused it, with the fix",
        ),
    }
}

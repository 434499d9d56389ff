//! Probe of the bpf(2) system call.

use super::{describe, errno};
use crate::system::root;
use crate::system::verdict::{Check, Spec};

const BPF: Spec = Spec {
    id: "tracing.bpf",
    area: "tracing",
    why: "eBPF lets tracing aggregate in the kernel instead of streaming every event; it needs \
          the bpf(2) system call and the privilege to use it.",
};

pub(super) fn bpf() -> Check {
    // union bpf_attr for BPF_MAP_CREATE: map_type, key_size, value_size, max_entries; the rest
    // must be zero.
    const BPF_MAP_CREATE: libc::c_long = 0;
    const BPF_MAP_TYPE_ARRAY: u32 = 2;
    let mut attr = [0u32; 32];
    attr[..4].copy_from_slice(&[BPF_MAP_TYPE_ARRAY, 4, 4, 1]);
    // SAFETY: the attribute buffer is valid for its full size for the duration of the call.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            BPF_MAP_CREATE,
            attr.as_ptr(),
            std::mem::size_of_val(&attr),
        )
    };
    if fd >= 0 {
        unsafe { libc::close(fd as libc::c_int) };
        return BPF.ok("bpf(BPF_MAP_CREATE) created a one-entry array map, closed again");
    }
    let err = errno();
    let setting = root::read_trim(
        std::path::Path::new("/"),
        "proc/sys/kernel/unprivileged_bpf_disabled",
    )
    .map(|v| format!("; kernel.unprivileged_bpf_disabled = {v}"))
    .unwrap_or_default();
    BPF.warn(
        format!("bpf(BPF_MAP_CREATE) failed: {}{setting}", describe(err)),
        if err == libc::ENOSYS {
            "use a kernel with CONFIG_BPF_SYSCALL=y"
        } else {
            "run as root or grant CAP_BPF and CAP_PERFMON"
        },
    )
}

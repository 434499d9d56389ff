#!/usr/bin/env python3
"""Writes the doctor fixture trees: minimal copies of /proc and /sys as four kinds of machine
would show them. Run from this directory; the trees are committed, this script documents and
regenerates them. Expected verdicts are in src/doctor/checks/fixtures.rs."""

import gzip, os, shutil

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT_CAPS = "000001ffffffffff"


def put(tree, rel, text):
    path = os.path.join(HERE, tree, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if rel.endswith(".gz"):
        # mtime=0 keeps the file byte-identical across regenerations
        with open(path, "wb") as f:
            f.write(gzip.compress(text.encode(), mtime=0))
    else:
        with open(path, "w") as f:
            f.write(text)


def limits(rtprio, memlock):
    rows = [("Max cpu time", "unlimited", "unlimited", "seconds"),
            ("Max locked memory", memlock, memlock, "bytes"),
            ("Max msgqueue size", "819200", "819200", "bytes"),
            ("Max realtime priority", rtprio, rtprio, ""),
            ("Max realtime timeout", "unlimited", "unlimited", "us")]
    out = "Limit                     Soft Limit           Hard Limit           Units     \n"
    for name, soft, hard, unit in rows:
        out += f"{name:<26}{soft:<21}{hard:<21}{unit:<10}\n"
    return out


def cpuinfo(n, hypervisor):
    flags = "fpu vme de pse tsc msr pae mce cx8 apic sep" + (" hypervisor" if hypervisor else "") + " lahf_lm"
    return "".join(f"processor\t: {i}\nvendor_id\t: GenuineIntel\nflags\t\t: {flags}\n\n" for i in range(n))


def stat(n, steal):
    line = lambda name, s: f"{name} 1000 0 500 90000 100 0 20 {s} 0 0\n"
    return line("cpu ", steal * n).replace("cpu  ", "cpu  ") + "".join(line(f"cpu{i}", steal) for i in range(n)) + "intr 0\nctxt 0\n"


def machine(tree, *, cpus, release, version, cmdline, config=None, config_at="proc/config.gz",
            realtime=None, sysctl, caps, rtprio, memlock, cgroup, mounts, governor=None,
            idle=None, idle_driver=None, siblings=None, smt=None, irqs, procs, thp, swaps, ksm,
            hypervisor=False, dmi=None, steal=0, tracefs_mounted, btf, timer_res=1,
            clocksource="tsc", preempt_debugfs=None, extra=()):
    shutil.rmtree(os.path.join(HERE, tree), ignore_errors=True)
    cpu_list = f"0-{cpus - 1}"
    put(tree, "proc/version", f"Linux version {release} (builder@host) (gcc 12) {version}\n")
    put(tree, "proc/sys/kernel/osrelease", release + "\n")
    put(tree, "proc/sys/kernel/hostname", tree + "\n")
    put(tree, "proc/cmdline", cmdline + "\n")
    if config is not None:
        put(tree, config_at, "".join(f"CONFIG_{k}={v}\n" for k, v in config.items()) + "# CONFIG_KASAN is not set\n")
    if realtime is not None:
        put(tree, "sys/kernel/realtime", realtime + "\n")
    if preempt_debugfs is not None:
        put(tree, "sys/kernel/debug/sched/preempt", preempt_debugfs + "\n")
    for k, v in sysctl.items():
        put(tree, f"proc/sys/kernel/{k}", f"{v}\n")
    put(tree, "proc/self/status", f"Name:\tjitterlab\nVmLck:\t       0 kB\nCapInh:\t0000000000000000\nCapPrm:\t{caps}\nCapEff:\t{caps}\n")
    put(tree, "proc/self/limits", limits(rtprio, memlock))
    put(tree, "proc/self/cgroup", cgroup)
    put(tree, "proc/mounts", mounts + ("tracefs /sys/kernel/tracing tracefs rw,nosuid,nodev,noexec,relatime 0 0\n" if tracefs_mounted else ""))
    put(tree, "proc/filesystems", "nodev\tsysfs\nnodev\tproc\nnodev\tdebugfs\nnodev\ttracefs\n")
    put(tree, "proc/cpuinfo", cpuinfo(cpus, hypervisor))
    put(tree, "proc/stat", stat(cpus, steal))
    put(tree, "proc/swaps", "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n" + swaps)
    put(tree, "proc/meminfo", "MemTotal:       16000000 kB\n")
    if timer_res is not None:
        put(tree, "proc/timer_list", f"Timer List Version: v0.10\n\ncpu: 0\n clock 0:\n  .base:       0000000000000000\n  .index:      0\n  .resolution: {timer_res} nsecs\n")
    for irq, (aff, name) in irqs.items():
        put(tree, f"proc/irq/{irq}/smp_affinity_list", aff + "\n")
        put(tree, f"proc/irq/{irq}/effective_affinity_list", aff.split("-")[0] + "\n")
        os.makedirs(os.path.join(HERE, tree, f"proc/irq/{irq}/{name}"), exist_ok=True)
    for pid, comm in procs.items():
        put(tree, f"proc/{pid}/comm", comm + "\n")
    sysd = "sys/devices/system"
    put(tree, f"{sysd}/cpu/online", cpu_list + "\n")
    put(tree, f"{sysd}/cpu/present", cpu_list + "\n")
    if smt is not None:
        put(tree, f"{sysd}/cpu/smt/control", smt + "\n")
    if idle_driver:
        put(tree, f"{sysd}/cpu/cpuidle/current_driver", idle_driver + "\n")
    for c in range(cpus):
        d = f"{sysd}/cpu/cpu{c}"
        if governor:
            put(tree, f"{d}/cpufreq/scaling_governor", governor + "\n")
        for i, (name, lat, disabled) in enumerate(idle or []):
            put(tree, f"{d}/cpuidle/state{i}/name", name + "\n")
            put(tree, f"{d}/cpuidle/state{i}/latency", f"{lat}\n")
            put(tree, f"{d}/cpuidle/state{i}/disable", f"{disabled}\n")
        put(tree, f"{d}/topology/thread_siblings_list", (siblings(c) if siblings else str(c)) + "\n")
    put(tree, f"{sysd}/node/online", "0\n")
    put(tree, f"{sysd}/node/node0/cpulist", cpu_list + "\n")
    put(tree, f"{sysd}/clocksource/clocksource0/current_clocksource", clocksource + "\n")
    put(tree, f"{sysd}/clocksource/clocksource0/available_clocksource", clocksource + " hpet acpi_pm\n")
    put(tree, "sys/kernel/mm/transparent_hugepage/enabled", thp + "\n")
    put(tree, "sys/kernel/mm/transparent_hugepage/defrag", "always defer defer+madvise [madvise] never\n")
    put(tree, "sys/kernel/mm/ksm/run", f"{ksm}\n")
    if dmi:
        put(tree, "sys/devices/virtual/dmi/id/sys_vendor", dmi[0] + "\n")
        put(tree, "sys/devices/virtual/dmi/id/product_name", dmi[1] + "\n")
    if tracefs_mounted:
        for ev in ["sched/sched_switch", "sched/sched_waking", "irq/irq_handler_entry", "timer/hrtimer_expire_entry"]:
            put(tree, f"sys/kernel/tracing/events/{ev}/enable", "0\n")
    if btf:
        put(tree, "sys/kernel/btf/vmlinux", "BTF fixture placeholder\n")
    for rel, text in extra:
        put(tree, rel, text)


CGROUP2_MOUNTS = "sysfs /sys sysfs rw 0 0\nproc /proc proc rw 0 0\ncgroup2 /sys/fs/cgroup cgroup2 rw,nosuid,nodev,noexec,relatime 0 0\n"

# (a) A tuned PREEMPT_RT machine: CPUs 2-3 isolated and measured, everything by the book.
machine("rt-tuned", cpus=4, release="6.12.0-rt5", version="#1 SMP PREEMPT_RT Mon Jan 6 10:00:00 UTC 2025",
        cmdline="BOOT_IMAGE=/vmlinuz root=/dev/sda1 isolcpus=domain,managed_irq,2-3 nohz_full=2-3 rcu_nocbs=2-3 irqaffinity=0-1 nosmt",
        config={"PREEMPT_RT": "y", "PREEMPT_BUILD": "y", "HZ_1000": "y", "HZ": "1000", "HIGH_RES_TIMERS": "y", "RT_GROUP_SCHED": "y"},
        realtime="1",
        sysctl={"sched_rt_runtime_us": -1, "sched_rt_period_us": 1000000, "timer_migration": 0, "watchdog": 0,
                "nmi_watchdog": 0, "watchdog_cpumask": "0-1", "numa_balancing": 0},
        caps=ROOT_CAPS, rtprio="99", memlock="unlimited", cgroup="0::/\n", mounts=CGROUP2_MOUNTS,
        governor="performance", idle=[("POLL", 0, 0), ("C1", 2, 0), ("C6", 133, 1)], idle_driver="intel_idle",
        smt="off", irqs={24: ("0-1", "eth0"), 25: ("0", "nvme0q0"), 26: ("1", "i915")},
        procs={1: "systemd", 500: "sshd"}, thp="always [madvise] never", swaps="", ksm=0,
        tracefs_mounted=True, btf=True)

# (b) A stock desktop distribution kernel: PREEMPT_DYNAMIC booting voluntary, a normal user.
machine("desktop", cpus=8, release="6.8.0-45-generic", version="#45-Ubuntu SMP PREEMPT_DYNAMIC Fri Aug 30 12:02:04 UTC 2024",
        cmdline="BOOT_IMAGE=/boot/vmlinuz-6.8.0-45-generic root=UUID=1234 ro quiet splash vt.handoff=7",
        config={"PREEMPT_BUILD": "y", "PREEMPT_VOLUNTARY": "y", "PREEMPT_DYNAMIC": "y", "HZ_1000": "y", "HZ": "1000", "HIGH_RES_TIMERS": "y"},
        config_at="boot/config-6.8.0-45-generic",
        sysctl={"sched_rt_runtime_us": 950000, "sched_rt_period_us": 1000000, "timer_migration": 1, "watchdog": 1,
                "nmi_watchdog": 1, "watchdog_cpumask": "0-7", "numa_balancing": 1},
        caps="0000000000000000", rtprio="0", memlock="8388608", cgroup="0::/user.slice/user-1000.slice/session-2.scope\n",
        mounts=CGROUP2_MOUNTS, governor="powersave",
        idle=[("POLL", 0, 0), ("C1", 1, 0), ("C1E", 2, 0), ("C6", 85, 0), ("C10", 890, 0)], idle_driver="intel_idle",
        siblings=lambda c: f"{c % 4},{c % 4 + 4}", smt="on",
        irqs={120: ("0-7", "nvme0q1"), 121: ("0-7", "i915"), 122: ("0-7", "iwlwifi")},
        procs={1: "systemd", 812: "irqbalance", 1500: "gnome-shell"}, thp="always [madvise] never",
        swaps="/swap.img                               file\t\t2097148\t\t0\t\t-2\n", ksm=0,
        tracefs_mounted=True, btf=True)

# (c) A VM (KVM/QEMU) running a debug kernel: hypervisor, steal, no cpufreq, no tracefs mount.
machine("vm", cpus=2, release="5.14.0-427.el9.x86_64+debug", version="#1 SMP PREEMPT_DYNAMIC Fri May 10 12:00:00 EDT 2024",
        cmdline="BOOT_IMAGE=(hd0,gpt2)/vmlinuz root=/dev/mapper/rhel-root ro console=ttyS0,115200",
        config={"PREEMPT_BUILD": "y", "PREEMPT_VOLUNTARY": "y", "PREEMPT_DYNAMIC": "y", "HZ": "1000", "HIGH_RES_TIMERS": "y",
                "LOCKDEP": "y", "PROVE_LOCKING": "y", "KASAN": "y", "DEBUG_ATOMIC_SLEEP": "y"},
        preempt_debugfs="none (voluntary) full",
        sysctl={"sched_rt_runtime_us": 950000, "sched_rt_period_us": 1000000, "timer_migration": 1, "watchdog": 1,
                "nmi_watchdog": 0, "watchdog_cpumask": "0-1", "numa_balancing": 0},
        caps=ROOT_CAPS, rtprio="0", memlock="8388608", cgroup="0::/system.slice/sshd.service\n",
        # debugfs mounted (its sched/preempt above is readable), tracefs not.
        mounts=CGROUP2_MOUNTS + "debugfs /sys/kernel/debug debugfs rw,nosuid,nodev,noexec,relatime 0 0\n",
        irqs={10: ("0-1", "virtio0-input.0"), 11: ("0-1", "virtio1-requests")},
        procs={1: "systemd", 700: "irqbalance"}, thp="[always] madvise never", swaps="", ksm=0,
        hypervisor=True, dmi=("QEMU", "Standard PC (Q35 + ICH9, 2009)"), steal=1234, clocksource="kvm-clock",
        tracefs_mounted=False, btf=False)

# (d) A Docker container on a PREEMPT_RT host with cgroup v1 and RT group scheduling, started
# without --cpu-rt-runtime: no config, no timer_list, a zero RT runtime, Docker's capabilities.
machine("container", cpus=4, release="5.15.0-1034-realtime", version="#38-Ubuntu SMP PREEMPT_RT Mon Feb 20 12:00:00 UTC 2023",
        cmdline="BOOT_IMAGE=/boot/vmlinuz-5.15.0-1034-realtime root=UUID=abcd ro",
        sysctl={"sched_rt_runtime_us": 950000, "sched_rt_period_us": 1000000, "timer_migration": 1, "watchdog": 1,
                "nmi_watchdog": 1, "watchdog_cpumask": "0-3", "numa_balancing": 0},
        caps="00000000a80425fb", rtprio="0", memlock="65536",
        cgroup="12:cpu,cpuacct:/docker/3f2a9c\n11:memory:/docker/3f2a9c\n0::/\n",
        mounts="overlay / overlay rw 0 0\nproc /proc proc rw 0 0\n"
               "cgroup /sys/fs/cgroup/cpu,cpuacct cgroup ro,nosuid,nodev,noexec,relatime,cpu,cpuacct 0 0\n"
               "cgroup /sys/fs/cgroup/memory cgroup ro,nosuid,nodev,noexec,relatime,memory 0 0\n",
        governor="schedutil", irqs={30: ("0-3", "eth0"), 31: ("0-3", "ahci")},
        procs={1: "jitterlab"}, thp="always [madvise] never", swaps="", ksm=0,
        tracefs_mounted=False, btf=True, timer_res=None,
        extra=[("sys/fs/cgroup/cpu,cpuacct/cpu.rt_runtime_us", "0\n"),
               ("sys/fs/cgroup/cpu,cpuacct/cpu.rt_period_us", "1000000\n")])

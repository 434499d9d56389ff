# Sourced by ci/lab.sh: the initramfs and the guest's boot.
#
# How the results come back: the guest writes one tar archive of its result directories onto
# a raw virtio disk (/dev/vda, an empty sparse file on the host) and the host unpacks it. The
# serial console was tried first and is the wrong channel: qemu paces the emulated 8250 at
# its baud rate (2 MiB took minutes) and the kernel's own messages interleave with it. A 9p
# share would need five more modules and a writable host directory the guest could fill
# with anything; a disk holds at most its size and needs two modules (virtio_pci,
# virtio_blk). The console keeps the markers (`=== lab: ...`) for a person reading the log.

# The emulator: TCG (this host has no KVM), one host thread per vCPU. Instruction counting
# (-icount, a guest clock independent of the host's load) would suit ground truth better, but
# Debian's 6.1 kernels hang bringing up the second CPU under it (docs/lab.md).
LAB_ACCEL=${LAB_ACCEL:-"-accel tcg -cpu max"}

# The programs of the comparison tools in the guest (their packages' paths).
LAB_TOOL_PACKAGES="rtla rt-tests stress-ng"
LAB_TOOL_PROGRAMS=(usr/bin/rtla usr/bin/cyclictest usr/bin/hackbench usr/bin/oslat usr/bin/stress-ng)

# Builds the part of the initramfs every kernel shares, as $1: busybox, jitterlab, the tools
# with their libraries, the init and the checks' guest parts.
lab_build_common() {
    local cpio=$1 ir=$LAB_WORK/initramfs f
    mkdir -p "$ir"/{bin,proc,sys,dev,tmp,lab/checks}
    lab_fetch busybox-static
    dpkg-deb -x "$(lab_cached busybox-static)" "$LAB_WORK/busybox"
    cp "$LAB_WORK/busybox/bin/busybox" "$ir/bin/"
    cp "$BINARY" "$ir/jitterlab"
    cp "$lab/guest/init" "$ir/init"
    cp "$lab"/checks/*.guest.sh "$lab"/checks/*.lib "$ir/lab/checks/"
    lab_say "unpacking $LAB_TOOL_PACKAGES and the libraries they need"
    local files
    files=$(lab_unpack_programs "$LAB_TOOL_PACKAGES" "$LAB_WORK/sysroot" "${LAB_TOOL_PROGRAMS[@]}")
    for f in $files; do
        lab_copy_from_root "$LAB_WORK/sysroot" "$f" "$ir/$f"
    done
    rm -rf "$LAB_WORK/sysroot" "$LAB_WORK/busybox"
    (cd "$ir" && find . | cpio -o -H newc --quiet | gzip -1) >"$cpio"
    lab_say "initramfs: $(du -h "$cpio" | cut -f1) ($(wc -w <<<"$files") files of the tools)"
}

# Boots kernel package $2 (kind $1: rt or standard) with boot parameters $4 and runs the
# checks $5... (their names); the guest's results land in $3/results, its console in
# $3/console.log. Returns non-zero, with LAB_BOOT_PROBLEM saying why, when the guest did not
# bring its results back.
lab_boot() {
    local kind=$1 pkg=$2 dir=$3 params=$4
    shift 4
    local names=$*
    LAB_BOOT_PROBLEM=
    mkdir -p "$dir/results"
    lab_unpack_kernel "$pkg" "$dir/kernel"
    lab_modules "$dir/kernel" "$dir/modules" virtio_pci virtio_blk
    (cd "$dir/modules" && find . | cpio -o -H newc --quiet | gzip -1) >"$dir/modules.cpio.gz"
    # Two cpio archives, one after the other, make one initramfs.
    cat "$LAB_WORK/common.cpio.gz" "$dir/modules.cpio.gz" >"$dir/initrd"
    cp "$dir"/kernel/boot/vmlinuz-* "$dir/vmlinuz"
    rm -rf "$dir/kernel" "$dir/modules"
    truncate -s 1G "$dir/data.img"
    local limit=$((LAB_CHECK_LIMIT * $# + 180))
    local append="console=ttyS0 rdinit=/init quiet panic=-1 lab.checks=${names// /,} lab.limit=$LAB_CHECK_LIMIT $params"
    # Held while the guest measures, so that no measuring test of the host runs beside it
    # (tests/common exclusive()); released when the guest is gone.
    local lock
    exec {lock}>>"$LAB_LOCK"
    lab_say "$kind: waiting for $LAB_LOCK"
    flock "$lock"
    # Under TCG the guest's clock includes the host's scheduling of its vCPU threads: the
    # host's load is part of what the checks saw (printed beside the table).
    LAB_HOST_LOAD=$(cut -d' ' -f1-3 /proc/loadavg)
    lab_say "$kind: booting $pkg ($names; at most ${limit}s; host load average $LAB_HOST_LOAD)"
    # The data disk has one queue: one interrupt, which irqaffinity= keeps off the isolated CPU
    # (with a queue per CPU, the second queue's managed interrupt lands on CPU 1).
    # shellcheck disable=SC2086
    qemu-system-x86_64 $LAB_ACCEL -smp 2 -m 2048 -display none -monitor none \
        -serial "file:$dir/console.log" -no-reboot -nic none \
        -kernel "$dir/vmlinuz" -initrd "$dir/initrd" -append "$append" \
        -drive "file=$dir/data.img,format=raw,if=none,id=data" \
        -device virtio-blk-pci,drive=data,num-queues=1 </dev/null >"$dir/qemu.log" 2>&1 &
    LAB_QEMU_PID=$!
    local waited=0 rc=0
    while kill -0 "$LAB_QEMU_PID" 2>/dev/null; do
        if ((waited >= limit)); then
            kill -KILL "$LAB_QEMU_PID" 2>/dev/null || true
            LAB_BOOT_PROBLEM="the guest was still running after ${limit}s and was stopped"
            break
        fi
        sleep 1
        waited=$((waited + 1))
    done
    wait "$LAB_QEMU_PID" || rc=$?
    LAB_QEMU_PID=
    exec {lock}>&-
    lab_say "$kind: guest gone after ${waited}s (qemu exit $rc)"
    if [[ -z $LAB_BOOT_PROBLEM ]] && ! grep -q '=== lab: results written' "$dir/console.log" 2>/dev/null; then
        LAB_BOOT_PROBLEM="the guest did not write its results (qemu exit $rc: $(tail -c 300 "$dir/qemu.log" | tr '\n' ' '); console: $(tr -d '\r' <"$dir/console.log" 2>/dev/null | grep -v '^$' | tail -3 | tr '\n' ' '))"
    fi
    tar -xf "$dir/data.img" -C "$dir/results" 2>/dev/null || true
    rm -f "$dir/data.img" "$dir/initrd" "$dir/vmlinuz" "$dir/modules.cpio.gz"
    [[ -z $LAB_BOOT_PROBLEM ]]
}

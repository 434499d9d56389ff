#!/usr/bin/env bash
# jitterlab's armv7 build on a real 32-bit board kernel: boots Debian's armv7 kernel (armmp,
# PREEMPT_RT by default) in qemu-system-arm (`-M virt`, 2 CPUs), with an initramfs holding only
# busybox and the static armv7 binary, and runs there:
#
#   jitterlab doctor
#   jitterlab run --duration 3s --trace --out /tmp/auto            (back end chosen: auto)
#   jitterlab run --duration 1s --trace --trace-backend bpf ...     (bpf asked for by name)
#
# Debian's armhf kernels have BPF but no BTF (CONFIG_DEBUG_INFO_BTF is not set), which is the
# case of issue 27 "where a board kernel has no BTF, auto falls back to tracefs with a stated
# reason": the auto run must trace with tracefs and say why; the bpf run must be refused with
# the reason. The script checks both and exits 1 when either does not hold.
#
# Not part of `.ci/run`: it downloads the kernel and busybox packages (apt, armhf) and runs
# for a few minutes under emulation. Needs qemu-system-arm, dpkg-deb, cpio, gzip, the armhf
# architecture in dpkg (`dpkg --add-architecture armhf && apt-get update`), and the armv7
# build (`cargo build --release --target armv7-unknown-linux-gnueabihf`, as ci/cross.sh).
#
# Environment:
#   KERNEL_PACKAGE=linux-image-6.1.0-47-rt-armmp   the armhf kernel package (a .deb name)
#   BINARY=target/armv7-unknown-linux-gnueabihf/release/jitterlab
#   WORK=dir        where the packages and the initramfs go (default: a temporary directory)
#   KEEP_LOG=file   keep the console log there
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
KERNEL_PACKAGE=${KERNEL_PACKAGE:-linux-image-6.1.0-47-rt-armmp}
BINARY=${BINARY:-$root/target/armv7-unknown-linux-gnueabihf/release/jitterlab}
die() { echo "${0##*/}: $*" >&2; exit 1; }
for tool in qemu-system-arm dpkg-deb cpio gzip apt-get; do
    command -v "$tool" >/dev/null || die "$tool not found"
done
[[ -x $BINARY ]] || die "no armv7 binary at $BINARY: cargo build --release --target armv7-unknown-linux-gnueabihf"
dpkg --print-foreign-architectures | grep -qx armhf ||
    die "dpkg does not know armhf: dpkg --add-architecture armhf && apt-get update"
work=${WORK:-}
if [[ -z $work ]]; then
    work=$(mktemp -d "${TMPDIR:-/tmp}/board-kernel.XXXXXX")
    trap 'rm -rf "$work"' EXIT
fi
mkdir -p "$work"
cd "$work"

# The packages, unpacked.
for pkg in "$KERNEL_PACKAGE:armhf" busybox-static:armhf; do
    ls "${pkg%%:*}"_*_armhf.deb >/dev/null 2>&1 || apt-get download -q -o APT::Sandbox::User=root "$pkg" >/dev/null ||
        die "cannot download $pkg"
done
rm -rf unpacked && mkdir -p unpacked/kernel unpacked/busybox
dpkg-deb -x "$KERNEL_PACKAGE"_*_armhf.deb unpacked/kernel
dpkg-deb -x busybox-static_*_armhf.deb unpacked/busybox
kernel=$(ls unpacked/kernel/boot/vmlinuz-*)
config=$(ls unpacked/kernel/boot/config-*)
btf=$(grep -c '^CONFIG_DEBUG_INFO_BTF=y' "$config" || true)

# The initramfs: busybox, jitterlab, an init that runs the three commands and powers off.
rm -rf initramfs && mkdir -p initramfs/{bin,proc,sys,tmp,dev}
cp unpacked/busybox/bin/busybox initramfs/bin/
cp "$BINARY" initramfs/jitterlab
cat >initramfs/init <<'EOF'
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tmpfs tmp /tmp
mount -t tracefs tracefs /sys/kernel/tracing
echo "=== uname: $(uname -a)"
echo "=== jitterlab doctor"
/jitterlab doctor
echo "=== jitterlab run --trace (auto)"
/jitterlab run --duration 3s --trace --out /tmp/auto
echo "=== exit $?"
echo "=== run.json trace:"
tr ',' '\n' </tmp/auto/run.json | grep -E '"(backend|backend_reason|events_read|events_lost)"'
echo "=== jitterlab run --trace --trace-backend bpf"
/jitterlab run --duration 1s --trace --trace-backend bpf --out /tmp/bpf
echo "=== exit $?"
poweroff -f
EOF
chmod +x initramfs/init
(cd initramfs && find . | cpio -o -H newc --quiet | gzip -1) >initramfs.cpio.gz

echo "booting $(basename "$kernel") (BTF: $([[ $btf == 1 ]] && echo yes || echo no)) in qemu-system-arm ..." >&2
log=$work/console.log
timeout 900 qemu-system-arm -M virt -cpu cortex-a15 -smp 2 -m 1024 -nographic -no-reboot -nic none \
    -kernel "$kernel" -initrd initramfs.cpio.gz -append "console=ttyAMA0 rdinit=/init quiet" \
    </dev/null >"$log" 2>&1 || true
[[ -n ${KEEP_LOG:-} ]] && cp "$log" "$KEEP_LOG"
sed -n '/^=== uname/,$p' "$log" | tr -d '\r'

# The checks: with no BTF, auto traced with tracefs and said why; bpf by name was refused.
section() { tr -d '\r' <"$log" | sed -n "/^=== $1\$/,/^=== exit/p"; }
auto=$(tr -d '\r' <"$log" | sed -n '/^=== run.json trace:/,/^===/p')
grep -q '"backend": *"tracefs"' <<<"$auto" || die "the auto run did not trace with tracefs"
grep -q '"backend_reason": *"[^"]*BTF' <<<"$auto" || die "the auto run's reason does not name BTF"
section "jitterlab run --trace (auto)" | grep -q '^=== exit 0$' || die "the auto run failed"
bpf=$(section "jitterlab run --trace --trace-backend bpf")
grep -q '^=== exit 0$' <<<"$bpf" && die "the bpf run was not refused on a kernel without BTF"
grep -qi 'BTF' <<<"$bpf" || die "the bpf run's refusal does not name BTF"
echo "board kernel: auto fell back to tracefs with its reason; bpf refused with its reason" >&2

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
# One host thread per vCPU, also for the standard kernel, whose guests locked up under it
# when a tracepoint was rewritten while the other CPU ran through it: those guests hold the
# traced events instead (guest/init, lab.keep_tracepoints). One thread for all vCPUs
# (thread=single) did not lock up either, but qemu then runs a busy vCPU up to 100 ms before
# the other: check 1f failed twice so at a host load of 3.5 (stop 61, docs/lab.md).
LAB_ACCEL=${LAB_ACCEL:-"-accel tcg -cpu max"}
# More kernel parameters for every guest, after the lab's own (`loglevel=7` shows the stacks
# of a soft lockup, which `quiet` keeps off the console): for diagnosing a guest, not for a
# lab whose verdicts count (a parameter can change what a check measures).
LAB_APPEND=${LAB_APPEND:-}

# The kernels' architectures: arm64 is Debian's RT arm64 kernel in qemu-system-aarch64's
# `virt` machine (TCG, `-cpu max`: every feature qemu emulates), with the static aarch64
# build and an arm64 busybox; the others are amd64. What differs per architecture: the
# emulator and its machine, the serial console's name, the binary, busybox's package.
lab_arch() { [[ $1 == arm64 ]] && echo arm64 || echo amd64; }
declare -A LAB_QEMU=([amd64]=qemu-system-x86_64 [arm64]=qemu-system-aarch64)
declare -A LAB_MACHINE=([amd64]="" [arm64]="-M virt")
declare -A LAB_CONSOLE=([amd64]=ttyS0 [arm64]=ttyAMA0)
declare -A LAB_RUST_TARGET=([amd64]=x86_64-unknown-linux-musl [arm64]=aarch64-unknown-linux-musl)

# A check that needs a guest of its own says so here, by its name: `smp=N` boots it in a
# guest of N CPUs, `nic=virtio` in a guest with a network card (qemu's user-mode network, a
# virtio-net card; the other guests have none). The others share one guest of 2 CPUs per
# kernel, CI's short part among them. Set by the checks' host files (ci/lab/checks/NAME.sh),
# read by lab_guests.
declare -A LAB_GUEST=()
LAB_SMP=2
# The cards `nic=` offers: qemu's model and the guest's module for it.
declare -A LAB_NIC_MODEL=([virtio]=virtio-net-pci) LAB_NIC_MODULE=([virtio]=virtio_net)

# The guests that run checks $2... (names) on kernel $1: one line per guest, `label|settings|
# name,name,...`, the checks without settings first (in one guest labelled by the kernel),
# then one guest per setting (labelled kernel.setting, e.g. rt.smp16).
lab_guests() {
    local kind=$1 n s
    shift
    local -a plain=() order=()
    local -A by=()
    for n in "$@"; do
        s=${LAB_GUEST[$n]:-}
        if [[ -z $s ]]; then
            plain+=("$n")
        else
            [[ -v by[$s] ]] || order+=("$s")
            by[$s]+=${by[$s]:+,}$n
        fi
    done
    if ((${#plain[@]})); then
        local IFS=,
        echo "$kind||${plain[*]}"
    fi
    local name
    for s in "${order[@]}"; do
        name=${s//=/}
        echo "$kind.${name//,/.}|$s|${by[$s]}"
    done
}

# The programs of the comparison tools in the guest (their packages' paths), and util-linux's
# chrt (busybox has none): checks 1c-1f list the run's threads from a shell at SCHED_FIFO 2,
# above jitterlab's own FIFO 1 threads on CPU 0, which starved a SCHED_OTHER listing for whole
# runs under TCG (trace-methods.lib).
LAB_TOOL_PACKAGES="rtla rt-tests stress-ng util-linux"
LAB_TOOL_PROGRAMS=(usr/bin/rtla usr/bin/cyclictest usr/bin/hackbench usr/bin/oslat usr/bin/stress-ng usr/bin/chrt)

# The static jitterlab for architecture $1 (amd64, arm64): BINARY (amd64) or BINARY_ARM64 when
# given, else this tree's release build for the musl target, built once. Sets LAB_BIN[$1].
declare -A LAB_BIN=()
lab_binary() {
    local arch=$1 given target
    target=${LAB_RUST_TARGET[$arch]}
    given=$([[ $arch == arm64 ]] && echo "${BINARY_ARM64:-}" || echo "${BINARY:-}")
    if [[ -z $given ]]; then
        lab_say "building the static musl binary (cargo build --release --target $target)"
        (cd "$root" && cargo build -q --release --target "$target") ||
            lab_die 3 "the $target build failed (rustup target add $target if the target is missing$([[ $arch == arm64 ]] && echo "; the linker aarch64-linux-gnu-gcc of .cargo/config.toml comes with gcc-aarch64-linux-gnu"))"
        given=$root/target/$target/release/jitterlab
    fi
    [[ -x $given ]] || lab_die 3 "no jitterlab binary at $given"
    LAB_BIN[$arch]=$given
}

# Builds the part of the initramfs every kernel of architecture $1 shares, once, as
# $LAB_WORK/common-$1.cpio.gz: busybox, jitterlab, the init and the checks' guest parts; on
# amd64 also the comparison tools with their libraries (the arm64 checks need none).
lab_build_common() {
    local arch=$1 cpio=$LAB_WORK/common-$1.cpio.gz ir=$LAB_WORK/initramfs-$1 f files=
    [[ -f $cpio ]] && return 0
    lab_binary "$arch"
    mkdir -p "$ir"/{bin,proc,sys,dev,tmp,lab/checks}
    lab_fetch_arch "$arch" busybox-static
    dpkg-deb -x "$(lab_cached busybox-static "$arch")" "$LAB_WORK/busybox"
    cp "$LAB_WORK/busybox/bin/busybox" "$ir/bin/"
    cp "${LAB_BIN[$arch]}" "$ir/jitterlab"
    cp "$lab/guest/init" "$ir/init"
    cp "$lab/guest/slots.sh" "$ir/lab/"
    cp "$lab"/checks/*.guest.sh "$lab"/checks/*.lib "$ir/lab/checks/"
    if [[ $arch == amd64 ]]; then
        lab_say "unpacking $LAB_TOOL_PACKAGES and the libraries they need"
        files=$(lab_unpack_programs "$LAB_TOOL_PACKAGES" "$LAB_WORK/sysroot" "${LAB_TOOL_PROGRAMS[@]}")
        for f in $files; do
            lab_copy_from_root "$LAB_WORK/sysroot" "$f" "$ir/$f"
        done
    fi
    rm -rf "$LAB_WORK/sysroot" "$LAB_WORK/busybox"
    (cd "$ir" && find . | cpio -o -H newc --quiet | gzip -1) >"$cpio"
    rm -rf "$ir"
    lab_say "initramfs ($arch): $(du -h "$cpio" | cut -f1)$([[ -n $files ]] && echo " ($(wc -w <<<"$files") files of the tools)")"
}

# Makes what the guest labelled $1 (lab_guests: the kernel's kind, rt, standard or arm64,
# then its setting, e.g. rt.smp16) boots: kernel package $2's kernel and an initramfs (the
# architecture's common part, the kernel's modules) in $3, and the guest settings $4
# (LAB_GUEST) as LAB_GUEST_SMP, LAB_GUEST_MEM, LAB_GUEST_NIC, LAB_GUEST_PARAMS (more boot
# parameters: `keep_tracepoints` gives lab.keep_tracepoints=1, guest/init). Outside lab_boot so that any failure here
# stops the lab (set -e) instead of showing as a guest that did not report.
lab_guest_setup() {
    local label=$1 pkg=$2 dir=$3 settings=$4 arch s
    arch=$(lab_arch "${label%%.*}")
    LAB_GUEST_SMP=$LAB_SMP
    LAB_GUEST_NIC=
    LAB_GUEST_PARAMS=
    for s in ${settings//,/ }; do
        case $s in
            smp=*) LAB_GUEST_SMP=${s#smp=} ;;
            nic=*) LAB_GUEST_NIC=${s#nic=}
                [[ -v LAB_NIC_MODEL[$LAB_GUEST_NIC] ]] || lab_die 2 "unknown card '$LAB_GUEST_NIC' of the guest $label (nic=virtio)" ;;
            keep_tracepoints) LAB_GUEST_PARAMS+=" lab.keep_tracepoints=1" ;;
            *) lab_die 2 "unknown guest setting '$s' of the guest $label (smp=N, nic=virtio, keep_tracepoints)" ;;
        esac
    done
    # The kernel's per-CPU data and each CPU's trace buffers grow with the CPUs.
    LAB_GUEST_MEM=2048
    ((LAB_GUEST_SMP > 16)) && LAB_GUEST_MEM=4096
    command -v "${LAB_QEMU[$arch]}" >/dev/null ||
        lab_die 3 "${LAB_QEMU[$arch]} not found: install $([[ $arch == arm64 ]] && echo qemu-system-arm || echo qemu-system-x86) (as root: apt-get install ...)"
    lab_build_common "$arch"
    mkdir -p "$dir/results"
    lab_unpack_kernel "$pkg" "$dir/kernel" "$arch"
    lab_modules "$dir/kernel" "$dir/modules" virtio_pci virtio_blk ${LAB_GUEST_NIC:+${LAB_NIC_MODULE[$LAB_GUEST_NIC]}}
    (cd "$dir/modules" && find . | cpio -o -H newc --quiet | gzip -1) >"$dir/modules.cpio.gz"
    # Two cpio archives, one after the other, make one initramfs.
    cat "$LAB_WORK/common-$arch.cpio.gz" "$dir/modules.cpio.gz" >"$dir/initrd"
    # qemu boots arm64's Image as it is; should a package ship it gzipped (vmlinuz.gz style),
    # it is unpacked first (qemu-system-aarch64 7.2 does not unpack a gzipped Image itself).
    if [[ $(head -c2 "$dir"/kernel/boot/vmlinuz-* | od -An -tx1 | tr -d ' ') == 1f8b ]]; then
        gzip -dc "$dir"/kernel/boot/vmlinuz-* >"$dir/vmlinuz"
    else
        cp "$dir"/kernel/boot/vmlinuz-* "$dir/vmlinuz"
    fi
    rm -rf "$dir/kernel" "$dir/modules" "$dir/modules.cpio.gz"
}

# The size of each slot of the data disk, MiB (guest/slots.sh): a check's results are a few MiB
# (the raw captures of 1c and 1d the most, about 10).
LAB_SLOT_MB=128
# How long a CPU of the guest may be stuck (the kernel's soft lockup report) before the guest
# is taken for locked up. Under TCG on a loaded host a vCPU can stall for tens of seconds and
# go on; two minutes without scheduling is more than any check can absorb (240 s each).
LAB_LOCKUP_SECONDS=120
LAB_GUEST_LOCKED_UP=

# lab_read_slots IMAGE DIR: unpacks into DIR every slot of the data disk IMAGE whose header
# the guest wrote (guest/slots.sh: after the slot's archive, so a slot without one was not
# finished).
lab_read_slots() {
    local img=$1 to=$2 k=0 tag= size= what=
    [[ -f $img ]] || return 0
    while (((k + 1) * LAB_SLOT_MB * 1048576 <= $(stat -c %s "$img"))); do
        tag= size= what=
        read -r tag size what < <(dd if="$img" bs=512 skip=$((k * LAB_SLOT_MB * 2048)) count=1 2>/dev/null | tr -d '\0') || true
        if [[ $tag == lab-slot && $size =~ ^[0-9]+$ ]]; then
            dd if="$img" bs=1M skip=$((k * LAB_SLOT_MB + 1)) iflag=count_bytes count="$size" 2>/dev/null |
                tar -xf - -C "$to" 2>/dev/null || lab_say "the guest's saved $what could not be unpacked"
        fi
        k=$((k + 1))
    done
}

# lab_locked_up CONSOLE: prints the kernel's soft lockup report and succeeds when a CPU of the
# guest has been stuck for LAB_LOCKUP_SECONDS or more.
lab_locked_up() {
    local line
    [[ -f $1 ]] || return 1
    line=$(tr -d '\r' <"$1" 2>/dev/null | grep -o 'soft lockup - CPU#[0-9]* stuck for [0-9]*s! \[[^]]*\]' | tail -1)
    [[ $line =~ stuck\ for\ ([0-9]+)s ]] && ((BASH_REMATCH[1] >= LAB_LOCKUP_SECONDS)) && echo "$line"
}

# lab_silent CONSOLE SECONDS: succeeds when the guest's console has not been written for
# SECONDS (by its time of last change).
lab_silent() {
    [[ -f $1 ]] && (($(date +%s) - $(stat -c %Y "$1") >= $2))
}

# lab_current_check CONSOLE: the check the guest had begun last, with its last progress line.
lab_current_check() {
    local check step
    check=$(tr -d '\r' <"$1" | sed -n 's/^=== lab: check \([^ ]*\)\( (uptime.*\)\{0,1\}$/\1/p' | tail -1) || true
    step=$(tr -d '\r' <"$1" | sed -n 's/^=== lab: \([0-9.]* s: .*\)/\1/p' | tail -1) || true
    echo "check ${check:-(none begun)}${step:+ (its last step: $step)}"
}

# Boots the guest labelled $1 that lab_guest_setup made in $3 (kernel package $2) with boot
# parameters $4 and runs the checks $5... (their names); the guest's results land in
# $3/results, its console in $3/console.log. Returns non-zero, with LAB_BOOT_PROBLEM saying
# why, when the guest did not bring its results back.
lab_boot() {
    local label=$1 pkg=$2 dir=$3 params=$4
    shift 4
    local names=$* arch smp=$LAB_GUEST_SMP mem=$LAB_GUEST_MEM nic="-nic none"
    [[ -n ${LAB_GUEST_NIC:-} ]] && nic="-nic user,model=${LAB_NIC_MODEL[$LAB_GUEST_NIC]}"
    arch=$(lab_arch "${label%%.*}")
    LAB_BOOT_PROBLEM= LAB_GUEST_SECONDS=
    # A slot for the guest's first files, one per check, one for its dmesg (guest/init).
    truncate -s $((($# + 2) * LAB_SLOT_MB))M "$dir/data.img"
    # A guest of more than 8 CPUs gets smp/8 times each check's limit: under TCG its vCPUs
    # share this host's cores (check 7's 16-CPU guest: a 5 s traced run took 118 s at a host
    # load of 6.6, its start-up 25 s of it).
    LAB_GUEST_CHECK_LIMIT=$LAB_CHECK_LIMIT
    ((smp > 8)) && LAB_GUEST_CHECK_LIMIT=$((LAB_CHECK_LIMIT * smp / 8))
    local limit=$((LAB_GUEST_CHECK_LIMIT * $# + 180))
    params+=${LAB_GUEST_PARAMS:-}
    local append="console=${LAB_CONSOLE[$arch]} rdinit=/init quiet panic=-1 lab.checks=${names// /,} lab.limit=$LAB_GUEST_CHECK_LIMIT lab.slot_mb=$LAB_SLOT_MB $params${LAB_APPEND:+ $LAB_APPEND}"
    # Held while the guest measures, so that no measuring test of the host runs beside it
    # (tests/common exclusive()); released when the guest is gone.
    local lock
    exec {lock}>>"$LAB_LOCK"
    lab_say "$label: waiting for $LAB_LOCK"
    flock "$lock"
    # Under TCG the guest's clock includes the host's scheduling of its vCPU threads: the
    # host's load is part of what the checks saw (printed beside the table).
    LAB_HOST_LOAD=$(cut -d' ' -f1-3 /proc/loadavg)
    lab_say "$label: booting $pkg, $smp CPUs ($names; at most ${limit}s; host load average $LAB_HOST_LOAD; $LAB_ACCEL${LAB_APPEND:+; LAB_APPEND: $LAB_APPEND})"
    # The data disk has one queue: one interrupt, which irqaffinity= keeps off the isolated CPU
    # (with a queue per CPU, the second queue's managed interrupt lands on CPU 1).
    # shellcheck disable=SC2086
    ${LAB_QEMU[$arch]} ${LAB_MACHINE[$arch]} $LAB_ACCEL -smp "$smp" -m "$mem" -display none -monitor none \
        -serial "file:$dir/console.log" -no-reboot $nic \
        -kernel "$dir/vmlinuz" -initrd "$dir/initrd" -append "$append" \
        -drive "file=$dir/data.img,format=raw,if=none,id=data" \
        -device virtio-blk-pci,drive=data,num-queues=1 </dev/null >"$dir/qemu.log" 2>&1 &
    LAB_QEMU_PID=$!
    local waited=0 rc=0 stuck
    LAB_GUEST_LOCKED_UP=
    while kill -0 "$LAB_QEMU_PID" 2>/dev/null; do
        if ((waited >= limit)); then
            kill -KILL "$LAB_QEMU_PID" 2>/dev/null || true
            LAB_BOOT_PROBLEM="the guest was still running after ${limit}s and was stopped in $(lab_current_check "$dir/console.log")"
            break
        fi
        # A CPU of the guest that has not scheduled for LAB_LOCKUP_SECONDS will not again
        # (seen on the standard 6.1 kernel under TCG: a tracefs instance's removal or the BPF
        # programs' attachment waiting for a CPU that never answers): the guest is stopped
        # then, not at its limit, and the checks it had not finished may boot again.
        if ((waited % 10 == 0)) && stuck=$(lab_locked_up "$dir/console.log"); then
            kill -KILL "$LAB_QEMU_PID" 2>/dev/null || true
            LAB_GUEST_LOCKED_UP=1
            LAB_BOOT_PROBLEM="the guest's kernel locked up ($stuck) in $(lab_current_check "$dir/console.log") and was stopped after ${waited}s"
            break
        fi
        # A console silent for twice a check's limit: the guest's own limit would have ended
        # the check and said so by then. Seen on the standard kernel (stop 60): both vCPUs
        # busy, the guest's clock stopped at 52 s in check 1c for minutes, so that its soft
        # lockup watchdog, which counts the guest's time, never spoke.
        if ((waited % 10 == 0 && waited > 60)) && lab_silent "$dir/console.log" $((2 * LAB_GUEST_CHECK_LIMIT)); then
            kill -KILL "$LAB_QEMU_PID" 2>/dev/null || true
            LAB_GUEST_LOCKED_UP=1
            LAB_BOOT_PROBLEM="the guest's console was silent for $((2 * LAB_GUEST_CHECK_LIMIT)) s (its kernel stopped, its clock with it) in $(lab_current_check "$dir/console.log"), and it was stopped after ${waited}s"
            break
        fi
        sleep 1
        waited=$((waited + 1))
    done
    wait "$LAB_QEMU_PID" || rc=$?
    LAB_QEMU_PID=
    exec {lock}>&-
    lab_say "$label: guest gone after ${waited}s (qemu exit $rc)"
    LAB_GUEST_SECONDS=$waited
    if [[ -z $LAB_BOOT_PROBLEM ]] && ! grep -q '=== lab: results written' "$dir/console.log" 2>/dev/null; then
        LAB_BOOT_PROBLEM="the guest did not write its results (qemu exit $rc: $(tail -c 300 "$dir/qemu.log" | tr '\n' ' '); console: $(tr -d '\r' <"$dir/console.log" 2>/dev/null | grep -v '^$' | tail -3 | tr '\n' ' '))"
    fi
    lab_read_slots "$dir/data.img" "$dir/results"
    rm -f "$dir/data.img" "$dir/initrd" "$dir/vmlinuz"
    [[ -z $LAB_BOOT_PROBLEM ]]
}

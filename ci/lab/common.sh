# Sourced by ci/lab.sh: messages, the one cleanup of every exit path, the host's tools.

lab_say() { echo "lab: $*" >&2; }

# Exit codes (as jitterlab's own): 1 a check failed or did not run, 2 bad usage,
# 3 this host cannot run the lab (no qemu, no packages, no build).
lab_die() {
    local code=$1
    shift
    echo "lab: $*" >&2
    exit "$code"
}

# Every guest and every temporary file goes through these: LAB_QEMU_PID is the one guest
# running (killed, then reaped), LAB_WORK the one temporary directory (removed). The trap is
# set before either exists, so no exit path (an error, ^C, SIGTERM, a timeout) leaves them.
# LAB_OUT is --out's directory, made at the start: removed again here when the lab ends before
# a guest's results are in it (rmdir: only when empty).
#
# The one EXIT trap: nothing else may be chained before it. `set -e` holds in a trap too, so a
# step that returned the exit status (non-zero on every failing exit) ended the trap there:
# a SIGTERM'd lab left its guest running and its temporary directory behind (stop 59).
LAB_QEMU_PID=
LAB_WORK=
LAB_OUT=
lab_cleanup() {
    local rc=$?
    trap - EXIT INT TERM HUP
    set +e
    if [[ -n $LAB_QEMU_PID ]]; then
        kill -KILL "$LAB_QEMU_PID" 2>/dev/null || true
        wait "$LAB_QEMU_PID" 2>/dev/null || true
        LAB_QEMU_PID=
    fi
    if [[ -n $LAB_WORK && -d $LAB_WORK ]]; then
        rm -rf -- "$LAB_WORK"
    fi
    [[ -n $LAB_OUT ]] && rmdir -- "$LAB_OUT" 2>/dev/null
    exit "$rc"
}
lab_traps() {
    trap lab_cleanup EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    trap 'exit 129' HUP
}

# The host's tools, all checked before anything is downloaded or booted (a lab that died at its
# last kernel for want of that kernel's emulator lost the verdicts of every guest before it): the
# emulator of each chosen kernel's architecture (\$@: the kernels), installed with apt when
# missing and we are root (the lab's one install), and a given BINARY / BINARY_ARM64; anything
# else missing is named with the package that brings it.
lab_need_tools() {
    local k arch emu pkg given
    local -A seen=()
    for k in "$@"; do
        arch=$(lab_arch "$k")
        [[ -v seen[$arch] ]] && continue
        seen[$arch]=1
        emu=${LAB_QEMU[$arch]}
        pkg=$([[ $arch == arm64 ]] && echo qemu-system-arm || echo qemu-system-x86)
        if ! command -v "$emu" >/dev/null; then
            if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
                lab_say "$emu not found: installing $pkg with apt-get"
                DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$pkg" >&2 ||
                    lab_die 3 "cannot install $pkg for the $k kernel (apt-get install failed; run apt-get update, or install it by hand)"
            else
                lab_die 3 "$emu not found, needed for the $k kernel: install $pkg (as root: apt-get install $pkg), or leave $k out of --kernels"
            fi
        fi
        given=$([[ $arch == arm64 ]] && echo "${BINARY_ARM64:-}" || echo "${BINARY:-}")
        [[ -z $given || -x $given ]] ||
            lab_die 3 "no executable jitterlab at $given ($([[ $arch == arm64 ]] && echo BINARY_ARM64 || echo BINARY), for the $k kernel): give a static build, or leave it unset to build one"
    done
    local tool pkg missing=()
    for tool in apt-get:apt apt-cache:apt dpkg-deb:dpkg cpio:cpio gzip:gzip tar:tar jq:jq \
        readelf:binutils objcopy:binutils flock:util-linux truncate:coreutils; do
        command -v "${tool%%:*}" >/dev/null || missing+=("${tool%%:*} (package ${tool#*:})")
    done
    ((${#missing[@]} == 0)) || lab_die 3 "missing on this host: ${missing[*]}"
}

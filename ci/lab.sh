#!/usr/bin/env bash
# The PREEMPT_RT lab (issue 40; docs/lab.md): boots Debian's PREEMPT_RT kernel and the
# standard kernel of the same version in qemu-system-x86_64 (TCG) with an initramfs of
# busybox, this tree's static musl jitterlab, and rtla, rt-tests and stress-ng with their
# libraries; runs the checks inside; brings their results back on a data disk; prints one
# table: check x kernel -> passed / failed / not run.
#
# Usage: ci/lab.sh [--short] [--checks ID,...] [--kernels rt,standard] [--out DIR] [--list]
#   --short    the RT kernel only, the short checks (CI's part)
#   --out DIR  keep every check's result directory and each guest's console log in DIR (a new
#              directory; an existing one is refused)
# Environment: LAB_CACHE (downloads; default ~/.cache/jitterlab-lab), LAB_KERNEL_ABI (e.g.
# 6.1.0-56), BINARY (a static x86_64 jitterlab instead of building one), LAB_LOCK (default
# /tmp/jitterlab-measuring-tests.lock, held while a guest measures).
#
# Exit: 0 every check ran and passed; 1 a check failed or did not run; 2 bad usage; 3 this
# host cannot run the lab (qemu, packages or the build missing).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
lab=$root/ci/lab
source "$lab/common.sh"
source "$lab/packages.sh"
source "$lab/boot.sh"
for f in "$lab"/checks/*.sh; do
    [[ $f == *.guest.sh ]] || source "$f"
done

# The checks: id, whether --short runs it, its files in ci/lab/checks (NAME.guest.sh runs in
# the guest, verdict_NAME judges on the host), the kernels it runs on, and what it proves.
LAB_CHECKS=(
    "1a|short|trace-tracefs|rt standard|run --trace (tracefs): 20 ms spikes found, split, blamed"
    "1b|short|trace-bpf|rt standard|run --trace (bpf): 20 ms spikes found, split, blamed"
    "1c|long|trace-below|rt standard|run --trace, 9 timer wake methods, spike below (ktimers)"
    "1d|long|trace-above|rt standard|run --trace, 9 timer wake methods, spike above"
    "3|long|noise|rt standard|noise beside rtla osnoise, 1% injected"
    "4|short|cpuset|rt standard|cgroup v2 --cpuset-partition: made, gone, SIGKILL, refused"
    "5|short|doctor|rt standard|doctor: isolation and preemption settled by the RT boot"
)
# The kernels: the boot parameters an RT user sets on the RT one (doctor's own fix for an
# isolated CPU 1); none on the standard one, where check 5 expects the same checks to fail.
declare -A LAB_PARAMS=(
    [rt]="isolcpus=domain,managed_irq,1 nohz_full=1 rcu_nocbs=1 irqaffinity=0"
    [standard]=""
)
LAB_CHECK_LIMIT=240

usage() { sed -n '9,14p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
short=
only=
kernels="rt standard"
out=
while (($#)); do
    case $1 in
        --short) short=1 ;;
        --checks) only=${2:?--checks needs a list}; shift ;;
        --kernels) kernels=${2//,/ }; shift ;;
        --out) out=${2:?--out needs a directory}; shift ;;
        --list) printf '%s\n' "${LAB_CHECKS[@]}" | awk -F'|' '{printf "%-4s %-6s %-15s %s\n", $1, $2, $4, $5}'; exit 0 ;;
        -h | --help) usage ;;
        *) echo "lab: unknown argument $1" >&2; usage ;;
    esac
    shift
done
[[ -n $short ]] && kernels=rt
for k in $kernels; do [[ -v LAB_PARAMS[$k] ]] || lab_die 2 "no kernel '$k' (rt, standard)"; done
if [[ -n $out ]]; then
    [[ -e $out || -L $out ]] && lab_die 2 "--out $out exists: give a new directory (results are never overwritten)"
fi

# The checks chosen: "id|name|kernels|title".
chosen=()
for c in "${LAB_CHECKS[@]}"; do
    IFS='|' read -r id s name ks title <<<"$c"
    [[ -n $short && $s != short ]] && continue
    [[ -n $only && ",$only," != *",$id,"* ]] && continue
    chosen+=("$id|$name|$ks|$title")
done
((${#chosen[@]})) || lab_die 2 "no check chosen (--list shows them)"

lab_traps
lab_need_tools
LAB_CACHE=${LAB_CACHE:-$HOME/.cache/jitterlab-lab}
LAB_LOCK=${LAB_LOCK:-/tmp/jitterlab-measuring-tests.lock}
LAB_WORK=$(mktemp -d "${TMPDIR:-/tmp}/jitterlab-lab.XXXXXX")
started=$SECONDS

# This tree's static build.
if [[ -z ${BINARY:-} ]]; then
    lab_say "building the static musl binary (cargo build --release --target x86_64-unknown-linux-musl)"
    (cd "$root" && cargo build -q --release --target x86_64-unknown-linux-musl) ||
        lab_die 3 "the musl build failed (rustup target add x86_64-unknown-linux-musl if the target is missing)"
    BINARY=$root/target/x86_64-unknown-linux-musl/release/jitterlab
fi
[[ -x $BINARY ]] || lab_die 3 "no jitterlab binary at $BINARY"

# The packages, then one initramfs part for all kernels and one with each kernel's modules.
lab_kernel_packages
lab_say "kernels: $LAB_KERNEL_RT, $LAB_KERNEL_STANDARD; cache: $LAB_CACHE"
lab_build_common "$LAB_WORK/common.cpio.gz" "${chosen[@]}"

declare -A result=() reason=() uname_v=() took=() load=()
for kind in $kernels; do
    pkg=$LAB_KERNEL_RT
    [[ $kind == standard ]] && pkg=$LAB_KERNEL_STANDARD
    ids=()
    for c in "${chosen[@]}"; do
        IFS='|' read -r id name ks title <<<"$c"
        [[ " $ks " == *" $kind "* ]] && ids+=("$name")
    done
    ((${#ids[@]})) || continue
    guest=$LAB_WORK/$kind
    t0=$SECONDS
    lab_boot "$kind" "$pkg" "$guest" "${LAB_PARAMS[$kind]}" "${ids[@]}" || true
    took[$kind]=$((SECONDS - t0))
    load[$kind]=${LAB_HOST_LOAD:-?}
    uname_v[$kind]=$(cat "$guest/results/uname-v" 2>/dev/null || echo "(the guest did not report)")
    for c in "${chosen[@]}"; do
        IFS='|' read -r id name ks title <<<"$c"
        [[ " $ks " == *" $kind "* ]] || continue
        dir=$guest/results/$name
        if [[ ! -f $dir/exit ]]; then
            result[$id.$kind]="not run"
            reason[$id.$kind]=${LAB_BOOT_PROBLEM:-"the guest did not finish it"}
        elif [[ $(cat "$dir/exit") != 0 ]]; then
            result[$id.$kind]="not run"
            reason[$id.$kind]="its guest part exited $(cat "$dir/exit") (143: stopped at its time limit of ${LAB_CHECK_LIMIT} s): $(tail -1 "$dir/log")"
        elif why=$("verdict_$name" "$dir" "$kind" 2>&1); then
            result[$id.$kind]=passed
            reason[$id.$kind]=$why
        else
            result[$id.$kind]=failed
            reason[$id.$kind]=$why
        fi
    done
    if [[ -n $out ]]; then
        mkdir -p "$out"
        mkdir "$out/$kind"
        cp -r "$guest/results/." "$out/$kind/" 2>/dev/null || true
        cp "$guest/console.log" "$out/$kind/console.log" 2>/dev/null || true
    fi
done

# The table, then what each verdict rests on.
echo
for kind in $kernels; do
    [[ -v took[$kind] ]] || continue
    echo "$kind: $([[ $kind == rt ]] && echo "$LAB_KERNEL_RT" || echo "$LAB_KERNEL_STANDARD"), uname -v: ${uname_v[$kind]} (boot and checks: ${took[$kind]} s; host load average ${load[$kind]}; parameters: ${LAB_PARAMS[$kind]:-none})"
done
echo
printf '%-4s %-62s' check ""
for kind in $kernels; do printf ' %-10s' "$kind"; done
echo
status=0
for c in "${chosen[@]}"; do
    IFS='|' read -r id name ks title <<<"$c"
    printf '%-4s %-62s' "$id" "$title"
    for kind in $kernels; do
        r=${result[$id.$kind]:-}
        if [[ -z $r && " $ks " == *" $kind "* ]]; then
            r="not run"
            reason[$id.$kind]="the lab stopped before it"
        fi
        printf ' %-10s' "${r:--}"
        [[ -z $r || $r == passed ]] || status=1
    done
    echo
done
echo
for c in "${chosen[@]}"; do
    IFS='|' read -r id name ks title <<<"$c"
    for kind in $kernels; do
        [[ -v reason[$id.$kind] ]] && echo "$id $kind ${result[$id.$kind]}: ${reason[$id.$kind]}"
    done
done
echo
echo "lab: $((SECONDS - started)) s$([[ -n $out ]] && echo "; results and console logs in $out")"
exit $status

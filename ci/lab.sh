#!/usr/bin/env bash
# The PREEMPT_RT lab (issue 40; docs/lab.md): boots Debian's PREEMPT_RT kernel and the
# standard kernel of the same version in qemu-system-x86_64 (TCG) with an initramfs of
# busybox, this tree's static musl jitterlab, and rtla, rt-tests and stress-ng with their
# libraries, and Debian's PREEMPT_RT arm64 kernel in qemu-system-aarch64 with the static
# aarch64 build; runs the checks inside (a check may ask for a guest of its own: boot.sh); brings their results back on a data disk; prints one
# table: check x kernel -> passed / failed / not run.
#
# Usage: ci/lab.sh [--short] [--checks ID,...] [--kernels rt,standard,arm64] [--out DIR] [--list]
#   --short    the RT kernel only, the short checks (CI's part)
#   --out DIR  keep every check's result directory and each guest's console log in DIR (a new
#              directory; an existing one is refused)
# Environment: LAB_CACHE (downloads; default ~/.cache/jitterlab-lab), LAB_KERNEL_ABI (e.g.
# 6.1.0-56), BINARY and BINARY_ARM64 (a static x86_64 / aarch64 jitterlab instead of building
# one), LAB_LOCK (default /tmp/jitterlab-measuring-tests.lock, held while a guest measures).
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
# the guest, verdict_NAME judges on the host; across_NAME, where there is one, judges the RT and
# the standard kernel's results together), the kernels it runs on, and what it proves.
LAB_CHECKS=(
    "1a|short|trace-tracefs|rt standard|run --trace (tracefs): 20 ms spikes found, split, blamed"
    "1b|short|trace-bpf|rt standard|run --trace (bpf): 20 ms spikes found, split, blamed"
    "1c|long|trace-below|rt standard|run --trace, 9 timer wake methods, spike below (ktimers)"
    "1d|long|trace-above|rt standard|run --trace, 9 timer wake methods, spike above"
    "1e|long|trace-below-bpf|rt standard|1c traced by bpf: 9 wake methods, spike below"
    "1f|long|trace-above-bpf|rt standard|1d traced by bpf: 9 wake methods, spike above"
    "2|long|timerlat|rt standard|timerlat beside rtla timerlat hist (kernel tracer; own threads without it)"
    "3|long|noise|rt standard|noise beside rtla osnoise, 5% injected"
    "4|short|cpuset|rt standard|cgroup v2 --cpuset-partition: made, gone, SIGKILL, refused"
    "5|short|doctor|rt standard|doctor: isolation and preemption settled by the RT boot"
    "6|long|seeds|rt standard|seeds' experiment: idle, hackbench, memory; compare, report"
    "7|-|many-cpus|rt|16 CPUs: run --trace on every CPU, report; no drops, 100 cols"
    "8|-|arm64|arm64|arm64: doctor, run --trace with BPF (check 1b's scene)"
    "9|long|tune-irq|standard|tune: a NIC's interrupt storm on CPU 1, irq-affinity first"
)
# The kernels: the boot parameters an RT user sets on the RT ones (doctor's own fix for an
# isolated CPU 1); none on the standard one, where check 5 expects the same checks to fail.
# arm64 is Debian's PREEMPT_RT arm64 kernel of the same ABI in qemu-system-aarch64 (boot.sh).
declare -A LAB_PARAMS=(
    [rt]="isolcpus=domain,managed_irq,1 nohz_full=1 rcu_nocbs=1 irqaffinity=0"
    [standard]=""
    [arm64]="isolcpus=domain,managed_irq,1 nohz_full=1 rcu_nocbs=1 irqaffinity=0"
)
LAB_CHECK_LIMIT=240

usage() { sed -n '/^# Usage:/,/^#$/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
short=
only=
kernels="rt standard arm64"
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
for k in $kernels; do [[ -v LAB_PARAMS[$k] ]] || lab_die 2 "no kernel '$k' (rt, standard, arm64)"; done
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

# The packages; the static builds and the initramfs parts (one per architecture, one with
# each kernel's modules) are made by the first guest that needs them (boot.sh).
lab_kernel_packages
lab_say "kernels: $(for k in $kernels; do echo "${LAB_KERNEL_PKG[$k]}"; done | paste -sd,); cache: $LAB_CACHE"

# lab_judge KIND GUEST NAMES: the verdict of each chosen check in NAMES (a comma list) from the
# results GUEST brought back: result[ID.KIND] and reason[ID.KIND].
lab_judge() {
    local kind=$1 guest=$2 names=$3 c id name ks title dir why
    for c in "${chosen[@]}"; do
        IFS='|' read -r id name ks title <<<"$c"
        [[ " $ks " == *" $kind "* && ",$names," == *",$name,"* ]] || continue
        dir=$guest/results/$name
        resdir[$id.$kind]=$dir
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
}

# Each kernel boots one guest for its checks, and one more for each guest setting a check
# asks for (LAB_GUEST, boot.sh: e.g. 16 CPUs); --short's checks share the first.
declare -A result=() reason=() uname_v=() took=() load=() smp=() resdir=()
guests=()
for kind in $kernels; do
    pkg=${LAB_KERNEL_PKG[$kind]}
    ids=()
    for c in "${chosen[@]}"; do
        IFS='|' read -r id name ks title <<<"$c"
        [[ " $ks " == *" $kind "* ]] && ids+=("$name")
    done
    ((${#ids[@]})) || continue
    mapfile -t kernel_guests < <(lab_guests "$kind" "${ids[@]}")
    for g in "${kernel_guests[@]}"; do
        IFS='|' read -r label settings names <<<"$g"
        guests+=("$label")
        guest=$LAB_WORK/$label
        t0=$SECONDS
        lab_guest_setup "$label" "$pkg" "$guest" "$settings"
        lab_boot "$label" "$pkg" "$guest" "${LAB_PARAMS[$kind]}" ${names//,/ } || true
        took[$label]=$((SECONDS - t0))
        load[$label]=${LAB_HOST_LOAD:-?}
        smp[$label]=${LAB_GUEST_SMP:-?}
        uname_v[$label]=$(cat "$guest/results/uname-v" 2>/dev/null || echo "(the guest did not report)")
        lab_judge "$kind" "$guest" "$names"
        # One retry at most, as for the measuring tests: the checks that failed (not those
        # that did not run) boot once more in a guest of their own; the table says so. Under
        # TCG the guest's time is the host's, and one stall of the host can fail a verdict.
        retry=()
        for c in "${chosen[@]}"; do
            IFS='|' read -r id name ks title <<<"$c"
            [[ ",$names," == *",$name,"* && ${result[$id.$kind]:-} == failed ]] && retry+=("$name")
        done
        if ((${#retry[@]})); then
            first=()
            for c in "${chosen[@]}"; do
                IFS='|' read -r id name ks title <<<"$c"
                [[ " ${retry[*]} " == *" $name "* ]] && first+=("$id|${reason[$id.$kind]}")
            done
            lab_say "$label: retrying once: ${retry[*]}"
            lab_guest_setup "$label.retry" "$pkg" "$guest.retry" "$settings"
            lab_boot "$label.retry" "$pkg" "$guest.retry" "${LAB_PARAMS[$kind]}" "${retry[@]}" || true
            retry_names=$(IFS=,; echo "${retry[*]}")
            lab_judge "$kind" "$guest.retry" "$retry_names"
            for f in "${first[@]}"; do
                IFS='|' read -r id why <<<"$f"
                reason[$id.$kind]="${reason[$id.$kind]} (second try; the first failed: $why)"
            done
            if [[ -n $out ]]; then
                mkdir -p "$out/$label.retry"
                cp -r "$guest.retry/results/." "$out/$label.retry/" 2>/dev/null || true
                cp "$guest.retry/console.log" "$out/$label.retry/console.log" 2>/dev/null || true
            fi
        fi
        if [[ -n $out ]]; then
            mkdir -p "$out"
            mkdir "$out/$label"
            cp -r "$guest/results/." "$out/$label/" 2>/dev/null || true
            cp "$guest/console.log" "$out/$label/console.log" 2>/dev/null || true
        fi
    done
done

# The checks judged across the two amd64 kernels (across_NAME DIR_RT DIR_STANDARD), once both
# passed alone.
declare -A across=() across_reason=()
for c in "${chosen[@]}"; do
    IFS='|' read -r id name ks title <<<"$c"
    declare -F "across_$name" >/dev/null || continue
    if [[ " $kernels " != *" rt "* || " $kernels " != *" standard "* ]]; then
        across[$id]="not run"
        across_reason[$id]="needs both the rt and the standard kernel (--kernels rt,standard)"
    elif [[ ${result[$id.rt]:-} != passed || ${result[$id.standard]:-} != passed ]]; then
        across[$id]="not run"
        across_reason[$id]="a kernel's own part did not pass (rt: ${result[$id.rt]:-not run}, standard: ${result[$id.standard]:-not run})"
    elif why=$("across_$name" "${resdir[$id.rt]}" "${resdir[$id.standard]}" 2>&1); then
        across[$id]=passed
        across_reason[$id]=$why
    else
        across[$id]=failed
        across_reason[$id]=$why
    fi
    if [[ -n $out && -d $LAB_WORK/$name-pair ]]; then
        mkdir -p "$out"
        cp -r "$LAB_WORK/$name-pair" "$out/$name-pair"
    fi
done

# The table, then what each verdict rests on.
echo
for label in "${guests[@]}"; do
    echo "$label: ${LAB_KERNEL_PKG[${label%%.*}]}, ${smp[$label]} CPUs, uname -v: ${uname_v[$label]} (boot and checks: ${took[$label]} s; host load average ${load[$label]}; parameters: ${LAB_PARAMS[${label%%.*}]:-none})"
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
for id in "${!across[@]}"; do
    printf '%-4s %-62s %s\n' "$id" "(rt and standard together)" "${across[$id]}"
    [[ ${across[$id]} == passed ]] || status=1
done
echo
for c in "${chosen[@]}"; do
    IFS='|' read -r id name ks title <<<"$c"
    for kind in $kernels; do
        [[ -v reason[$id.$kind] ]] && echo "$id $kind ${result[$id.$kind]}: ${reason[$id.$kind]}"
    done
    [[ -v across[$id] ]] && echo "$id rt+standard ${across[$id]}: ${across_reason[$id]}"
done
echo
echo "lab: $((SECONDS - started)) s$([[ -n $out ]] && echo "; results and console logs in $out")"
exit $status

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
#              directory, made at once; an existing one or a link is refused)
# Every option is checked before anything is fetched: a check chosen that runs on no kernel
# chosen, an unknown id or kernel, a kernel twice, a missing value: exit 2.
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
    [standard]="lab.keep_tracepoints=1"
    [arm64]="isolcpus=domain,managed_irq,1 nohz_full=1 rcu_nocbs=1 irqaffinity=0"
)
LAB_CHECK_LIMIT=240

usage() { sed -n '/^# Usage:/,/^#$/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
# --help asked for: the usage on stdout, exit 0 (thirteenth hostile re-run, L13-f: exit 2).
help() { sed -n '/^# Usage:/,/^#$/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0; }
# Every argument is checked here, before anything is downloaded or booted (twelfth hostile
# re-run of issue 39, M12-a, L12-b, L12-e): exit 2 naming what is wrong and the fix.
# lab_value OPTION WHAT EXAMPLE VALUE...: the option's value, refused when missing or another
# option.
lab_value() {
    local option=$1 what=$2 example=$3
    shift 3
    (($#)) && [[ -n $1 && $1 != -* ]] ||
        lab_die 2 "$option needs $what after it, e.g. $option $example (ci/lab.sh --help; --list shows the checks and their kernels)"
}
short=
only=
kernels_given=
kernels="rt standard arm64"
out=
while (($#)); do
    case $1 in
        --short) short=1 ;;
        # Each at most once: a second --checks replaced the first without a word (L13-f).
        --checks) [[ -z $only ]] || lab_die 2 "--checks given twice: give one comma list (e.g. --checks $only,${2-})"
            lab_value "$1" "a comma list of check ids" 1b,5 "${@:2}"; only=$2; shift ;;
        --kernels) [[ -z $kernels_given ]] || lab_die 2 "--kernels given twice: give one comma list (e.g. --kernels $kernels_given,${2-})"
            lab_value "$1" "a comma list of kernels" rt,standard "${@:2}"; kernels_given=$2; shift ;;
        --out) [[ -z $out ]] || lab_die 2 "--out given twice: give one directory"
            lab_value "$1" "a new directory" /tmp/lab-results "${@:2}"; out=$2; shift ;;
        --list) printf '%s\n' "${LAB_CHECKS[@]}" | awk -F'|' '{printf "%-4s %-6s %-15s %s\n", $1, $2, $4, $5}'; exit 0 ;;
        -h | --help) help ;;
        *) echo "lab: unknown argument $1" >&2; usage ;;
    esac
    shift
done

# The kernels: each known, each once, at least one; --short's is rt.
if [[ -n $kernels_given ]]; then
    kernels=
    IFS=',' read -r -a given <<<"$kernels_given"
    for k in "${given[@]}"; do
        [[ -n $k ]] || lab_die 2 "--kernels $kernels_given names an empty kernel: give a comma list of rt, standard, arm64 (e.g. --kernels rt,standard)"
        [[ -v LAB_PARAMS[$k] ]] || lab_die 2 "--kernels: no kernel '$k': give rt, standard or arm64"
        [[ " $kernels " != *" $k "* ]] || lab_die 2 "--kernels names $k twice: give each kernel once (it would boot its guests twice)"
        kernels+="${kernels:+ }$k"
    done
    [[ -n $kernels ]] || lab_die 2 "--kernels names no kernel: give one or more of rt, standard, arm64"
    [[ -z $short || $kernels == rt ]] || lab_die 2 "--short runs the rt kernel only, and --kernels gives $kernels: drop --short, or --kernels"
fi
[[ -n $short ]] && kernels=rt

# The checks named: each known, each among --short's checks with --short, each running on a
# kernel of --kernels; without --checks, the checks that run on a kernel given.
declare -A lab_known=()
for c in "${LAB_CHECKS[@]}"; do
    IFS='|' read -r id s name ks title <<<"$c"
    lab_known[$id]="$s|$ks"
done
if [[ -n $only ]]; then
    IFS=',' read -r -a named <<<"$only"
    ((${#named[@]})) || lab_die 2 "--checks $only names no check: give ids from --list (e.g. --checks 1b,5)"
    for id in "${named[@]}"; do
        [[ -n $id ]] || lab_die 2 "--checks $only names an empty check: give a comma list of ids from --list (e.g. --checks 1b,5)"
        [[ -v lab_known[$id] ]] || lab_die 2 "--checks: no check '$id': the ids are $(printf '%s\n' "${!lab_known[@]}" | sort -V | paste -sd, -) (--list shows them)"
    done
    for id in "${named[@]}"; do
        IFS='|' read -r s ks <<<"${lab_known[$id]}"
        [[ -z $short || $s == short ]] || lab_die 2 "--checks: check $id is not one of --short's checks: drop --short (and give its kernels: $ks)"
        runs=
        for k in $ks; do [[ " $kernels " == *" $k "* ]] && runs=1; done
        [[ -n $runs ]] || lab_die 2 "--checks: check $id runs on the $(echo "$ks" | sed 's/ / and the /') kernel only, and --kernels gives $(echo "$kernels" | sed 's/ /, /g'): add ${ks%% *} to --kernels, or leave --kernels out"
    done
fi
if [[ -n $out ]]; then
    [[ -e $out || -L $out ]] && lab_die 2 "--out $out exists: give a new directory (results are never overwritten)"
    [[ -d $(dirname -- "$out") ]] || lab_die 2 "--out $out: the directory $(dirname -- "$out") does not exist: make it first, or give a path in an existing one"
fi

# The checks chosen: "id|name|kernels|title".
chosen=()
for c in "${LAB_CHECKS[@]}"; do
    IFS='|' read -r id s name ks title <<<"$c"
    [[ -n $short && $s != short ]] && continue
    [[ -n $only && ",$only," != *",$id,"* ]] && continue
    runs=
    for k in $ks; do [[ " $kernels " == *" $k "* ]] && runs=1; done
    [[ -n $runs ]] || continue
    chosen+=("$id|$name|$ks|$title")
done
((${#chosen[@]})) || lab_die 2 "no check chosen runs on the kernels given ($kernels): --list shows the checks and their kernels"
# The kernels a chosen check boots (--checks 1b boots no arm64 guest, so needs no emulator for it).
booting=
for k in $kernels; do
    for c in "${chosen[@]}"; do
        IFS='|' read -r id name ks title <<<"$c"
        [[ " $ks " == *" $k "* ]] && { booting+="${booting:+ }$k"; break; }
    done
done

lab_traps
# --out is made now, before minutes of downloads, as a new directory of this user's alone:
# mkdir fails on anything there (a link planted since the check above included), and the
# lab writes only beneath it. Removed again if the lab ends before a guest's results are in it.
if [[ -n $out ]]; then
    why=$(mkdir -m 700 -- "$out" 2>&1) || {
        out=
        lab_die 2 "--out: cannot make a new directory: ${why#mkdir: } (give a new directory)"
    }
    LAB_OUT=$out
fi
# shellcheck disable=SC2086 # the kernels, one word each
lab_need_tools $booting
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
            reason[$id.$kind]="its guest part exited $(cat "$dir/exit") (143: stopped at its time limit of ${LAB_GUEST_CHECK_LIMIT:-$LAB_CHECK_LIMIT} s): $(tail -1 "$dir/log")"
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
declare -A result=() reason=() uname_v=() took=() before=() load=() smp=() resdir=()
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
        # The guest's own time, and what came before it: the kernel's download, the
        # initramfs, the wait for the lock (another measurement's).
        took[$label]=${LAB_GUEST_SECONDS:-?}
        before[$label]=$((SECONDS - t0 - ${LAB_GUEST_SECONDS:-0}))
        load[$label]=${LAB_HOST_LOAD:-?}
        smp[$label]=${LAB_GUEST_SMP:-?}
        uname_v[$label]=$(cat "$guest/results/uname-v" 2>/dev/null || echo "(the guest did not report)")
        lab_judge "$kind" "$guest" "$names"
        # Kept at once, before a retry: a lab stopped during the retry keeps the first guest's.
        if [[ -n $out ]]; then
            mkdir "$out/$label"
            cp -r "$guest/results/." "$out/$label/" 2>/dev/null || true
            cp "$guest/console.log" "$out/$label/console.log" 2>/dev/null || true
        fi
        # One retry at most, as for the measuring tests: the checks that failed (not those
        # that did not run) boot once more in a guest of their own; the table says so. Under
        # TCG the guest's time is the host's, and one stall of the host can fail a verdict.
        # A guest whose kernel locked up (lab_boot) retries the checks it had not finished.
        retry=()
        for c in "${chosen[@]}"; do
            IFS='|' read -r id name ks title <<<"$c"
            [[ ",$names," == *",$name,"* ]] || continue
            [[ ${result[$id.$kind]:-} == failed ||
                (-n $LAB_GUEST_LOCKED_UP && ${result[$id.$kind]:-} == "not run") ]] && retry+=("$name")
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
                mkdir "$out/$label.retry"
                cp -r "$guest.retry/results/." "$out/$label.retry/" 2>/dev/null || true
                cp "$guest.retry/console.log" "$out/$label.retry/console.log" 2>/dev/null || true
            fi
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
        cp -r "$LAB_WORK/$name-pair" "$out/$name-pair"
    fi
done

# The table, then what each verdict rests on.
echo
for label in "${guests[@]}"; do
    echo "$label: ${LAB_KERNEL_PKG[${label%%.*}]}, ${smp[$label]} CPUs, uname -v: ${uname_v[$label]} (the guest, boot and checks: ${took[$label]} s, after ${before[$label]} s of set-up and waiting for the lock; host load average ${load[$label]}; parameters: ${LAB_PARAMS[${label%%.*}]:-none}; $LAB_ACCEL${LAB_APPEND:+; LAB_APPEND: $LAB_APPEND})"
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

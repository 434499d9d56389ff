# shellcheck shell=bash
# Shared by the bench scripts (sourced): argument checks, the jitterlab binary, other
# processes' CPU use, and `jitterlab compare --json` flattened for awk. Needs bash 5 ($EPOCHREALTIME);
# no jq, no python.

# die MESSAGE: the script's name, the message, exit 1.
die() {
    echo "${0##*/}: $*" >&2
    exit 1
}

# need_positive NAME VALUE: VALUE must be a whole number of at least 1.
need_positive() {
    [[ $2 =~ ^[1-9][0-9]*$ ]] || die "$1 must be a positive whole number, got '$2'"
}

# jitterlab_binary: $JITTERLAB, or target/release/jitterlab built now.
jitterlab_binary() {
    local root
    root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
    if [[ -z ${JITTERLAB:-} ]]; then
        echo "building jitterlab (cargo build --release) ..." >&2
        (cd "$root" && cargo build --release --quiet --bin jitterlab) ||
            die "cargo build --release failed"
        JITTERLAB=$root/target/release/jitterlab
    fi
    [[ -x $JITTERLAB ]] || die "jitterlab binary not found or not executable: $JITTERLAB"
    echo "$JITTERLAB"
}

# Other processes' CPU use during a tool's run, as a share of all CPUs: `others_start` (in the
# bench's own shell, not in $(...): it sets variables) just before the tool starts, `others_pct`
# once the tool has been waited for. Above 5 % a run is disturbed.
#
# Why not /proc/stat's busy time (what this file used before): user and system time there are
# charged by the scheduler tick, to whatever runs when the tick fires, and a tickless kernel
# stops the tick of an idle CPU. A task that wakes an idle CPU for a few us is back asleep before
# any tick is due, and the time is charged to idle: a 5 s jitterlab run at 100 us showed 0.10 s
# of busy ticks against 1.53 s of CPU time in its run.json, and "others 0 %" hid whatever else
# woke in short bursts. (On a saturated machine the tick never stops and the figures agree.)
#
# What instead, each figure counted by the scheduler in ns of run time (the clock behind
# /proc/PID/schedstat and CLOCK_THREAD_CPUTIME_ID), none sampled by the tick:
#   - every task's CPU time: the root group's cpuacct.usage in the cgroup v1 cpuacct hierarchy
#     (found in /proc/mounts). It counts every task, kernel threads and the tasks that exited
#     during the run included. Summing /proc/*/task/*/schedstat instead would lose every task
#     that exits before the second reading (a compilation's thousands of short compilers), and
#     cgroup v2's root cpu.stat is built from the same tick-charged figures as /proc/stat.
#   - less the tool's CPU time: what the bench's shell got back from its reaped children
#     (cutime + cstime, /proc/$$/stat). When a process is reaped the kernel adds the run time of
#     all its threads and of the descendants it reaped in turn, so this is the tool's whole tree
#     (jitterlab's load and sender processes, which it reaps) without moving the tool into a
#     cgroup of its own: where cpuacct is mounted with the cpu controller, a new group has no
#     real-time runtime under CONFIG_RT_GROUP_SCHED and SCHED_FIFO would be refused. So the
#     tool must be started after `others_start` and waited for (by this shell) before
#     `others_pct`; a child of the bench that lives on past `others_pct` counts as another
#     process. Resolution: 10 ms per reading (clock ticks of a precise sum).
#   - plus steal time (/proc/stat), read from the hypervisor's steal clock, not sampled: other
#     guests' use of this VM's CPUs, as before. With CONFIG_PARAVIRT_TIME_ACCOUNTING (as on the
#     development VM) the scheduler leaves it out of the tasks' run time, so it is not counted
#     twice.
# Interrupts count where the kernel charges them: without CONFIG_IRQ_TIME_ACCOUNTING to the
# task they interrupt (the tool's own or another's), with it to nobody, and an interrupt that
# wakes an idle CPU to the idle task: the tool's own timer interrupts are not "others".
#
# Without a cgroup v1 cpuacct hierarchy (a cgroup v2-only system) the busy time is taken from
# /proc/stat's idle and iowait instead: all CPUs' time less idle; on a tickless kernel
# (CONFIG_NO_HZ, the default) idle is timed at every idle entry and exit, not sampled. That
# figure also counts the interrupts that wake idle CPUs, the tool's own included, so it reads a
# little high at short intervals. OTHERS_SOURCE=cpuacct|idle|ticks picks one (ticks: the old,
# tick-charged figure, kept for comparison).

# _others_usage_file: the root cpuacct.usage of the cgroup v1 cpuacct hierarchy, or nothing.
_others_usage_file() {
    local _dev dir type opts _rest
    while read -r _dev dir type opts _rest; do
        if [[ $type == cgroup && ,$opts, == *,cpuacct,* && -r $dir/cpuacct.usage ]]; then
            echo "$dir/cpuacct.usage"
            return
        fi
    done </proc/mounts
}
OTHERS_USAGE_FILE=$(_others_usage_file)
OTHERS_SOURCE=${OTHERS_SOURCE:-$([[ -n $OTHERS_USAGE_FILE ]] && echo cpuacct || echo idle)}
case $OTHERS_SOURCE in
cpuacct) [[ -n $OTHERS_USAGE_FILE ]] || die "OTHERS_SOURCE=cpuacct: no cgroup v1 cpuacct hierarchy mounted" ;;
idle | ticks) ;;
*) die "OTHERS_SOURCE must be cpuacct, idle or ticks, got '$OTHERS_SOURCE'" ;;
esac

# _others_read VAR: one reading into VAR, "WALL_US USAGE_NS BUSY IDLE STEAL CHILDREN":
# CLOCK_REALTIME; every task's run time (0 without cpuacct); /proc/stat's busy (user nice
# system irq softirq steal), idle + iowait and steal, and this shell's reaped children's user +
# system time, all four in clock ticks. Builtins only: no child of its own to be counted.
_others_read() {
    local wall=${EPOCHREALTIME/./} usage=0 _cpu user nice system idle iowait irq softirq steal
    local _rest line f
    [[ -n $OTHERS_USAGE_FILE ]] && read -r usage <"$OTHERS_USAGE_FILE"
    read -r _cpu user nice system idle iowait irq softirq steal _rest </proc/stat
    read -r line <"/proc/$$/stat"
    read -ra f <<<"${line##*) }" # from the 3rd field on: cutime and cstime are the 16th and 17th
    printf -v "$1" '%s %s %s %s %s %s' "$wall" "$usage" \
        "$((user + nice + system + irq + softirq + steal))" "$((idle + iowait))" "$steal" \
        "$((f[13] + f[14]))"
}

# others_method: how others_pct counts, in a few words, for a bench's legend.
others_method() {
    case $OTHERS_SOURCE in
    cpuacct) echo "every task's run time (cgroup cpuacct) less the tool's tree, plus steal" ;;
    idle) echo "all CPUs' time less timed idle, less the tool's tree" ;;
    ticks) echo "tick-charged busy time of /proc/stat less the tool's tree (imprecise)" ;;
    esac
}

# others_start: the first reading, for `others_pct`.
others_start() { _others_read _OTHERS_T0; }

# others_pct [SOURCE]: % of all CPUs' time that processes other than the tool's tree used
# (steal included) since `others_start`, one decimal; SOURCE as OTHERS_SOURCE, its default.
# shellcheck disable=SC2120 # SOURCE is optional
others_pct() {
    local source=${1:-$OTHERS_SOURCE} now
    [[ -n ${_OTHERS_T0:-} ]] || die "others_pct without others_start"
    _others_read now
    awk -v a="$_OTHERS_T0" -v b="$now" -v src="$source" -v hz="$(getconf CLK_TCK)" \
        -v n="$(getconf _NPROCESSORS_ONLN)" 'BEGIN {
        split(a, x, " "); split(b, y, " ")
        wall = (y[1] - x[1]) * 1000; own = (y[6] - x[6]) * 1e9 / hz
        if (src == "cpuacct") o = y[2] - x[2] + (y[5] - x[5]) * 1e9 / hz - own
        else if (src == "idle") o = wall * n - (y[4] - x[4]) * 1e9 / hz - own
        else o = (y[3] - x[3]) * 1e9 / hz - own
        if (o < 0) o = 0
        printf "%.1f", (wall > 0 ? 100 * o / (wall * n) : 0)
    }'
}

# run_figure DIR NAME: run.json's figure NAME (a key that occurs once; 0 when absent) in DIR,
# as a whole number for shell arithmetic (awk's print would write 4053130000 as 4.05313e+09).
run_figure() { awk -F'[:,]' -v k="\"$2\"" '$1 ~ k { v = $2 } END { printf "%.0f\n", v + 0 }' "$1/run.json"; }

# now_us: CLOCK_REALTIME in us (bash's $EPOCHREALTIME without the dot).
now_us() { echo "${EPOCHREALTIME/./}"; }

# flat_compare: `jitterlab compare --json` (on stdin, two runs) as lines
#   SCOPE FIGURE A B
# SCOPE `overall` or `cpuN`; FIGURE a statistic (`mean`, `p99`, `max`... in its row's unit),
# `samples` or `cpu_time_per_cycle_ns`; A and B the two runs' values, `null` when absent.
# Relies on serde_json's pretty layout: one array element per line.
flat_compare() {
    awk '
        /^ *"scope": /     { s = $2; gsub(/[",]/, "", s) }
        /^ *"statistic": / { stat = $2; gsub(/[",]/, "", stat) }
        s != "" && /^ *"(values|samples|cpu_time_per_cycle_ns)": \[/ {
            key = $1; gsub(/[":]/, "", key); if (key == "values") key = stat
            line = s " " key; open = 1; next
        }
        open && /^ *\]/ { print line; open = 0; next }
        open { v = $1; sub(/,$/, "", v); line = line " " v }
    '
}

# measured_run BIN DIR LABEL [OPTION...]: one `BIN run` of SECONDS_PER_RUN s on CPUS into DIR
# (its output in DIR.log), with the caller's `extra` options after OPTION..., and the other
# processes' share of the CPUs during it in DIR.others; on failure prints the log and dies
# naming LABEL.
measured_run() {
    local bin=$1 dir=$2 label=$3
    shift 3
    others_start
    "$bin" run --duration "${SECONDS_PER_RUN}s" --cpus "$CPUS" --quiet --out "$dir" "$@" \
        ${extra[@]+"${extra[@]}"} >"$dir.log" 2>&1 ||
        { cat "$dir.log" >&2; die "$label failed"; }
    others_pct >"$dir.others"
}

# rotating_rounds ROUNDS FN KIND...: ROUNDS rounds of one `FN KIND ROUND` per KIND, the order
# rotating by one from round to round (so that no kind always runs first or after another).
rotating_rounds() {
    local rounds=$1 fn=$2
    shift 2
    local kinds=("$@") r i kind
    for ((r = 1; r <= rounds; r++)); do
        for ((i = 0; i < ${#kinds[@]}; i++)); do
            kind=${kinds[(i + r - 1) % ${#kinds[@]}]}
            echo "  round $r/$rounds: $kind ..." >&2
            "$fn" "$kind" "$r"
        done
    done
}

# Awk functions for the summaries, put before a program's text (awk "$AWK_MEDIAN_CI"'...'):
#   sort_values(a, m)  sorts a[1..m] in place (insertion sort: mawk has no asort);
#   median_sorted(a, m)  the median of a sorted a[1..m];
#   median_ci(a, m)  for a sorted a[1..m], sets CI_LO and CI_HI to the distribution-free
#       confidence interval of the median by the sign test (the k-th smallest and the k-th
#       largest value, k the largest with 2 P(Bin(m, 1/2) < k) <= 0.05) and CI_LEVEL to its
#       exact coverage, %; returns 0 when m < 6 (no interval of the values reaches 95 %).
# The interval says what the median ratio of a series can be told from: a goal inside it is
# neither met nor missed by the series (the rounds' ratios scatter by 10-40 % on this VM).
AWK_MEDIAN_CI='
    function sort_values(a, m,    i, j, t) {
        for (i = 2; i <= m; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
    }
    function median_sorted(a, m) { return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2 }
    function median_ci(a, m,    k, p, cdf) {
        if (m < 6) return 0
        # cdf = P(Bin(m, 1/2) <= k - 1), grown while the interval [a[k+1], a[m-k]] keeps 95 %.
        p = 0.5 ^ m; cdf = p; k = 1
        while (1) {
            p = p * (m - k + 1) / k
            if (2 * (cdf + p) > 0.05) break
            cdf += p; k++
        }
        CI_LO = a[k]; CI_HI = a[m - k + 1]; CI_LEVEL = 100 * (1 - 2 * cdf)
        return 1
    }
'

# The summary of interleaved pairs of runs (guard-cost.sh, loop-pairs.sh): FILE ($1) holds
# `ROUND others PCT_FIRST PCT_SECOND` lines and `ROUND CPU FIGURE FIRST SECOND` lines (p50,
# mean, cpu_time_per_cycle_ns); each round's ratios second/first per CPU, then their means and
# medians over every round and over the undisturbed ones (other processes at most 5 % of the
# CPUs in both runs). $2 and $3 name the build that ran first in odd and in even rounds.
pair_ratio_summary() {
    awk -v first="$2" -v second="$3" "$AWK_MEDIAN_CI"'
        function add(set, k, v) { vals[set, k, ++n[set, k]] = v; sum[set, k] += v }
        function median(set, k,    i, m, a) {
            m = n[set, k]
            for (i = 1; i <= m; i++) a[i] = vals[set, k, i]
            sort_values(a, m)
            return median_sorted(a, m)
        }
        $2 == "others" { o0[$1] = $3; o1[$1] = $4; if ($1 > nr) nr = $1; next }
        { v0[$1, $2, $3] = $4; v1[$1, $2, $3] = $5; cpus[$2] = 1 }
        END {
            for (r = 1; r <= nr; r++) {
                calm = o0[r] <= 5 && o1[r] <= 5
                printf "round %d (%s first; other processes used %s %% / %s %% of the CPUs%s)\n", r,
                    r % 2 ? first : second, o0[r], o1[r], calm ? "" : ": DISTURBED"
                for (c in cpus) {
                    p0 = v0[r, c, "p50"]; p1 = v1[r, c, "p50"]; m0 = v0[r, c, "mean"]; m1 = v1[r, c, "mean"]
                    t0 = v0[r, c, "cpu_time_per_cycle_ns"]; t1 = v1[r, c, "cpu_time_per_cycle_ns"]
                    if (!p0 || !m0 || !t0) { printf "  %s: a figure is missing\n", c; continue }
                    printf "  %s: p50 %.2f -> %.2f us (%.3fx)   mean %.2f -> %.2f us (%.3fx)   measuring-thread" \
                        " CPU per wakeup %.0f -> %.0f ns (%.3fx)\n", c, p0 / 1e3, p1 / 1e3, p1 / p0,
                        m0 / 1e3, m1 / 1e3, m1 / m0, t0, t1, t1 / t0
                    add("all", "p50", p1 / p0); add("all", "mean", m1 / m0); add("all", "cpu", t1 / t0)
                    if (calm) { add("calm", "p50", p1 / p0); add("calm", "mean", m1 / m0); add("calm", "cpu", t1 / t0) }
                }
            }
            print ""
            for (s = 1; s <= 2; s++) {
                set = s == 1 ? "all" : "calm"
                name = s == 1 ? "every round and CPU" : "undisturbed rounds (others <= 5 % in both runs)"
                if (!n[set, "p50"]) { print name ": none"; continue }
                printf "%s (%d ratios): p50 latency %.3fx (median %.3fx), mean latency %.3fx (median %.3fx)," \
                    " measuring-thread CPU per wakeup %.3fx (median %.3fx)\n", name, n[set, "p50"],
                    sum[set, "p50"] / n[set, "p50"], median(set, "p50"), sum[set, "mean"] / n[set, "mean"],
                    median(set, "mean"), sum[set, "cpu"] / n[set, "cpu"], median(set, "cpu")
            }
        }' "$1"
}

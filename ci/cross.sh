#!/usr/bin/env bash
# Builds the static release binary of every board target and checks it under qemu-user:
# --version, doctor --json (parsed), a 2 s run (sample count checked), export --format csv
# (row count checked against the run) and report. What the emulator cannot do is printed by
# name: every doctor check that is ok for the native binary on this machine but not under qemu
# (tracefs, BPF, ...), and whether SCHED_FIFO is granted. x86_64 runs natively (first: it is
# the reference). Called from .ci/run; usage: ci/cross.sh [TARGET...]
# Needs: rustup targets, musl-tools, gcc-{aarch64,arm,riscv64}-linux-gnu*, qemu-user (installed by
# .ci/run). Linkers, rustflags (+crt-static) and runners are in .cargo/config.toml.
set -euo pipefail
cd "$(dirname "$0")/.."

TARGETS=(x86_64-unknown-linux-musl aarch64-unknown-linux-musl armv7-unknown-linux-gnueabihf riscv64gc-unknown-linux-gnu)
(($#)) && TARGETS=("$@")
LOCK=/tmp/jitterlab-measuring-tests.lock
VERSION=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -1)
TARGET_DIR=${CARGO_TARGET_DIR:-target}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The emulator of a target, empty when it runs natively here.
emulator() {
    case $1 in
        "$(uname -m)"-*) echo "" ;;
        aarch64-*) echo qemu-aarch64 ;;
        armv7-*) echo qemu-arm ;;
        riscv64*) echo qemu-riscv64 ;;
        *) echo "no emulator known for $1" >&2; exit 2 ;;
    esac
}

fail() { echo "FAIL [$target]: $*" >&2; exit 1; }

# The verdict of every doctor check, `id verdict` lines, from doctor --json on stdin.
verdicts() {
    python3 -c 'import json,sys
for c in json.load(sys.stdin)["checks"]: print(c["id"], c["verdict"])'
}

start_all=$SECONDS
# Every target in one cargo invocation: one job graph keeps both cores busy through each
# target's serial tail (the crate's own compile, its link), where four builds in a row left
# one core idle. Cold on the 2-core VM: 573 s for the four, against about 737 s one by one.
echo "== building ${TARGETS[*]}"
nice -n 10 cargo build --quiet --release --locked "${TARGETS[@]/#/--target=}"
echo "time: build $((SECONDS - start_all)) s"
for target in "${TARGETS[@]}"; do
    start=$SECONDS
    emu=$(emulator "$target")
    echo "== $target (${emu:-native})"
    bin=$TARGET_DIR/$target/release/jitterlab

    # Fully static: no program interpreter, no shared libraries.
    if readelf -lW "$bin" | grep -q 'program interpreter' || readelf -dW "$bin" | grep -q NEEDED; then
        fail "$bin is dynamically linked"
    fi
    echo "size: $(stat -c %s "$bin") bytes, static"
    # The binary, under its emulator when there is one.
    jl() { ${emu:+"$emu"} "$bin" "$@"; }

    got=$(jl --version)
    [ "$got" = "jitterlab $VERSION" ] || fail "--version printed '$got', expected 'jitterlab $VERSION'"

    # doctor exits 1 when the system is not ready for real-time work (this VM is not); its JSON
    # is what counts here.
    jl doctor --json >"$work/doctor.json" || true
    verdicts <"$work/doctor.json" >"$work/verdicts" || fail "doctor --json is not the documented JSON"
    echo "doctor: $(wc -l <"$work/verdicts") checks"
    if [ -z "$emu" ]; then
        cp "$work/verdicts" "$work/native-verdicts"
    elif [ -f "$work/native-verdicts" ]; then
        # A check that is ok natively but not under qemu names something the emulator lacks.
        python3 -c 'import sys
native = dict(l.split() for l in open(sys.argv[1]))
for line in open(sys.argv[2]):
    id, verdict = line.split()
    if native.get(id) == "ok" and verdict != "ok":
        print(f"emulator cannot do: {id} ({verdict} under {sys.argv[3]}, ok natively)")' \
            "$work/native-verdicts" "$work/verdicts" "$emu"
    fi

    # The measuring steps take the lock of the measuring tests (one measurement at a time).
    run=$work/run-$target
    flock "$LOCK" ${emu:+"$emu"} "$bin" run --duration 2s --interval 1ms --policy other --no-mlock \
        --pm-qos off --cpus 0 --samples --out "$run" >/dev/null 2>"$work/run.err" ||
        fail "run: $(cat "$work/run.err")"
    # 2 s at 1 ms is 2000 periods: each is a sample or a missed period; under emulation some
    # may be missed, but at least 80 % must be measured.
    read -r samples missed < <(python3 -c 'import json,sys
t=json.load(open(sys.argv[1]))["threads"][0]; print(t["samples"], t["missed_periods"])' "$run/run.json")
    total=$((samples + missed))
    echo "run: $samples samples, $missed missed periods"
    ((total >= 1990 && total <= 2010)) || fail "run: $total periods in 2 s at 1 ms, expected 2000 +- 10"
    ((samples >= 1600)) || fail "run: only $samples of 2000 periods measured"

    jl export "$run" --format csv >"$work/samples.csv" || fail "export --format csv"
    rows=$(($(wc -l <"$work/samples.csv") - 1))
    ((rows == samples)) || fail "export csv: $rows rows for $samples samples"
    echo "export csv: $rows rows"

    jl report "$run" -o "$work/report.html" >/dev/null || fail "report"
    grep -q '<html' "$work/report.html" || fail "report: $work/report.html is not HTML"
    echo "report: $(stat -c %s "$work/report.html") bytes of HTML"

    if [ -n "$emu" ]; then
        if flock "$LOCK" "$emu" "$bin" run --duration 100ms --policy fifo --priority 1 --no-mlock \
            --pm-qos off --cpus 0 --out "$work/fifo-$target" >/dev/null 2>&1; then
            echo "SCHED_FIFO: granted under $emu (qemu-user passes the syscall to the host kernel)"
        else
            echo "emulator cannot do: SCHED_FIFO (run --policy fifo failed under $emu)"
        fi
        echo "perf counters: jitterlab reads none, so none is checked"
    fi
    echo "time: checks $((SECONDS - start)) s"
done

# 32-bit time arithmetic: the unit tests of the arithmetic modules under qemu-arm (the runner
# of .cargo/config.toml), among them the day-long ones (`a_day_long_*`, `a_day_of_*`).
if [[ " ${TARGETS[*]} " == *" armv7-unknown-linux-gnueabihf "* ]]; then
    start=$SECONDS
    echo "== unit tests of sys, measure, format, recorder, analysis on armv7-unknown-linux-gnueabihf (qemu-arm)"
    # Built first, then run under the measuring lock: the measure:: tests run real-time
    # threads (qemu-user passes sched_setscheduler to the host kernel), which would disturb a
    # measurement running beside them. Built in the release profile, so that the dependencies
    # built for the release binary above serve the tests too (a debug build would compile every
    # dependency for armv7 a second time), with overflow checks and debug assertions turned on
    # for jitterlab alone (a per-package setting: the dependencies stay as built): an overflow
    # in 32-bit arithmetic panics as it would in a debug build.
    armv7_test=(nice -n 10 cargo test --quiet --locked --release --target armv7-unknown-linux-gnueabihf
        --config 'profile.release.package.jitterlab.overflow-checks=true'
        --config 'profile.release.package.jitterlab.debug-assertions=true' --lib)
    if ! out=$("${armv7_test[@]}" --no-run 2>&1 &&
        flock "$LOCK" "${armv7_test[@]}" -- sys:: measure:: format:: recorder:: analysis:: 2>&1); then
        echo "$out" | tail -n 60 >&2
        echo "FAIL: unit tests on armv7-unknown-linux-gnueabihf" >&2
        exit 1
    fi
    echo "$out" | grep '^test result'
    echo "time: $((SECONDS - start)) s"
fi
echo "cross: ${#TARGETS[@]} targets in $((SECONDS - start_all)) s"

#!/usr/bin/env bash
# Rebuilds bpf/trace.bpf.o (the BPF back end of `run --trace`, embedded into the binary) from
# bpf/trace.bpf.c with bpf/build.sh and fails if it differs from the checked-in object: the
# object in the repository is the one its source builds to. clang's output is byte-reproducible
# (no paths, no dates: see bpf/build.sh), so the comparison is of the bytes.
# Called from .ci/run. Needs clang-14 and libbpf-dev (installed there).
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
bpf/build.sh "$tmp"
if ! cmp -s "$tmp" bpf/trace.bpf.o; then
    echo "bpf/trace.bpf.o differs from what bpf/build.sh builds from bpf/trace.bpf.c: run bpf/build.sh and commit the object" >&2
    exit 1
fi
echo "bpf/trace.bpf.o: rebuilt from bpf/trace.bpf.c, identical ($(stat -c %s bpf/trace.bpf.o) bytes)"

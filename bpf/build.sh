#!/usr/bin/env bash
# Builds bpf/trace.bpf.o, the BPF back end of `run --trace`, from bpf/trace.bpf.c; the object
# is checked in (the Rust build embeds it, so building jitterlab needs no clang). CI rebuilds
# it with ci/bpf-object.sh and fails if it differs from the checked-in one.
#
# Needs clang 14 (Debian's clang-14) and libbpf's headers (libbpf-dev). The object is CO-RE:
# compiled once, its field offsets resolved against the running kernel's BTF at load time.
# DWARF is stripped (it names the build directory); the BTF and its line info, which the
# verifier's messages use, stay.
#
# Usage: bpf/build.sh [OUT]   (default bpf/trace.bpf.o)
#   JL_BPF_CFLAGS=...  more clang options, for bench variants only (bench/bpf-floor.sh: -DJL_FLOOR=1)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=$(realpath -m "${1:-$here/trace.bpf.o}")
CLANG=${CLANG:-clang-14}
STRIP=${LLVM_STRIP:-llvm-strip-14}
command -v "$CLANG" >/dev/null || { echo "bpf/build.sh: $CLANG not found; install clang-14" >&2; exit 2; }
command -v "$STRIP" >/dev/null || STRIP=llvm-strip
[ -f /usr/include/bpf/bpf_helpers.h ] || { echo "bpf/build.sh: libbpf headers not found; install libbpf-dev" >&2; exit 2; }
# linux/types.h needs the host's asm/ headers; the BPF target has none of its own.
multiarch=$(gcc -dumpmachine 2>/dev/null || echo "$(uname -m)-linux-gnu")
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
# Relative source path and no build directory in the output: the same bytes from any checkout.
cd "$here"
"$CLANG" -target bpf -mcpu=v3 -O2 -g -Wall -Werror \
    -fdebug-prefix-map="$here"=. -fno-ident \
    -I"/usr/include/$multiarch" \
    ${JL_BPF_CFLAGS:-} -c trace.bpf.c -o "$tmp"
"$STRIP" -g "$tmp"
cp "$tmp" "$out"

#!/usr/bin/env bash
# Builds the static release binary of every board target and packs each as
# dist/jitterlab-<version>-<target>.tar.gz (binary, README.md, docs/, LICENSE if present),
# with dist/SHA256SUMS over the archives. Usage: ci/dist.sh [TARGET...]
# Cross linkers and rustflags: .cargo/config.toml; the packages they need: .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."

TARGETS=(x86_64-unknown-linux-musl aarch64-unknown-linux-musl armv7-unknown-linux-gnueabihf riscv64gc-unknown-linux-gnu)
(($#)) && TARGETS=("$@")
VERSION=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -1)
TARGET_DIR=${CARGO_TARGET_DIR:-target}
OUT=dist
mkdir -p "$OUT"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT

archives=()
for target in "${TARGETS[@]}"; do
    nice -n 10 cargo build --quiet --release --locked --target "$target"
    name=jitterlab-$VERSION-$target
    mkdir -p "$stage/$name"
    cp "$TARGET_DIR/$target/release/jitterlab" README.md "$stage/$name/"
    cp -r docs "$stage/$name/"
    for f in LICENSE*; do [ -e "$f" ] && cp "$f" "$stage/$name/"; done
    # Reproducible archives: fixed owner, order and times.
    tar --sort=name --owner=0 --group=0 --numeric-owner --mtime='@0' \
        -C "$stage" -cf - "$name" | gzip -9n >"$OUT/$name.tar.gz"
    archives+=("$name.tar.gz")
    echo "$OUT/$name.tar.gz: binary $(stat -c %s "$TARGET_DIR/$target/release/jitterlab") bytes"
done
(cd "$OUT" && sha256sum "${archives[@]}" >SHA256SUMS)
echo "$OUT/SHA256SUMS: ${#archives[@]} archives"

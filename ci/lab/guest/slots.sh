# The data disk's slots, written by the guest (sourced by its init; ci/lab/boot.sh's
# lab_read_slots reads them on the host). Slot k takes slot_mb MiB from k * slot_mb MiB: its
# first sector a header (`lab-slot SIZE WHAT`), its tar archive from its second MiB. The
# header is written after the archive is on the disk, so a slot whose header is there is whole:
# a guest whose kernel locks up, or that the host stops at its limit, leaves every slot it
# finished readable and the one it was writing unread.
# Needs: out (the results' directory), disk (the data disk), slot_mb; slot counts from 0.
slot=0
tmp_tar=${TMPDIR:-/tmp}/lab-slot.tar

# save WHAT...: the paths WHAT (under $out) into the next slot.
save() {
    tar -cf "$tmp_tar" -C "$out" "$@" || return 1
    size=$(wc -c <"$tmp_tar")
    if [ "$size" -gt $(((slot_mb - 1) * 1048576)) ]; then
        echo "=== lab: $* ($size bytes) does not fit a slot of ${slot_mb} MiB"
        rm -f "$tmp_tar"
        return 1
    fi
    dd if="$tmp_tar" of="$disk" bs=1M seek=$((slot * slot_mb + 1)) conv=notrunc 2>/dev/null && sync &&
        printf 'lab-slot %s %s\n' "$size" "$*" |
        dd of="$disk" bs=512 seek=$((slot * slot_mb * 2048)) conv=notrunc 2>/dev/null && sync
    rm -f "$tmp_tar"
    slot=$((slot + 1))
}

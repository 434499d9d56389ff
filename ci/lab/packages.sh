# Sourced by ci/lab.sh: Debian's packages, downloaded once into the cache (LAB_CACHE) with
# apt-get download and unpacked with dpkg-deb -x; nothing is installed on the host.

# The newest cached .deb of package $1 for architecture $2 (default amd64; empty: none).
lab_cached() {
    local f
    f=$(ls -1 "$LAB_CACHE/$1"_*_"${2:-amd64}".deb "$LAB_CACHE/$1"_*_all.deb 2>/dev/null | sort -V | tail -1)
    echo "$f"
}

# Packages $2... of architecture $1 (amd64: lab_fetch). arm64 packages come through apt-get
# with package lists of their own, kept in the cache (LAB_CACHE/apt-arm64: the host's
# sources, architecture arm64), so that the host's dpkg and apt state stay as they are (no
# `dpkg --add-architecture`). The lists are read once; delete that directory for newer ones.
lab_fetch_arch() {
    local arch=$1 p
    shift
    [[ $arch == amd64 ]] && { lab_fetch "$@"; return; }
    local state=$LAB_CACHE/apt-$arch
    local apt=(-q -o APT::Architecture="$arch" -o APT::Architectures="$arch"
        -o Dir::State::Lists="$state/lists" -o Dir::State::Status="$state/status"
        -o Dir::Cache="$state/cache" -o Acquire::Languages=none -o APT::Sandbox::User=root)
    mkdir -p "$LAB_CACHE"
    for p in "$@"; do
        [[ -n $(lab_cached "$p" "$arch") ]] && continue
        if [[ ! -f $state/updated ]]; then
            mkdir -p "$state/lists/partial" "$state/cache/archives/partial"
            : >"$state/status"
            lab_say "reading Debian's $arch package lists into $state (once)"
            apt-get "${apt[@]}" update >"$LAB_CACHE/.apt-error" 2>&1 ||
                lab_die 3 "cannot read Debian's $arch package lists: $(tail -1 "$LAB_CACHE/.apt-error") (is Debian's archive reachable?)"
            touch "$state/updated"
        fi
        (cd "$LAB_CACHE" && apt-get "${apt[@]}" download "$p" >/dev/null 2>"$LAB_CACHE/.apt-error") ||
            lab_die 3 "cannot download the Debian package $p ($arch): $(tail -1 "$LAB_CACHE/.apt-error") (delete $state to read newer package lists)"
        rm -f "$LAB_CACHE/.apt-error"
    done
}

# Downloads each package not in the cache yet. apt-get download fetches the candidate
# version of this host's package lists (run apt-get update for newer ones).
lab_fetch() {
    local p
    mkdir -p "$LAB_CACHE"
    for p in "$@"; do
        [[ -n $(lab_cached "$p") ]] && continue
        (cd "$LAB_CACHE" && apt-get download -q -o APT::Sandbox::User=root "$p" >/dev/null 2>"$LAB_CACHE/.apt-error") ||
            lab_die 3 "cannot download the Debian package $p: $(tail -1 "$LAB_CACHE/.apt-error") (is apt-get update done, and Debian's archive reachable?)"
        rm -f "$LAB_CACHE/.apt-error"
    done
}

# The kernel packages: Debian's PREEMPT_RT kernel (linux-image-rt-amd64 depends on the one of
# its ABI, e.g. linux-image-6.1.0-56-rt-amd64), the standard kernel of the same ABI and the
# PREEMPT_RT arm64 kernel of the same ABI (linux-image-6.1.0-56-rt-arm64). Sets LAB_KERNEL_RT,
# LAB_KERNEL_STANDARD, LAB_KERNEL_ARM64 (package names) and LAB_KERNEL_PKG (by kind). LAB_KERNEL_ABI=6.1.0-56 chooses
# another ABI; without package lists the newest one cached is taken.
lab_kernel_packages() {
    local abi=${LAB_KERNEL_ABI:-}
    # Neither look may end the lab by itself (set -e, pipefail): apt-cache exits 100 on a
    # package its lists do not know, and no kernel cached is no error here. Before, either
    # ended the lab silently (exit 100 or 2) instead of with the message below (stop 59).
    if [[ -z $abi ]]; then
        abi=$(apt-cache depends linux-image-rt-amd64 2>/dev/null |
            sed -n 's/^ *Depends: linux-image-\(.*\)-rt-amd64$/\1/p' | head -1) || abi=
    fi
    if [[ -z $abi ]]; then
        local cached=("$LAB_CACHE"/linux-image-*-rt-amd64_*.deb)
        [[ -e ${cached[0]} ]] &&
            abi=$(printf '%s\n' "${cached[@]}" | sort -V | tail -1 |
                sed -n 's|.*/linux-image-\(.*\)-rt-amd64_.*|\1|p')
    fi
    [[ -n $abi ]] || lab_die 3 "cannot tell which PREEMPT_RT kernel Debian ships: apt-cache knows no linux-image-rt-amd64 (run apt-get update) and none is cached in $LAB_CACHE"
    LAB_KERNEL_RT=linux-image-$abi-rt-amd64
    LAB_KERNEL_STANDARD=linux-image-$abi-amd64
    LAB_KERNEL_ARM64=linux-image-$abi-rt-arm64
    declare -gA LAB_KERNEL_PKG=([rt]=$LAB_KERNEL_RT [standard]=$LAB_KERNEL_STANDARD [arm64]=$LAB_KERNEL_ARM64)
}

# Unpacks kernel package $1 (architecture $3, default amd64) into $2: boot/vmlinuz-*,
# boot/config-*, lib/modules/*.
lab_unpack_kernel() {
    lab_fetch_arch "${3:-amd64}" "$1"
    mkdir -p "$2"
    dpkg-deb -x "$(lab_cached "$1" "${3:-amd64}")" "$2"
}

# The kernel modules $3... of the unpacked kernel $1 and every module they depend on, copied
# into the initramfs $2 under /lib/modules with the order to load them in
# (/lib/modules/load-order: dependencies first). The dependencies are read from each module's
# .modinfo section (`depends=`, read with readelf), so no depmod is needed.
lab_modules() {
    local kroot=$1 dest=$2
    shift 2
    local -A path=() have=()
    local f name order=()
    while IFS= read -r f; do
        name=$(basename "$f" .ko)
        path[${name//-/_}]=$f
    done < <(find "$kroot"/lib/modules -name '*.ko')
    mkdir -p "$dest/lib/modules"
    add() {
        local m=${1//-/_} dep deps
        [[ -n ${have[$m]:-} ]] && return
        have[$m]=1
        if [[ -z ${path[$m]:-} ]]; then
            grep -qs "/$1.ko$" "$kroot"/lib/modules/*/modules.builtin && return
            lab_die 3 "kernel module $1 is neither in $(basename "$kroot") nor built in"
        fi
        # readelf reads an ELF file of any machine (the host's objcopy knows only its own:
        # it refuses arm64's modules).
        deps=$(readelf -p .modinfo "${path[$m]}" | sed -n 's/^ *\[ *[0-9a-f]*\] *depends=//p')
        for dep in ${deps//,/ }; do add "$dep"; done
        cp "${path[$m]}" "$dest/lib/modules/$m.ko"
        order+=("$m")
    }
    for name in "$@"; do add "$name"; done
    printf '%s\n' "${order[@]}" >"$dest/lib/modules/load-order"
}

# The shared objects an ELF file needs (its DT_NEEDED entries).
lab_needed() { readelf -d "$1" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p'; }

# The library directories of an unpacked Debian root.
LAB_LIBDIRS=(lib/x86_64-linux-gnu usr/lib/x86_64-linux-gnu lib64 lib usr/lib)

# Unpacks the programs $3... (paths in their packages, e.g. usr/bin/rtla) of packages
# "$1" (a space-separated list) with every shared library they need into $2, a root to copy
# from. A library's package is found by need: the Depends of the package whose file needs
# it are fetched until every DT_NEEDED of every file is found (so no Recommends, and no
# dependency whose libraries nothing loads, comes in). Prints the files to copy, one a line
# (relative to $2): the programs, the libraries, the dynamic loader.
lab_unpack_programs() {
    local packages=$1 root=$2
    shift 2
    local programs=("$@")
    local -A fetched=() owner=() seen=()
    local queue=(libc6 $packages) p f lib dir found dep files missing
    mkdir -p "$root"
    while ((${#queue[@]})); do
        for p in "${queue[@]}"; do
            [[ -n ${fetched[$p]:-} ]] && continue
            fetched[$p]=1
            lab_fetch "$p"
            dpkg-deb -x "$(lab_cached "$p")" "$root"
            while IFS= read -r f; do owner[$f]=$p; done < <(dpkg-deb -c "$(lab_cached "$p")" |
                awk '{print $6}' | sed 's|^\./||' | grep -E '\.so|^usr/bin/|^usr/sbin/|^bin/')
        done
        queue=()
        files=("${programs[@]}")
        seen=()
        missing=
        local i=0
        while ((i < ${#files[@]})); do
            f=${files[i]}
            ((i++)) || true
            [[ -n ${seen[$f]:-} ]] && continue
            seen[$f]=1
            [[ -e $root/$f ]] || lab_die 3 "no $f in the packages $packages"
            for lib in $(lab_needed "$root/$f"); do
                found=
                for dir in "${LAB_LIBDIRS[@]}"; do
                    if [[ -e $root/$dir/$lib ]]; then found=$dir/$lib; break; fi
                done
                if [[ -n $found ]]; then
                    files+=("$found")
                    continue
                fi
                missing+=" $lib"
                # The package of the file that needs it depends on the one that has it.
                p=${owner[$f]:-}
                [[ -n $p ]] || continue
                for dep in $( (dpkg-deb -f "$(lab_cached "$p")" Depends
                    dpkg-deb -f "$(lab_cached "$p")" Pre-Depends) |
                    tr ',' '\n' | sed 's/|.*//; s/(.*)//; s/:any//; s/ //g'); do
                    [[ -n ${fetched[$dep]:-} ]] || queue+=("$dep")
                done
            done
        done
        if [[ -n $missing ]] && ((${#queue[@]} == 0)); then
            lab_die 3 "cannot find the shared libraries$missing in the packages' dependencies"
        fi
        [[ -z $missing ]] && queue=()
    done
    printf '%s\n' "${!seen[@]}" lib64/ld-linux-x86-64.so.2 | sort -u
}

# Copies file $2 of the unpacked root $1 to $3, its symbolic links followed inside $1 (an
# absolute link, such as libc6's /lib64/ld-linux-x86-64.so.2, names a file of the root, not
# of this host).
lab_copy_from_root() {
    local root=$1 f=$1/$2 t n=0
    while [[ -L $f ]]; do
        t=$(readlink "$f")
        [[ $t == /* ]] && f=$root$t || f=$(dirname "$f")/$t
        ((++n < 20)) || lab_die 3 "a loop of links at $2 in the unpacked packages"
    done
    [[ -f $f ]] || lab_die 3 "$2 in the unpacked packages leads to no file"
    mkdir -p "$(dirname "$3")"
    cp "$f" "$3"
}

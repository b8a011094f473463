#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0 OR MIT)
#
# faiss-native.sh [--check] — FAISS built for THIS CPU from Debian's own source package.
#
# Debian's libfaiss-dev is compiled for generic x86-64 (its Hamming loops call libgcc's software
# __popcountdi2), so it is a weak anchor for a popcount-bound workload. This script fetches the same
# version's source (scripts/deb-source.sh: `apt-get source faiss`, bookworm, through a private APT
# configuration holding only a deb-src line, so the host's apt state is untouched), applies Debian's
# patches (dpkg-source), configures the C++ library alone with FAISS's own CMake (cmake + BLAS/LAPACK + OpenMP; no Python, no GPU, no
# tests) with -O3 -march=native, so popcnt / AVX2 / AVX-512 are used where the CPU has them.
#
# What is compiled: by default the objects of libfaiss that the binary indexes under test need
# (IndexBinary{,Flat,Hash}, utils/hamming and their dependencies; OBJECTS below), each with the flags of
# FAISS's own build tree, archived as libfaiss.a. Measured 2026-11-30 on the shared 2-core machine: the
# whole library (81 objects) advanced at about one object per minute at -j2 while others built, i.e.
# 1.5 h, so the full build is opt-in: FAISS_FULL=1 builds the `faiss` target and installs that archive.
# The Hamming kernels are the same source either way.
#
# Result: /var/cache/vrex/faiss-native-<key>/{include,lib/libfaiss.a,build-seconds,recipe,cpu-flags};
# the path is printed on stdout (last line). <key> hashes the recipe (source version, flags, object set,
# compiler, CPU flags), so another CPU or compiler rebuilds. --check prints the path only if it is cached
# (exit 1 otherwise). Environment: VREX_CACHE (default /var/cache/vrex), FAISS_JOBS (default 2),
# FAISS_FULL (default 0), VREX_DEBIAN_MIRROR (default http://deb.debian.org).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
CACHE=${VREX_CACHE:-/var/cache/vrex}
jobs=${FAISS_JOBS:-2}
check_only=0
[[ ${1:-} == --check ]] && check_only=1
log() { echo "faiss-native: $*" >&2; }

suite=bookworm
full=${FAISS_FULL:-0}
# The archive members the shim (bench/faiss_shim.cpp) pulls out of Debian's libfaiss.a (linker map);
# the module link (-Wl,--no-undefined, bench/CMakeLists.txt) fails if one is missing.
OBJECTS=(IndexBinary IndexBinaryFlat IndexBinaryHash utils/hamming utils/utils utils/random utils/Heap
	impl/AuxIndexStructures impl/FaissException)
cxxflags="-O3 -march=native -mtune=native -fPIC -DNDEBUG"
flags=$(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -E '^(popcnt|avx2|avx512.*|bmi2|fma)$' | sort | tr '\n' ' ')
objset="${OBJECTS[*]}"
((full)) && objset=full
recipe="faiss 1.7.3 $suite|$cxxflags|$objset|$(c++ --version | head -n1)|$flags"
key=$(printf '%s' "$recipe" | sha256sum | cut -c1-12)
dest=$CACHE/faiss-native-$key
if [[ -f $dest/lib/libfaiss.a && -f $dest/build-seconds ]]; then
	echo "$dest"
	exit 0
fi
((check_only)) && exit 1

mkdir -p "$CACHE"
exec 9>"$CACHE/.faiss-native.lock"
flock 9
if [[ -f $dest/lib/libfaiss.a && -f $dest/build-seconds ]]; then # built while we waited
	echo "$dest"
	exit 0
fi

# --- source: Debian's source package (scripts/deb-source.sh, shared with scripts/qemu-build.sh) -------
# The work tree survives an interrupted build (objects already compiled are reused).
work=$CACHE/faiss-native.work
mkdir -p "$work"
[[ -d $work/src ]] || rm -f "$work"/faiss_*
dsc=$(bash "$here/../scripts/deb-source.sh" --suite "$suite" faiss "$work" | tail -n 1)
case $(basename "$dsc") in
faiss_1.7.3-*) ;;
*)
	log "unexpected source version $(basename "$dsc") (the benchmark compares against libfaiss-dev 1.7.3)"
	exit 1
	;;
esac
[[ -d $work/src ]] || (cd "$work" && dpkg-source --no-check -x "$(basename "$dsc")" src >&2)

# --- build: the C++ library alone ------------------------------------------------------------------
log "building $(basename "$dsc" .dsc) with -march=native, -j$jobs (this takes a while)"
t0=$(date +%s)
cmake -S "$work/src" -B "$work/build" -G Ninja \
	-DCMAKE_BUILD_TYPE=Release \
	-DCMAKE_CXX_FLAGS="$cxxflags" \
	-DFAISS_ENABLE_GPU=OFF -DFAISS_ENABLE_PYTHON=OFF -DFAISS_ENABLE_C_API=OFF \
	-DBUILD_TESTING=OFF -DBUILD_SHARED_LIBS=OFF -DFAISS_OPT_LEVEL=generic \
	-DCMAKE_INSTALL_PREFIX="$dest.tmp" >&2
rm -rf "$dest.tmp"
mkdir -p "$dest.tmp/lib"
if ((full)); then
	cmake --build "$work/build" -j "$jobs" --target faiss >&2
	cp "$work/build/faiss/libfaiss.a" "$dest.tmp/lib/"
else
	objs=()
	for o in "${OBJECTS[@]}"; do objs+=("faiss/CMakeFiles/faiss.dir/$o.cpp.o"); done
	(cd "$work/build" && ninja -j "$jobs" "${objs[@]}" >&2 && ar rcs "$dest.tmp/lib/libfaiss.a" "${objs[@]}")
fi
(cd "$work/src" && find faiss -name '*.h' -exec install -D -m 0644 {} "$dest.tmp/include/{}" \;)
echo $(($(date +%s) - t0)) >"$dest.tmp/build-seconds"
printf '%s\n' "$recipe" >"$dest.tmp/recipe"
# The CPU features the objects were compiled for, for the report.
echo "$flags" >"$dest.tmp/cpu-flags"
rm -rf "$dest"
mv "$dest.tmp" "$dest"
rm -rf "$work"
log "built in $(cat "$dest/build-seconds") s -> $dest"
echo "$dest"

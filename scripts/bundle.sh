#!/usr/bin/env bash
# A relocatable bundle of a built tree: one compressed archive (tar.xz: xz is on every Linux, zstd
# is not: a GPU node of ours had no zstd, so a .tar.zst could not be unpacked there) that runs on any Linux x86-64 with a glibc at least as new as Debian 12's, without the
# Debian packages: what a cluster user without root needs, and how a GPU machine gets the code.
#
#   scripts/bundle.sh [--fast | --xz-level N] [BUILD_DIR [OUT_DIR]]      (defaults: build, BUILD_DIR)
#   -> OUT_DIR/downscale-<version>-linux-x86_64.tar.xz (the binary's --version, e.g. 0.1.0+g2c748ca);
#   prints its path last
# xz -9 takes minutes on 2 busy cores; --fast is xz -6 (about 2 minutes on 2 cores; 45 MB against
# 51 MB for zstd -6; if that is under 60 MB, -9 is too). --xz-level N: tests/cli/bundle.sh's -2
# (51 MB in 32 s against -6's 46 MB in 76 s; what it checks of the size holds for -6 and -9 a fortiori).
#
# Layout (unpacked):   downscale-<version>-linux-x86_64/
#   bin/downscale, bin/test_*, bin/bench_*, bin/mpirun, bin/orted   RPATH $ORIGIN/../lib
#   bin/env.sh          sets OPAL_PREFIX, UDUNITS2_XML_PATH and the CUDA library path, then runs its arguments
#   lib/libdownscale_cuda.so and every runtime library Debian provides  RPATH $ORIGIN
#   lib/x86_64-linux-gnu/openmpi/lib/openmpi3/   Open MPI's components (where OPAL_PREFIX points it)
#   share/openmpi/ (Open MPI's help texts), share/udunits/ (the unit database),
#   share/natural_earth/ (coastlines and borders for the maps)
#   configs/, tests/cli/, scripts/demo.sh, tests/data/           the demo and the CLI tests
#   scripts/gpu_check.sh, scripts/racecheck_verdict.sh, bench/*.sh, bench/*.py   the GPU check and its benchmarks
#   slurm/              the batch scripts: bin/env.sh sbatch slurm/train_forhlr2.sh ... (docs/bundle.md)
#   README.md           docs/bundle.md
# Not bundled: glibc (libc, libm, libpthread, libdl, librt, ld-linux, ...: the host's), and the
# CUDA/NVIDIA libraries (driver, cudart, cuBLAS, cuDNN, NCCL): the GPU machine provides them, and
# bin/env.sh finds a PyTorch installation's copies (site-packages/nvidia/*/lib).
set -euo pipefail
level=9
while [[ ${1:-} == --* ]]; do
  case $1 in
    --fast) level=6; shift ;;
    --xz-level)
      [[ ${2:-} =~ ^[0-9]$ ]] || { echo "bundle.sh: --xz-level takes 0..9, not '${2:-}'" >&2; exit 2; }
      level=$2; shift 2 ;;
    *) echo "bundle.sh: unknown option $1 (usage: scripts/bundle.sh [--fast | --xz-level N] [BUILD_DIR [OUT_DIR]])" >&2; exit 2 ;;
  esac
done
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(readlink -f "${1:-$src/build}")
out=$(readlink -f "${2:-$build}")
for tool in patchelf xz ldd; do
  command -v $tool >/dev/null || { echo "bundle.sh: $tool is missing (apt-get install patchelf xz-utils)" >&2; exit 2; }
done
[[ -x $build/pipeline/downscale ]] || { echo "bundle.sh: no $build/pipeline/downscale: build first" >&2; exit 2; }

# The name carries the binary's own version (0.1.0+g<rev>, -dirty when built from uncommitted
# changes: io/write_version.cmake), so it says what was built, not where the checkout is now (a
# bundle made after a pull without a rebuild was named after the new HEAD). A binary that does not
# run here: the project's version and the checkout's HEAD, as before.
version=$("$build/pipeline/downscale" --version 2>/dev/null | sed -n 's/^downscale //p' || true)
if [[ -z $version ]]; then
  version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build/CMakeCache.txt")
  rev=$(git -C "$src" rev-parse --short HEAD 2>/dev/null || true)
  version=${version:-0}${rev:+-$rev}
fi
name=downscale-$version-linux-x86_64
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
root=$stage/$name
mkdir -p "$root"/{bin,lib,share}

# --- programs ---
cp "$build/pipeline/downscale" "$root/bin/"
for f in "$build"/tests/test_* "$build"/bench/bench_*; do
  [[ -f $f && -x $f ]] && cp "$f" "$root/bin/"
done
[[ -f $build/lib/libdownscale_cuda.so ]] && cp "$build/lib/libdownscale_cuda.so" "$root/lib/"
# Open MPI: mpirun/orted for multi-rank runs, and the components MPI_Init loads at run time.
ompi_lib=/usr/lib/x86_64-linux-gnu/openmpi/lib
for p in orterun orted; do cp "$(readlink -f "$(command -v $p)")" "$root/bin/$p"; done
ln -s orterun "$root/bin/mpirun"
mkdir -p "$root/lib/x86_64-linux-gnu/openmpi/lib"
cp -r "$ompi_lib/openmpi3" "$root/lib/x86_64-linux-gnu/openmpi/lib/"
cp -r /usr/share/openmpi "$root/share/"
cp -r /usr/share/xml/udunits "$root/share/"
# Natural Earth's coastlines and borders for the evaluation maps (libmagics++-data), at 1:110m and
# 1:50m (2 MB; 1:10m is 12 MB: regional maps fall back to 1:50m). Missing: maps without coastlines.
for res in 110m 50m; do
  mkdir -p "$root/share/natural_earth/$res"
  cp /usr/share/magics/$res/ne_${res}_{land,admin_0_boundary_lines_land}.{shp,shx,dbf,prj} "$root/share/natural_earth/$res/" 2>/dev/null ||
    echo "bundle.sh: no Natural Earth $res data (apt-get install libmagics++-data): maps without coastlines" >&2
done

# --- every library they need, except glibc's and CUDA's ---
is_excluded() {
  case ${1##*/} in
    ld-linux*|libc.so*|libm.so*|libmvec.so*|libpthread.so*|libdl.so*|librt.so*|libresolv.so*|libutil.so*|\
    libanl.so*|libnsl.so*|libnss_*|libBrokenLocale.so*|libthread_db.so*) return 0 ;;
    libcuda*|libcudart*|libcudnn*|libcublas*|libnccl*|libnvidia*|libnvrtc*|libnvJitLink*|libcufft*|libcurand*|libcusparse*|libcusolver*) return 0 ;;
  esac
  return 1
}
elves=()
while IFS= read -r -d '' f; do
  [[ $(head -c4 "$f" | od -An -c | tr -d ' ') == 177ELF ]] && elves+=("$f")
done < <(find "$root/bin" "$root/lib" -type f -print0)
declare -A seen=()
queue=("${elves[@]}")
while ((${#queue[@]})); do
  f=${queue[0]}
  queue=("${queue[@]:1}")
  # ldd lists the whole closure; "not found" is fine only for the CUDA libraries.
  while read -r lib arrow path _; do
    [[ $arrow == "=>" ]] || continue
    is_excluded "$lib" && continue
    [[ $path == not ]] && { echo "bundle.sh: $f needs $lib, not found here" >&2; exit 1; }
    [[ -n ${seen[$lib]:-} ]] && continue
    seen[$lib]=1
    cp -L "$path" "$root/lib/$lib"
  done < <(ldd "$f" 2>/dev/null || true)
done

# --- RPATHs: programs look in ../lib, libraries beside themselves, MPI components two up ---
# DT_RPATH, not DT_RUNPATH (patchelf's default): the loader searches an RPATH before
# LD_LIBRARY_PATH, a RUNPATH after it, and a cluster's loaded modules put their own libstdc++,
# HDF5 or netCDF on LD_LIBRARY_PATH (a user's gcc module made the bundle fail to start with
# "GLIBCXX_3.4.29 not found"). Libraries the bundle lacks (CUDA's, from PyTorch's folders that
# bin/env.sh adds) are still found through LD_LIBRARY_PATH.
for f in "${elves[@]}" "$root"/lib/*.so*; do
  [[ -f $f && ! -L $f ]] || continue
  case $f in
    "$root"/bin/*) rp='$ORIGIN/../lib' ;;
    "$root"/lib/x86_64-linux-gnu/*) rp="\$ORIGIN/$(realpath --relative-to="$(dirname "$f")" "$root/lib")" ;;
    *) rp='$ORIGIN' ;;
  esac
  chmod u+w "$f"
  patchelf --force-rpath --set-rpath "$rp" "$f"
done
strip --strip-unneeded "$root"/bin/test_* "$root"/bin/bench_* 2>/dev/null || true

# --- the demo and the CLI tests ---
mkdir -p "$root/tests" "$root/scripts"
cp -r "$src/configs" "$root/"
cp -r "$src/tests/cli" "$root/tests/"
[[ -d $src/tests/data ]] && cp -r "$src/tests/data" "$root/tests/"
[[ -d $src/tests/dap_server ]] && cp -r "$src/tests/dap_server" "$root/tests/"
# The demo, run from the bundle: nothing to install or build (scripts/demo.sh of a checkout does both).
cp "$src/scripts/bundle_demo.sh" "$root/scripts/demo.sh"
# The GPU check and the benchmarks it runs (against the GPU machine's PyTorch).
cp "$src/scripts/gpu_check.sh" "$src/scripts/racecheck_verdict.sh" "$root/scripts/"
mkdir -p "$root/bench"
cp "$src"/bench/*.sh "$src"/bench/*.py "$root/bench/"
# The Slurm batch scripts: submitted through bin/env.sh, the jobs run the bundle's downscale.
cp -r "$src/slurm" "$root/"
# The user manual (README.md: the stages, every config key, the exit codes, the outputs), under a
# line on running it from the bundle, and docs/ (bundle.md: bin/env.sh, a GPU machine, Slurm;
# the README's links into docs/ then resolve).
{
  echo "> This is downscale's README from its source tree. In this bundle run every command through"
  echo "> \`bin/env.sh\` (\`bin/env.sh bin/downscale --help\`), the demo with \`scripts/demo.sh\`: see"
  echo "> [docs/bundle.md](docs/bundle.md). Building, the test suite and the source files it cites are in the source tree."
  echo
  cat "$src/README.md"
} > "$root/README.md"
mkdir -p "$root/docs"
cp -r "$src/docs/." "$root/docs/"  # with docs/gpu_runs/, the GPU runs' reports that docs/*.md cite
cp "$src/scripts/bundle_env.sh" "$root/bin/env.sh"
chmod +x "$root/bin/env.sh"

# --- one archive ---
mkdir -p "$out"
tar -C "$stage" --owner=0 --group=0 -cf "$stage/$name.tar" "$name"
xz -$level -T0 -f "$stage/$name.tar"
small=$stage/$name.tar.xz
rm -f "$out/$name.tar.zst" "$out/$name.tar.xz"
mv "$small" "$out/"
archive=$out/$(basename "$small")
# An older bundle beside it (another version's name) would be carried too, past a device call's
# 64 MiB, and a `tar xf OUT/downscale-*.tar.xz` would read the second as a member of the first.
others=$(find "$out" -maxdepth 1 -name 'downscale-*-linux-x86_64.tar.*' ! -name "$(basename "$archive")" -printf '%f ')
[[ -z $others ]] || echo "bundle.sh: warning: $out also holds $others: remove them before carrying $out" >&2
echo "bundle.sh: $(du -h "$archive" | cut -f1) (unpacked $(du -sh "$root" | cut -f1)), $(ls "$root/lib" | grep -c '\.so') libraries" >&2
echo "$archive"

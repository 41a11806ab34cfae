#!/usr/bin/env bash
# Installs the Debian 12 packages downscale builds and runs with. Idempotent: packages already
# present are left alone, so a second run costs only the apt look-up.
#   install-deps.sh               what the build and the test suite need
#   install-deps.sh --build-only  what scripts/build.sh needs (the container recipes in
#                                 containers/ use this, so the lists cannot drift apart)
set -euo pipefail

build_packages=(
  build-essential cmake ninja-build pkg-config
  libnetcdf-dev libnetcdf-c++4-dev              # NetCDF and its DAP (OPeNDAP) client
  libudunits2-dev libudunits2-data              # fetch converts the sources' units (its unit database at run time)
  libhdf5-dev                                   # the training store
  libssl-dev                                    # SHA-256 of the store's identity and content (libcrypto)
  libeigen3-dev                                 # sparse regridding weights, small linear algebra
  libdnnl-dev                                   # oneDNN: the CPU backend's kernels
  libopenmpi-dev openmpi-bin                    # data-parallel training
  libgtest-dev                                  # unit tests (scripts/build.sh builds them by default)
  libcli11-dev libyaml-cpp-dev libspdlog-dev nlohmann-json3-dev   # CLI, config, logging, JSON
  libprotobuf-dev protobuf-compiler            # TensorBoard event files (train/tensorboard_event.proto)
  libcairo2-dev fonts-dejavu-core               # evaluation maps (PNG)
  libshp-dev libmagics++-data                   # the maps' coastlines and borders: shapefile reader, Natural Earth data
)
test_packages=(
  netcdf-bin hdf5-tools                         # ncdump, h5dump
  cdo python3-h5py                              # references in tests: CDO regridding, h5py reads the store
  slurm-wlm munge libpmix-dev                   # a private Slurm runs slurm/*.sh (srun --mpi=pmix needs libpmix)
  python3-netcdf4 python3-numpy                 # the test OPeNDAP server (tests/dap_server), for /usr/bin/python3
  python3-netcdf4 python3-xarray                # the product opens in the Python tools users have
  python3-pil                                   # the demo test reads the maps back (coastline pixels)
  patchelf xz-utils                        # scripts/bundle.sh (tests/cli/bundle.sh): RPATH, the archive
  nco udunits-bin cmor-tables libeccodes-data   # tests/cli/check_outputs.sh: ncks -m; the CF check's units (udunits2) and standard names
)

packages=("${build_packages[@]}")
case ${1-} in
  "") packages+=("${test_packages[@]}") ;;
  --build-only) ;;
  *) echo "install-deps: unknown argument '$1' (expected nothing or --build-only)" >&2; exit 2 ;;
esac

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "install-deps: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
echo "install-deps: all packages present"

#!/usr/bin/env bash
# Installs the Debian 12 packages downscale builds and runs with. Idempotent: packages already
# present are left alone, so a second run costs only the apt look-up.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  libnetcdf-dev libnetcdf-c++4-dev netcdf-bin   # NetCDF and its DAP (OPeNDAP) client, ncdump
  libhdf5-dev hdf5-tools                        # the training store, h5dump
  cdo python3-h5py                              # references in tests: CDO regridding, h5py reads the store
  libeigen3-dev                                 # sparse regridding weights, small linear algebra
  libdnnl-dev                                   # oneDNN: the CPU backend's kernels
  libopenmpi-dev openmpi-bin                    # data-parallel training
  slurm-wlm munge libpmix-dev                   # tests: a private Slurm runs slurm/*.sh (srun --mpi=pmix needs libpmix)
  libgtest-dev                                  # unit tests
  python3-netcdf4 python3-numpy                 # the test OPeNDAP server (tests/dap_server), for /usr/bin/python3
  libcli11-dev libyaml-cpp-dev libspdlog-dev nlohmann-json3-dev   # CLI, config, logging, JSON
  libprotobuf-dev protobuf-compiler            # TensorBoard event files (train/tensorboard_event.proto)
  libcairo2-dev fonts-dejavu-core               # evaluation maps (PNG)
  python3-netcdf4 python3-xarray                # tests: the product opens in the Python tools users have
)

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

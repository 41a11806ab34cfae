# Sourced, not run, by slurm/train_forhlr2.sh and slurm/benchmark.sh: the environment modules and
# the command each rank runs (the binary natively, or in a container), one copy for both scripts.
# The caller defines die() (one line naming the script, exit 2) and runs with set -euo pipefail.
# sbatch runs a copy of the batch script from its spool folder, so the scripts cannot find this
# file next to $0: they look where they look for the binary (their own folder when run with bash,
# DOWNSCALE_HOME, the bundle's DOWNSCALE_BUNDLE, the submit folder) and fail with one line if
# it is in none.

# load_modules: DOWNSCALE_MODULES (default the bwHPC names; in a container (DOWNSCALE_CONTAINER)
# none under srun, as the image brings its own compiler, MPI and CUDA and another cluster's module
# names would end the job for nothing, and the host's MPI alone under DOWNSCALE_LAUNCHER=mpirun,
# whose mpirun starts the containers), where a module system exists (none on a plain Debian
# machine, nor in CI); "" loads none; a failed load ends the job.
load_modules() {
  local default="compiler/gnu mpi/openmpi devel/cuda" m init
  if [[ -n ${DOWNSCALE_CONTAINER-} ]]; then
    default=""
    [[ ${DOWNSCALE_LAUNCHER:-srun} != mpirun ]] || default="mpi/openmpi"
  fi
  local modules=${DOWNSCALE_MODULES-$default}
  [[ -n $modules ]] || return 0
  set +u  # module init scripts read unset variables
  if ! type module &>/dev/null; then
    for init in "${MODULESHOME-}/init/bash" /etc/profile.d/lmod.sh /etc/profile.d/modules.sh; do
      [[ -f $init ]] && { source "$init"; break; }
    done
  fi
  if type module &>/dev/null; then
    for m in $modules; do
      module load "$m" || die "module load $m failed: set DOWNSCALE_MODULES to this cluster's module names (or \"\")"
    done
  else
    echo "no module system here: using the environment as it is (DOWNSCALE_MODULES ignored)"
  fi
  set -u
}

# rank_command GPUS: loads the modules (a module may bring the binary or the container runtime),
# then sets the array rank_cmd to what runs on each rank, from DOWNSCALE_CONTAINER,
# DOWNSCALE_CONTAINER_ARGS and DOWNSCALE_BIN; GPUS non-empty: the job's ranks use GPUs (the
# container gets the host's NVIDIA driver).
rank_command() {
  local container=${DOWNSCALE_CONTAINER-} bin image runtime name nv=() container_args
  read -r -a container_args <<<"${DOWNSCALE_CONTAINER_ARGS-}"
  load_modules
  case $container in
    "")
      bin=${DOWNSCALE_BIN-}
      if [[ -z $bin ]]; then
        if command -v downscale >/dev/null; then bin=downscale
        else bin=$(pwd)/build/pipeline/downscale; fi
      fi
      command -v "$bin" >/dev/null ||
        die "downscale binary '$bin' not found or not executable: set DOWNSCALE_BIN, build with scripts/build.sh, or submit a bundle's through its bin/env.sh sbatch ..."
      rank_cmd=("$bin")
      ;;
    apptainer:* | singularity:*)
      image=${container#*:}
      [[ -f $image ]] || die "container image '$image' (DOWNSCALE_CONTAINER=$container) not found"
      runtime=${container%%:*}
      command -v "$runtime" >/dev/null || runtime=apptainer
      command -v "$runtime" >/dev/null || runtime=singularity
      command -v "$runtime" >/dev/null || die "DOWNSCALE_CONTAINER=$container but neither apptainer nor singularity is on PATH"
      # --nv maps the host's NVIDIA driver into the container when the job has GPUs, also those a
      # cluster hands out without GRES (no GPU variables; the driver's device files are there):
      # without the driver every rank trained on the CPU. (--nv on a node without a driver only
      # warns.) The submit folder (the current one) is bound by default, so relative config and
      # run paths work.
      [[ -n $1 || -e ${DOWNSCALE_TEST_NVIDIACTL:-/dev/nvidiactl} ]] && nv=(--nv)
      rank_cmd=("$runtime" exec ${nv[@]+"${nv[@]}"} ${container_args[@]+"${container_args[@]}"} "$image" "${DOWNSCALE_BIN:-downscale}")
      ;;
    udocker:*)
      name=${container#udocker:}
      [[ -n $name ]] || die "DOWNSCALE_CONTAINER=udocker: needs a container name (udocker:NAME)"
      command -v udocker >/dev/null || die "DOWNSCALE_CONTAINER=$container but udocker is not on PATH"
      # --hostenv carries the launcher's rank variables (PMIx, SLURM_*, OMPI_*) into the
      # container; --nometa ignores the image's ENTRYPOINT (downscale), which would otherwise come
      # before the command; the submit folder is mounted at the same path and is the working
      # folder. GPUs: run `udocker setup --nvidia NAME` once beforehand.
      rank_cmd=(udocker run --hostenv --nometa --volume="$(pwd)" --workdir="$(pwd)" ${container_args[@]+"${container_args[@]}"}
                "$name" "${DOWNSCALE_BIN:-/usr/local/bin/downscale}")
      ;;
    *) die "DOWNSCALE_CONTAINER='$container': expected empty, apptainer:IMAGE, singularity:IMAGE or udocker:NAME" ;;
  esac
}

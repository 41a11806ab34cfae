#!/bin/sh
# bin/env.sh COMMAND [ARGS...]: runs COMMAND with the bundle's environment (scripts/bundle.sh).
#   bin/env.sh bin/downscale train --config configs/demo.yaml
#   bin/env.sh mpirun -np 4 bin/downscale train ...
# POSIX sh using builtins only, so it runs where the bundle's libraries are the only ones.
# Sourced (". bin/env.sh", from a shell or ~/.bashrc), $0 is the shell, the bundle cannot be found
# from it, and an exit would end that shell: say how to use it and return. (A subshell's `return`
# cannot tell: dash accepts it in an executed script too.)
case ${0##*/} in
  bash | -bash | sh | -sh | dash | -dash | zsh | -zsh | ksh | -ksh | mksh | -mksh | ash | -ash)
    echo "bin/env.sh is run, not sourced: bin/env.sh COMMAND [ARGS...] (bin/env.sh bash: a shell with the bundle's environment)" >&2
    return 2 2>/dev/null || exit 2 ;;
esac
self=$0
# Through a symlink (~/bin/ds-env -> bundle/bin/env.sh) the bundle is where the link points.
if [ -L "$self" ] && command -v readlink >/dev/null 2>&1; then self=$(readlink -f "$self"); fi
case $self in */*) here=${self%/*} ;; *) here=. ;; esac
DOWNSCALE_BUNDLE=$(cd -P "$here/.." && pwd -P) || exit 1
# Sourced from zsh ($0 is then this file) the bundle is found; sourced from a script ($0 is that
# script) it is not: no bin/downscale there, so say how to use it rather than export wrong paths.
if [ ! -x "$DOWNSCALE_BUNDLE/bin/downscale" ]; then
  echo "bin/env.sh: no bin/downscale in $DOWNSCALE_BUNDLE: run it as .../bin/env.sh COMMAND [ARGS...], not sourced from elsewhere" >&2
  return 2 2>/dev/null || exit 2
fi
export DOWNSCALE_BUNDLE
# Open MPI finds its components and help texts below the bundle, not /usr.
export OPAL_PREFIX="$DOWNSCALE_BUNDLE"
# A process started alone (no mpirun: one rank) needs no Open MPI daemon; a daemon would need ssh
# or rsh even on one node. Without either and outside Slurm, mpirun starts ranks on this node only.
export OMPI_MCA_ess_singleton_isolated="${OMPI_MCA_ess_singleton_isolated:-1}"
if ! command -v ssh >/dev/null 2>&1 && ! command -v rsh >/dev/null 2>&1 && [ -z "${SLURM_JOB_ID:-}" ]; then
  export OMPI_MCA_plm="${OMPI_MCA_plm:-isolated}"
fi
export UDUNITS2_XML_PATH="${UDUNITS2_XML_PATH:-$DOWNSCALE_BUNDLE/share/udunits/udunits2.xml}"
export DOWNSCALE_NATURAL_EARTH="${DOWNSCALE_NATURAL_EARTH:-$DOWNSCALE_BUNDLE/share/natural_earth}"
export PATH="$DOWNSCALE_BUNDLE/bin:$PATH"
# The CUDA plugin needs cuBLAS and cuDNN (and later NCCL) from the machine: a PyTorch installation
# ships them under site-packages/nvidia/*/lib. Its absence is no error: no GPU means the CPU.
if [ -z "${DOWNSCALE_NO_PYTHON_CUDA:-}" ]; then
  py=${DOWNSCALE_PYTHON:-python3}  # one interpreter, its path may hold spaces
  cuda_dirs=$("$py" -c 'import glob, os, nvidia
print(":".join(sorted(d for r in nvidia.__path__ for d in glob.glob(os.path.join(r, "*", "lib")) + glob.glob(os.path.join(r, "*", "*", "lib")))))' 2>/dev/null) || cuda_dirs=
  if [ -n "$cuda_dirs" ]; then
    LD_LIBRARY_PATH="$cuda_dirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    export LD_LIBRARY_PATH
  fi
fi
# (Sourced from zsh with no command: the environment is set; return, not exit, keeps the shell.)
[ $# -gt 0 ] || { echo "usage: bin/env.sh COMMAND [ARGS...]" >&2; return 2 2>/dev/null || exit 2; }
exec "$@"

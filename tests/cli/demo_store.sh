# Sourced by training tests (train_mpi.sh, train_nccl.sh, train_gpu_ranks.sh, train_bf16_cpu.sh):
# a fresh working folder (removed on exit) holding configs/ and a three-year demo store made by
# the real stages (synth -> fetch -> preprocess on configs/demo.yaml, on the CPU: 2000 trains,
# 2001 validates, 2002 tests), and run folders that share that store.
#   source demo_store.sh; demo_store <downscale binary> <source dir> RUN...
# Afterwards: the working folder is the current one and $work; $years holds the --set options
# for these years, which every later command of the test passes too.
years=(--set "synth.years=[2000,2002]" --set "fetch.years=[2000,2002]" --set "preprocess.train_years=[2000,2000]"
       --set "preprocess.validation_years=[2001,2001]" --set "preprocess.test_years=[2002,2002]")
demo_store() {
  local bin=$1 src=$2 stage run
  shift 2
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  cd "$work"
  cp -r "$src/configs" .
  for stage in synth fetch preprocess; do
    "$bin" $stage --config configs/demo.yaml "${years[@]}" --set run.device=cpu 2>/dev/null
  done
  for run in "$@"; do
    mkdir -p "runs/$run/preprocess"
    ln -s "$work/runs/demo/preprocess/store.h5" "runs/$run/preprocess/store.h5"
  done
}

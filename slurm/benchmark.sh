#!/usr/bin/env bash
# Horovod's synthetic benchmark as one Slurm batch job: `downscale benchmark` for every model and
# rank count inside this job's allocation (one srun step each), the JSON lines collected in one
# file, then a table and a PNG of img/s against ranks with the ideal line and the efficiency.
#
# usage: sbatch [sbatch options] slurm/benchmark.sh [options] [-- downscale benchmark options...]
#        bash slurm/benchmark.sh --help
#   -m, --models LIST      models, comma-separated (default resnet50,resnet101,inception_v3)
#   -b, --batch-sizes LIST per-rank batch of each model, in the same order (default the reference's:
#                          256 for the ResNets, 128 for inception_v3; one value: every model)
#   -r, --ranks LIST       rank counts (default 1..SLURM_NTASKS); none may exceed the job's tasks
#   -o, --out DIR          results folder (default benchmark-<job id>): benchmark.jsonl (appended,
#                          so reruns add to it), benchmark.png, benchmark.md, logs/<model>-<N>.log
#   --cpu                  CPU ranks (--device cpu); the default is --device auto (GPUs if any)
#   -h, --help
# Everything after `--` goes to every `downscale benchmark` (e.g. --image-size 64 --num-iters 3
# --precision fp32 --fp16-allreduce). With --cpu, every run has the same threads per rank
# (--cpus-per-task, else the node's cores over the largest run's ranks on a node; `-- --threads N`
# sets them).
#   sbatch --ntasks-per-node=4 --gres=gpu:4 slurm/benchmark.sh                 (1-4 GPUs, 3 models)
#   sbatch --ntasks-per-node=8 --gres=none slurm/benchmark.sh --cpu -r 1,2,4,8 -b 32
# Environment: as slurm/train_forhlr2.sh: DOWNSCALE_BIN, DOWNSCALE_CONTAINER (apptainer:IMAGE,
# singularity:IMAGE, udocker:NAME), DOWNSCALE_CONTAINER_ARGS, DOWNSCALE_SRUN_MPI (default pmix),
# DOWNSCALE_LAUNCHER_ARGS, DOWNSCALE_MODULES, DOWNSCALE_HOME.
# Exit code: 0 every run completed; 1 a run failed (the others still run; see logs/); 2 bad usage
# (ours, or downscale benchmark's: an unknown model or option stops the job at the first run).
#
#SBATCH --job-name=downscale-benchmark
#SBATCH --partition=visu
#SBATCH --nodes=1
#SBATCH --ntasks-per-node=4
#SBATCH --gres=gpu:4
#SBATCH --time=01:00:00
#SBATCH --exclusive
#SBATCH --output=%x-%j.out
#SBATCH --error=%x-%j.err
set -euo pipefail
usage() { sed -n '2,/^#SBATCH/{/^#SBATCH/d;s/^# \{0,1\}//;p}' "$0"; }
die() { echo "benchmark.sh: $*" >&2; exit 2; }
if [[ ${1-} == -h || ${1-} == --help ]]; then usage; exit 0; fi
[[ -n ${SLURM_JOB_ID-} ]] || die "not inside a Slurm job (SLURM_JOB_ID is unset): submit with sbatch; --help for usage"

models="resnet50,resnet101,inception_v3"
batches=""
ntasks=${SLURM_NTASKS:-${SLURM_NPROCS:-1}}
ranks=$(seq -s, 1 "$ntasks")
out=""
device=auto
while [[ $# -gt 0 ]]; do
  case $1 in
    -m | --models | -b | --batch-sizes | -r | --ranks | -o | --out) [[ $# -ge 2 ]] || die "$1 needs a value" ;;&
    -m | --models) models=$2; shift 2 ;;
    -b | --batch-sizes) batches=$2; shift 2 ;;
    -r | --ranks) ranks=$2; shift 2 ;;
    -o | --out) out=$2; shift 2 ;;
    --cpu) device=cpu; shift ;;
    -h | --help) usage; exit 0 ;;
    --) shift; break ;;
    *) die "unknown option '$1' (--help for usage; downscale benchmark options go after --)" ;;
  esac
done
extra=("$@")
IFS=, read -r -a model_list <<<"$models"
# Without -b each model gets the reference's batch (inception_v3 128, the ResNets 256), whichever
# models -m names.
if [[ -z $batches ]]; then
  for m in "${model_list[@]}"; do [[ $m == inception_v3 ]] && batches+=${batches:+,}128 || batches+=${batches:+,}256; done
fi
IFS=, read -r -a batch_list <<<"$batches"
IFS=, read -r -a rank_list <<<"$ranks"
((${#batch_list[@]} == 1 || ${#batch_list[@]} == ${#model_list[@]})) ||
  die "--batch-sizes '$batches': one value or one per model (${#model_list[@]})"
for n in "${rank_list[@]}"; do
  [[ $n =~ ^[1-9][0-9]*$ ]] || die "--ranks '$ranks': '$n' is not a positive whole number"
  ((n <= ntasks)) || die "--ranks '$ranks': $n ranks but the job has $ntasks tasks (sbatch --ntasks-per-node)"
done
out=${out:-benchmark-$SLURM_JOB_ID}
mkdir -p "$out/logs"
# srun (Slurm 22.05 on) no longer passes the job's --cpus-per-task to its steps (see
# train_forhlr2.sh): without this each task had one CPU for all its threads, whoever set them.
[[ -z ${SLURM_CPUS_PER_TASK-} ]] || export SRUN_CPUS_PER_TASK=$SLURM_CPUS_PER_TASK
# CPU ranks: every run gets the same threads per rank, unless given after --: the CPUs of a task
# (--cpus-per-task), else a node's cores over the most ranks a run puts on one node. Each run's own
# share (all the cores for 1 rank, half for 2) would put thread scaling into the efficiency, and
# `downscale benchmark` takes no 1-rank line of other threads as the reference.
threads_given=0
for a in ${extra[@]+"${extra[@]}"}; do [[ $a == --threads || $a == --threads=* ]] && threads_given=1; done
if [[ $device == cpu && $threads_given == 0 ]]; then
  if [[ -n ${SLURM_CPUS_PER_TASK-} ]]; then
    threads=$SLURM_CPUS_PER_TASK
    why="--cpus-per-task"
  else
    # SLURM_TASKS_PER_NODE: "4", "4(x2)" or "4(x2),2": the most tasks on any node.
    per_node=0
    IFS=, read -r -a counts <<<"${SLURM_TASKS_PER_NODE:-${SLURM_NTASKS_PER_NODE:-$ntasks}}"
    for c in "${counts[@]}"; do c=${c%%(*}; ((c > per_node)) && per_node=$c; done
    most=$(printf '%s\n' "${rank_list[@]}" | sort -n | tail -1)
    ((most < per_node || per_node == 0)) && per_node=$most
    cores=${SLURM_CPUS_ON_NODE:-$(nproc)}
    threads=$((cores / per_node > 0 ? cores / per_node : 1))
    why="$cores cores on a node over the $per_node ranks the largest run puts on one"
  fi
  extra+=(--threads "$threads")
  echo "CPU ranks: $threads thread(s) per rank in every run ($why), so that the 1-rank line is the others' reference"
fi

# Modules and the per-rank command: slurm/rank_command.sh, found as train_forhlr2.sh finds it
# (sbatch runs a copy of this script from its spool folder, not next to its siblings).
lib=""  # the first of these folders that has it
for d in "$(dirname "${BASH_SOURCE[0]}")" ${DOWNSCALE_HOME:+"$DOWNSCALE_HOME/slurm"} ${DOWNSCALE_BUNDLE:+"$DOWNSCALE_BUNDLE/slurm"} "${SLURM_SUBMIT_DIR:-$(pwd)}/slurm"; do
  [[ -f $d/rank_command.sh ]] && { lib=$d/rank_command.sh; break; }; done
[[ -n $lib ]] || die "slurm/rank_command.sh not found (not in DOWNSCALE_HOME '${DOWNSCALE_HOME-}', DOWNSCALE_BUNDLE '${DOWNSCALE_BUNDLE-}' nor the submit folder ${SLURM_SUBMIT_DIR:-$(pwd)}): submit from the checkout, through a bundle's bin/env.sh, or set DOWNSCALE_HOME to the checkout"
source "$lib"
gpus=""
[[ $device != cpu ]] && gpus=${CUDA_VISIBLE_DEVICES:-${SLURM_JOB_GPUS:-}}
rank_command "$gpus"
read -r -a launcher_args <<<"${DOWNSCALE_LAUNCHER_ARGS-}"
[[ $(id -u) -eq 0 ]] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

jsonl=$out/benchmark.jsonl
echo "benchmark job $SLURM_JOB_ID on $(hostname): models ${model_list[*]}, ranks ${rank_list[*]}, device $device, results in $jsonl"
rc=0
for i in "${!model_list[@]}"; do
  m=${model_list[i]}
  b=${batch_list[i]:-${batch_list[0]}}
  ((${#batch_list[@]} == 1)) && b=${batch_list[0]}
  for n in "${rank_list[@]}"; do
    log=$out/logs/$m-$n.log
    echo "== $m, batch $b per rank, $n rank(s)"
    # A step of n of the job's tasks; --kill-on-bad-exit: a rank that dies ends the step.
    step_rc=0
    srun "--mpi=${DOWNSCALE_SRUN_MPI:-pmix}" --ntasks="$n" --kill-on-bad-exit=1 ${launcher_args[@]+"${launcher_args[@]}"} \
      "${rank_cmd[@]}" benchmark --model "$m" --batch-size "$b" --device "$device" --json "$jsonl" \
      ${extra[@]+"${extra[@]}"} >"$log" 2>&1 || step_rc=$?
    if ((step_rc == 0)); then
      grep -E '^(Img/sec|Total img/sec|Scaling efficiency)' "$log" || true
    else
      rc=1
      echo "benchmark.sh: $m on $n rank(s) failed (exit $step_rc); last lines of $log:" >&2
      tail -5 "$log" >&2
      # 2: downscale benchmark refused its command line (a model name, an option after --): every
      # other run would too, so stop here with the usage code rather than fail each in turn.
      if ((step_rc == 2)); then
        echo "benchmark.sh: downscale benchmark rejected its options (exit 2): stopping; see the line above" >&2
        exit 2
      fi
    fi
  done
done
[[ -s $jsonl ]] || { echo "benchmark.sh: no results in $jsonl" >&2; exit 1; }

# The table (from every line of the file, the last per model/batch/device/precision/threads/ranks)
# and the plot.
python3 - "$jsonl" "$out/benchmark.md" <<'PY'
import json, sys
rows = {}
for line in open(sys.argv[1]):
    if line.strip():
        j = json.loads(line)
        rows[(j["model"], j["batch"], j["image_size"], j["device"], j["precision"], j["allreduce_dtype"],
              j.get("threads") or 0, j["ranks"])] = j
head = ("| model | batch | image | device | precision | allreduce | threads per rank | ranks | nodes | img/s per rank "
        "| total img/s | efficiency |")
md = [head, "|" + "---|" * 12]
for k in sorted(rows):
    j = rows[k]
    eff = "-" if j.get("efficiency") is None else f"{100 * j['efficiency']:.0f}%"
    md.append(f"| {j['model']} | {j['batch']} | {j['image_size']} | {j['device']} | {j['precision']} | "
              f"{j['allreduce_dtype']} | {j.get('threads') or '-'} | {j['ranks']} | {j['nodes']} | {j['mean']:.1f} ±{j['ci95']:.1f} | "
              f"{j['total']:.1f} | {eff} |")
open(sys.argv[2], "w").write("\n".join(md) + "\n")
print("\n".join(md))
PY
"${rank_cmd[@]}" benchmark --plot "$jsonl" "$out/benchmark.png" && echo "plot: $out/benchmark.png" || rc=1
exit $rc

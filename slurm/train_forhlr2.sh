#!/usr/bin/env bash
# Data-parallel `downscale train` as a Slurm batch job: one MPI rank per GPU on one node of a
# ForHLR II-like cluster (partition visu, 4 GPUs per node).
#
# usage: sbatch [sbatch options] slurm/train_forhlr2.sh [CONFIG] [downscale train options...]
#        bash slurm/train_forhlr2.sh --help
#
#   CONFIG   YAML configuration, relative to the submit folder (default $DOWNSCALE_CONFIG,
#            else configs/north_america.yaml); everything after it goes to `downscale train`:
#              sbatch slurm/train_forhlr2.sh configs/demo.yaml --set run.dir=runs/a --set train.epochs=5
#   sbatch options on the command line win over the #SBATCH lines below, e.g. 2 GPUs:
#              sbatch --ntasks-per-node=2 --gres=gpu:2 slurm/train_forhlr2.sh ...
#            or on CPUs only:  sbatch --ntasks-per-node=2 --gres=none slurm/train_forhlr2.sh ...
#            (one task per GPU: other counts run, with a warning line in the .out and .err)
#
# Environment (sbatch passes the submitting shell's environment to the job):
#   DOWNSCALE_BIN        the binary (default: `downscale` on PATH, else build/pipeline/downscale
#                        under the submit folder; in an apptainer image: `downscale` on the image's
#                        PATH; in udocker, which ignores the image's metadata: /usr/local/bin/downscale)
#   DOWNSCALE_CONTAINER  empty: run natively (default); apptainer:/path/downscale.sif (or
#                        singularity:...): `apptainer exec` per rank; udocker:NAME: `udocker run`
#   DOWNSCALE_CONTAINER_ARGS  extra arguments for apptainer exec / udocker run (binds, ...)
#   DOWNSCALE_LAUNCHER   srun (default: `srun --mpi=$DOWNSCALE_SRUN_MPI`, one task per rank) or
#                        mpirun (Open MPI's, inside the allocation)
#   DOWNSCALE_SRUN_MPI   srun's --mpi plugin (default pmix: the one Open MPI 4 works with)
#   DOWNSCALE_LAUNCHER_ARGS  extra arguments for srun / mpirun
#   DOWNSCALE_USR1_LEAD  seconds by which SIGUSR1 precedes the time limit, when submitted with a
#                        --signal=B:USR1@S other than 120 (a --time within it is refused)
#   DOWNSCALE_MODULES    environment modules to load where a module system exists (default:
#                        "compiler/gnu mpi/openmpi devel/cuda", the bwHPC names; "" loads none)
#   DOWNSCALE_HOME       the checkout (or bundle) whose slurm/rank_command.sh this script sources
#                        (default: the bundle's under bin/env.sh, else the submit folder)
#
# Logs: <job name>-<job id>.out (this script's header and summary) and .err (the ranks' log
# lines, each prefixed "[train rank N]") in the submit folder; Slurm does not create folders for
# them, so an --output/--error into a folder needs that folder to exist before submitting.
# --open-mode=append: a requeued job writes to the same files, after its earlier runs' lines
# (Slurm would otherwise truncate them, and with them why the job stopped and requeued).
# Exit code: the training's (0 success, 1 failure, 2 bad command line or configuration, 3 bad
# input data, 143 stopped by SIGTERM: a SIGTERM to this script alone (scancel --signal=TERM
# --batch) reaches the ranks, which write checkpoint_last.h5 first, under srun, the default
# launcher; a plain scancel or the time limit signals srun too, which kills the ranks at once,
# so only SIGUSR1 below checkpoints at the limit), or 2 when this script finds something wrong before
# launching (also run.device cuda in a job without GPUs, and GPUs allocated where run.device auto
# chose the CPU). `downscale train --check` runs first (once, no MPI): a bad config or store ends
# the job with its exit code before any rank starts, and a training that has ended (resubmitted
# with --resume, requeued after its last epoch) ends it with 0, nothing launched.
#
# Time limit: 120 s before it Slurm sends this script SIGUSR1 (--signal=B:USR1@120), which it
# forwards to the ranks: they finish the step, write checkpoint_last.h5 and exit 75; the script
# then requeues the job (--requeue, `scontrol requeue`), and the requeued job (SLURM_RESTART_COUNT
# > 0) passes --resume-auto: it continues from that checkpoint by itself.
#
#SBATCH --job-name=downscale-train
#SBATCH --partition=visu
#SBATCH --nodes=1
#SBATCH --ntasks-per-node=4
#SBATCH --gres=gpu:4
#SBATCH --time=02:00:00
#SBATCH --output=%x-%j.out
#SBATCH --error=%x-%j.err
#SBATCH --open-mode=append
#SBATCH --signal=B:USR1@120
#SBATCH --requeue
set -euo pipefail

usage() { sed -n '2,/^#SBATCH/{/^#SBATCH/d;s/^# \{0,1\}//;p}' "$0"; }
# The reason goes to the .err and, where that is another file, to the .out too: a job whose .out
# is empty reads as one that never started.
die() {
  echo "train_forhlr2.sh: $*" >&2
  [[ /dev/stdout -ef /dev/stderr ]] || echo "== stopped (exit 2): $*"
  exit 2
}
# A warning goes to both files too (the job goes on).
say_warning() { echo "train_forhlr2.sh: warning: $*" >&2; echo "== warning: $*"; }

if [[ ${1-} == -h || ${1-} == --help ]]; then usage; exit 0; fi
# Without an allocation, srun would make a new one and mpirun would run on this (login) node.
[[ -n ${SLURM_JOB_ID-} ]] ||
  die "not inside a Slurm job (SLURM_JOB_ID is unset): submit with sbatch (or run inside salloc); --help for usage"

# --- arguments: [CONFIG] [downscale train options...] ---
config=${DOWNSCALE_CONFIG:-configs/north_america.yaml}
has_config=0
for a in "$@"; do [[ $a == -c || $a == --config || $a == --config=* ]] && has_config=1; done
if [[ $# -gt 0 && $1 != -* ]]; then
  config=$1
  shift
fi
train_args=(train)
if ((!has_config)); then
  # A missing file would otherwise fail once per rank, after the launch.
  [[ -f $config ]] || die "config file '$config' not found (relative to $(pwd)); pass it as the first argument"
  train_args+=(--config "$config")
fi
# Slurm's CPUs per task is the right thread count when the job asks for one (--cpus-per-task):
# otherwise each rank counts all the node's cores. Placed first so the user's --set wins.
if [[ -n ${SLURM_CPUS_PER_TASK-} ]]; then
  train_args+=(--set "run.threads=$SLURM_CPUS_PER_TASK")
  # srun (Slurm 22.05 on) no longer takes the job's --cpus-per-task for its steps: each task got
  # one CPU, and where the site binds tasks to cores, all the threads above shared one core.
  export SRUN_CPUS_PER_TASK=$SLURM_CPUS_PER_TASK
fi
train_args+=("$@")
# A requeued job continues from its checkpoint (one written on SIGUSR1 below, or an epoch's).
if [[ ${SLURM_RESTART_COUNT:-0} -gt 0 ]]; then
  resume_given=0
  for a in "$@"; do [[ $a == --resume || $a == --resume-auto ]] && resume_given=1; done
  ((resume_given)) || train_args+=(--resume-auto)
fi

# --- modules, and what runs on each rank (the binary, natively or in a container) ---
# Shared with benchmark.sh in slurm/rank_command.sh. sbatch runs a copy of this script from its
# spool folder, so that file is looked for as the binary is: next to this script when run with
# bash, then DOWNSCALE_HOME, the bundle (DOWNSCALE_BUNDLE, set by bin/env.sh), the submit folder.
lib=""  # the first of these folders that has it
for d in "$(dirname "${BASH_SOURCE[0]}")" ${DOWNSCALE_HOME:+"$DOWNSCALE_HOME/slurm"} ${DOWNSCALE_BUNDLE:+"$DOWNSCALE_BUNDLE/slurm"} "${SLURM_SUBMIT_DIR:-$(pwd)}/slurm"; do
  [[ -f $d/rank_command.sh ]] && { lib=$d/rank_command.sh; break; }; done
[[ -n $lib ]] || die "slurm/rank_command.sh not found (not in DOWNSCALE_HOME '${DOWNSCALE_HOME-}', DOWNSCALE_BUNDLE '${DOWNSCALE_BUNDLE-}' nor the submit folder ${SLURM_SUBMIT_DIR:-$(pwd)}): submit from the checkout, through a bundle's bin/env.sh, or set DOWNSCALE_HOME to the checkout"
source "$lib"
gpus=${CUDA_VISIBLE_DEVICES:-${SLURM_JOB_GPUS:-${SLURM_STEP_GPUS:-}}}
# Slurm's NoDevFiles and a user's -1 hide every GPU: none.
[[ $gpus == NoDevFiles || $gpus == -1 ]] && gpus=""
# The GPUs Slurm allocated to the job (GRES), whatever CUDA_VISIBLE_DEVICES the submit shell passed.
allocated_gpus=${SLURM_JOB_GPUS:-${SLURM_STEP_GPUS:-}}
rank_command "$gpus"

# --- the launcher: one rank per task of the allocation ---
ntasks=${SLURM_NTASKS:-${SLURM_NPROCS:-1}}
read -r -a launcher_args <<<"${DOWNSCALE_LAUNCHER_ARGS-}"
case ${DOWNSCALE_LAUNCHER:-srun} in
  srun)
    # --kill-on-bad-exit: a rank that dies without MPI_Abort (a signal, the OOM killer) ends the
    # step instead of leaving the others waiting in an allreduce until the time limit.
    launch=(srun "--mpi=${DOWNSCALE_SRUN_MPI:-pmix}" --kill-on-bad-exit=1 ${launcher_args[@]+"${launcher_args[@]}"})
    ;;
  mpirun)
    command -v mpirun >/dev/null || die "DOWNSCALE_LAUNCHER=mpirun but mpirun is not on PATH (a module to load?)"
    # Open MPI reads the allocation (nodes, slots) from Slurm itself. (The ranks inherit this
    # batch step's SLURM_PROCID=0; `downscale train` checks OMPI_COMM_WORLD_* instead when set.)
    launch=(mpirun -np "$ntasks" ${launcher_args[@]+"${launcher_args[@]}"})
    # Open MPI refuses root unless told twice; only then (CI runs as root, clusters do not).
    if [[ $(id -u) -eq 0 ]]; then
      export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    fi
    # Without ssh/rsh, mpirun aborts while opening its rsh launcher even inside an allocation,
    # where it launches through Slurm anyway.
    if [[ -z ${OMPI_MCA_plm_rsh_agent-} ]] && ! command -v ssh >/dev/null && ! command -v rsh >/dev/null; then
      export OMPI_MCA_plm_rsh_agent=false
    fi
    # A bundle's bin/env.sh sets OMPI_MCA_plm=isolated (ranks on this machine only) where it finds
    # no ssh/rsh outside a job, and sbatch passes the submit shell's environment on: inside the
    # allocation that would put every rank on the first node. Open MPI's Slurm launcher is right here.
    if [[ ${OMPI_MCA_plm-} == isolated ]]; then
      echo "train_forhlr2.sh: OMPI_MCA_plm=isolated came from the submit shell (bin/env.sh): unset, so mpirun launches over the allocation's nodes"
      unset OMPI_MCA_plm
    fi
    ;;
  *) die "DOWNSCALE_LAUNCHER='$DOWNSCALE_LAUNCHER': expected srun or mpirun" ;;
esac
# One rank per GPU: with more tasks on a node than GPUs, ranks share a GPU (local rank mod GPUs:
# slower, and the GPU's memory split); with fewer, GPUs sit idle. Allowed (MPS, a deliberate
# choice), so a warning, not an error. SLURM_TASKS_PER_NODE reads "4", "2(x3)" or "3,1".
if [[ -n $gpus ]]; then
  ngpus=$(tr ',' '\n' <<<"$gpus" | grep -c .)
  per_node=0
  for t in ${SLURM_TASKS_PER_NODE//,/ }; do t=${t%%(*}; [[ $t =~ ^[0-9]+$ ]] && ((t > per_node)) && per_node=$t; done
  if ((per_node > ngpus)); then
    say_warning "$per_node tasks on a node but $ngpus GPU(s) ($gpus): ranks share GPUs; ask for --gres=gpu:$per_node, or --ntasks-per-node=$ngpus"
  elif ((per_node > 0 && per_node < ngpus)); then
    say_warning "$per_node task(s) on a node but $ngpus GPUs ($gpus): $((ngpus - per_node)) GPU(s) idle; ask for --ntasks-per-node=$ngpus, or --gres=gpu:$per_node"
  fi
fi
if [[ $(id -u) -eq 0 ]]; then
  # Under srun too, the ranks' Open MPI checks for root at MPI_Init.
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi

# A bad config, store or model fails here, once, with its own exit code (2 or 3): launched, each
# rank would fail on its own and srun would end the others first (the job then reports 143).
# --ranks: the tasks launched below, against the global batch of a checkpoint to resume (a count
# given in DOWNSCALE_LAUNCHER_ARGS instead is not seen here; the ranks then check it themselves).
tmpdir=$(mktemp -d)
trap 'rm -rf "$tmpdir"' EXIT
check=("${rank_cmd[@]}" train --check --ranks "$ntasks" "${train_args[@]:1}")
rc=0
# Its stderr kept too (the reason run.device auto gives for the CPU): shown once it ends.
"${check[@]}" > "$tmpdir/check.out" 2> "$tmpdir/check.err" || rc=$?
cat "$tmpdir/check.err" >&2
cat "$tmpdir/check.out"
model_dir=$(sed -n 's/^output folder //p' "$tmpdir/check.out")
if ((rc != 0)); then
  echo "== downscale train --check failed with exit code $rc: nothing launched ($(printf '%q ' "${check[@]}"))"
  exit "$rc"
fi
# A training that has ended (all its epochs, or its patience spent): a job submitted again with
# --resume or --resume-auto, or requeued after the last epoch, has nothing to launch. It completes
# (exit 0), so that a chain of jobs (--dependency=afterany) or a requeue ends cleanly.
# One stopped after its last checkpoint (killed, a node lost) may have left its folder unsettled
# (check's `settle:` line: no best model yet, metrics.csv without its last epoch): the ranks are
# launched then, and settle it training nothing, as train --resume does.
settle_only=0
if done=$(sed -n 's/^finished: //p' "$tmpdir/check.out") && [[ -n $done ]]; then
  echo "== $done"
  if settle=$(sed -n 's/^settle: //p' "$tmpdir/check.out") && [[ -n $settle ]]; then
    echo "== the folder is settled first: $settle"
    settle_only=1
  else
    echo "== nothing launched; the job completes"
    exit 0
  fi
fi

device=$(sed -n 's/^device \([a-z]*\) (run.device)$/\1/p' "$tmpdir/check.out")
# run.device cuda where no GPU can be: every rank would fail on its own after the launch. No GPUs
# given by Slurm and no NVIDIA driver on this node; GPUs a cluster hands out without GRES (the
# driver's /dev/nvidiactl present) pass, and the ranks say what they find.
if [[ $device == cuda && -z $gpus && ! -e /dev/nvidiactl ]]; then
  die "run.device is cuda but this job has no GPU (no CUDA_VISIBLE_DEVICES or SLURM_JOB_GPUS, no NVIDIA driver on $(hostname -s)): submit with --gres=gpu:N to a GPU partition, or --set run.device=auto to train on the CPU"
fi

# GPUs Slurm allocated to the job (GRES) but run.device auto found none usable on this node (no
# driver, a CUDA module not loaded): the training would run on the CPU with the allocation's GPUs
# idle, and requeue so for days. Stopped, with the check's reason; run.device cpu trains on the
# CPU on purpose. (A CUDA_VISIBLE_DEVICES alone, passed on from the submit shell, is no allocation.)
if [[ -n $allocated_gpus && $device == auto ]] && grep -q '^backend cpu' "$tmpdir/check.out"; then
  why=$(grep -o 'running on the CPU: .*' "$tmpdir/check.err" | head -1 || true)
  die "this job has GPUs ($allocated_gpus) but run.device auto chose the CPU on $(hostname -s)${why:+ (${why#running on the CPU: })}: its GPUs would stay idle. Load the CUDA driver or module the node needs (see the check's lines above), or --set run.device=cpu to train on the CPU on purpose"
fi

# The time limit against SIGUSR1's lead (--signal=B:USR1@120 above; DOWNSCALE_USR1_LEAD=SECONDS
# when submitted with another lead): within the lead, Slurm signals the job as it starts, so
# every run would checkpoint and requeue before it trained a step, again and again. squeue's %l
# reads MM:SS, H:MM:SS or D-HH:MM:SS (or UNLIMITED, where there is nothing to check).
limit_seconds() {
  local t=$1 days=0 x
  local -a p
  if [[ $t == *-* ]]; then days=${t%%-*}; t=${t#*-}; fi
  [[ -n $t ]] || return 0
  IFS=: read -r -a p <<<"$t"
  for x in "$days" "${p[@]}"; do [[ $x =~ ^[0-9]+$ ]] || return 0; done
  local a=$((10#${p[0]})) b=$((10#${p[1]:-0})) c=$((10#${p[2]:-0}))
  if [[ $1 == *-* ]]; then echo $((days * 86400 + a * 3600 + b * 60 + c))  # D-HH[:MM[:SS]]
  elif ((${#p[@]} == 3)); then echo $((a * 3600 + b * 60 + c))           # H:MM:SS
  else echo $((a * 60 + b)); fi                                          # MM[:SS]
}
limit=$(squeue -h -j "$SLURM_JOB_ID" -o %l 2>/dev/null || true)
limit_s=$(limit_seconds "$limit")
lead=${DOWNSCALE_USR1_LEAD:-120}
if [[ -n $limit_s ]]; then
  if ((limit_s <= lead)); then
    die "the job's time limit ($limit) is not longer than the ${lead} s by which SIGUSR1 precedes it (--signal=B:USR1@${lead}): every run would write its checkpoint and requeue as it starts, without training; submit with --time longer than $((lead / 60 + 3)) minutes (with another lead, --signal=B:USR1@S, set DOWNSCALE_USR1_LEAD=S)"
  elif ((limit_s < lead + 180)); then
    say_warning "the job's time limit ($limit) leaves $((limit_s - lead)) s before SIGUSR1 (${lead} s before the limit) to start and train; each run then checkpoints and requeues, so the training advances by that much a run"
  fi
fi

cmd=("${launch[@]}" "${rank_cmd[@]}" "${train_args[@]}")
echo "== downscale train: job ${SLURM_JOB_ID} (${SLURM_JOB_NAME-}) on ${SLURM_JOB_NODELIST-?}, run $(( ${SLURM_RESTART_COUNT:-0} + 1 ))"
echo "   nodes ${SLURM_JOB_NUM_NODES:-${SLURM_NNODES-?}}, tasks ${ntasks} (${SLURM_TASKS_PER_NODE-?} per node)," \
     "GPUs ${gpus:-none}, container ${DOWNSCALE_CONTAINER:-none}"
echo "   folder $(pwd)"
echo "   command: $(printf '%q ' "${cmd[@]}")"
start=$(date +%s)
# The checkpoint as it stands (inode, mtime in seconds, size; "absent"): a new one written after a
# signal differs, whatever the file system's time resolution (AtomicFile renames a new file in).
checkpoint_stamp() { stat -c '%i %Y %s' "$model_dir/checkpoint_last.h5" 2>/dev/null || echo absent; }
child=""
pending=""
forwarded=0
forward() {
  # A signal before the launch (Slurm's lead reached as the job starts): passed on once it runs.
  [[ -n $child ]] || { pending=$1; return 0; }
  # `scontrol requeue` below sends this script SIGTERM after the training has ended: nothing to pass on.
  kill -0 "$child" 2>/dev/null || return 0
  forwarded=1
  if [[ $1 == TERM && ${DOWNSCALE_LAUNCHER:-srun} == srun && -n ${SLURM_JOB_ID-} ]]; then
    # srun passes SIGUSR1 on, but answers SIGTERM by killing its tasks (no checkpoint, exit 137):
    # Slurm signals the training step's tasks themselves instead (this script's only srun step;
    # not the batch or extern steps), and srun waits for them as for any exit.
    local steps
    steps=$(squeue -h -s -j "$SLURM_JOB_ID" -o %i 2>/dev/null | grep -E "^$SLURM_JOB_ID\.[0-9]+$" || true)
    if [[ -n $steps ]]; then
      echo "== TERM received: sending it to the ranks (scancel --signal=TERM $(echo $steps)), which write checkpoint_last.h5 and stop"
      # shellcheck disable=SC2086
      scancel --signal=TERM $steps 2>/dev/null && return 0
    fi
    echo "== TERM received: no training step found to signal; passing it to srun, which ends the ranks"
    kill -TERM "$child" 2>/dev/null || true
    return 0
  fi
  if [[ $1 == TERM ]]; then
    # Open MPI's mpirun passes SIGTERM to the ranks and kills them shortly after: a rank may or
    # may not finish its mid-epoch checkpoint first, and mpirun exits 1 either way.
    term_to_mpirun=1
    echo "== TERM received: passing it to mpirun, which passes it to the ranks and ends them soon after; the last checkpoint written stays"
  else
    [[ -n $model_dir && ! -e $tmpdir/usr1 ]] && checkpoint_stamp >"$tmpdir/usr1"  # see the 137 below
    echo "== $1 received: passing it to the training, which writes checkpoint_last.h5 and stops"
  fi
  kill -"$1" "$child" 2>/dev/null || true
}
term_to_mpirun=0
trap 'forward USR1' USR1
trap 'forward TERM' TERM
# In the background, so that the traps above run while it trains (bash runs a trap only after
# the foreground command ends). srun and mpirun pass the signal on to every rank.
"${cmd[@]}" &
child=$!
[[ -z $pending ]] || forward "$pending"
rc=0
wait "$child" || rc=$?
# A trap ends `wait` early: wait again for the training's own exit code.
while ((forwarded)); do
  forwarded=0
  rc=0
  wait "$child" || rc=$?
done
echo "== training exited with code $rc after $(( $(date +%s) - start )) s"
# mpirun's own 1 only: a rank's 75 (a SIGUSR1 checkpoint first) keeps its requeue, other codes say what failed.
if ((term_to_mpirun)) && [[ $rc -eq 1 ]]; then
  echo "== mpirun exited $rc after the TERM it passed on: exit 143 (terminated, not a failure of the training); checkpoint_last.h5 is the last one the ranks finished (an epoch's, or a mid-epoch one)"
  rc=143
fi
# srun can report 0 for a step whose tasks never launched (seen: a requeued job's launch failing in
# Slurm's PMIx set-up): a finished training always leaves a fresh train_report.json.
# (A launch that only settled a finished run's folder writes no report: the check, asked again,
# must find nothing left to settle.)
if [[ $rc -eq 0 && $settle_only -eq 0 && -n $model_dir && ! $model_dir/train_report.json -nt $tmpdir/check.out ]]; then
  echo "== the launcher exited 0 but the training left no new $model_dir/train_report.json: it did not run"
  rc=1
elif [[ $rc -eq 0 && $settle_only -eq 1 ]] && "${check[@]}" 2>/dev/null | grep -q '^settle: '; then
  echo "== the launcher exited 0 but $model_dir is still to settle: the ranks did not run"
  rc=1
fi
# Every rank exits 75 after SIGUSR1's checkpoint, and under --kill-on-bad-exit the first to exit
# makes srun kill those still ending (tearing down CUDA and NCCL takes seconds): srun then reports
# 137, the highest signal, for a planned stop. A checkpoint written after the signal is the sign.
if [[ $rc -ne 0 && $rc -ne 75 && -e $tmpdir/usr1 && -e $model_dir/checkpoint_last.h5 && $(checkpoint_stamp) != "$(cat "$tmpdir/usr1")" ]]; then
  echo "== the launcher exited $rc after SIGUSR1, but $model_dir/checkpoint_last.h5 was written after the signal: the ranks stopped as planned and the launcher ended one still exiting; taken as exit 75"
  rc=75
fi
if [[ $rc -eq 75 ]]; then
  # 75: stopped on SIGUSR1 with checkpoint_last.h5 written (io/stop_signal.h, kExitRequeue).
  # The launcher reports the ranks' exit 75 as a failure in the .err ("the job has been aborted",
  # "Exited with exit code 75"): said there too, so that nobody reads it as one.
  echo "== exit 75 is the planned checkpoint-and-requeue: the launcher's abort messages above are expected" >&2
  if scontrol requeue "$SLURM_JOB_ID"; then
    echo "== requeued job $SLURM_JOB_ID: it resumes from checkpoint_last.h5 when it starts again"
  else
    echo "== scontrol requeue $SLURM_JOB_ID failed: submit again with --resume"
  fi
fi
exit "$rc"

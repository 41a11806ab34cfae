#!/usr/bin/env bash
# slurm/train_forhlr2.sh's own decisions, without Slurm (a second each; slurm_e2e.sh runs it under
# a real Slurm): the script is run as a batch step would run it, with the SLURM_* variables set by
# hand and stand-ins for srun, scontrol and downscale on PATH.
#  1. more tasks on a node than GPUs (ranks share a GPU) or fewer (GPUs idle): a warning line
#     naming both counts in .err and .out; one task per GPU: none;
#  2. the requeue path: the training exits 75 (SIGUSR1), the script runs `scontrol requeue`, which
#     sends the script SIGTERM (as Slurm does): the job exits 75, and no "TERM received: passing
#     it to the training" line for a training that has already ended.
#  3. run.device cuda in a job without GPUs on a node without the NVIDIA driver: exit 2 before
#     srun, one line naming run.device and --gres; with GPUs it launches.
#  4. slurm/benchmark.sh when downscale benchmark refuses its options (exit 2, a model name):
#     the job stops at the first run with exit 2, not one failure per model and rank count; -m two
#     models without -b: each at the reference's batch (it stopped on the three default batches).
#  5. both scripts copied alone into a spool folder, as sbatch runs them: without
#     slurm/rank_command.sh in DOWNSCALE_HOME, DOWNSCALE_BUNDLE or the submit folder, exit 2 with
#     one line naming it; with it in any of the three, the job launches.
#  6. slurm/scaling.sh (stand-ins for sbatch, scontrol, squeue, scancel, sinfo): CPU runs get
#     the smallest node's CPUs over the most ranks as --cpus-per-task, and no efficiency is
#     given against a 1-rank run of other threads per rank; a job pending for
#     PartitionConfig is cancelled at once with one line naming it and the reason, exit 1;
#     ReqNodeNotAvail once it lasts DOWNSCALE_SCALING_NODE_WAIT; a clearing reason (Priority) is
#     waited for until the default time-out (DOWNSCALE_SCALING_TIMEOUT).
#  7. DOWNSCALE_LAUNCHER=mpirun with OMPI_MCA_plm=isolated inherited from the submit shell (a
#     bundle's bin/env.sh on a login node without ssh): unset before mpirun, with a line saying so.
#  8. the time limit (squeue %l) against SIGUSR1's 120 s lead: 2:00 or less, exit 2 before the
#     launch naming the limit (each run would requeue without training); under 5 minutes a
#     warning; an hour, a day, UNLIMITED or no squeue: nothing; DOWNSCALE_USR1_LEAD moves the bar.
#  9. GPUs in the job but run.device auto chose the CPU (no driver on the node): exit 2 before the
#     launch, naming the GPUs and the check's reason; a GPU backend, or run.device cpu, launches.
# 10. a training that has ended (train --check's `finished:` line: a job submitted again with
#     --resume, a requeue after the last epoch): nothing launched, exit 0, the reason in the .out;
#     with a `settle:` line (stopped after its last checkpoint) the ranks are launched to settle
#     the folder, and their run's missing report is no failure.
# 11. containers and CPUs: in a container (DOWNSCALE_CONTAINER=apptainer:IMAGE) no host modules
#     are loaded by default (another cluster's module names ended the job); --nv is given where
#     the driver's device file is, GPU variables or not (a node handed out without GRES trained
#     on the CPU), and not where it is absent; --cpus-per-task reaches srun's steps
#     (SRUN_CPUS_PER_TASK: srun no longer takes the job's since Slurm 22.05).
# 12. SIGUSR1, then srun's 137 (--kill-on-bad-exit killed a rank still exiting after the planned
#     stop): with checkpoint_last.h5 written after the signal, taken as 75 and requeued; without,
#     137 stays.
#   usage: slurm_script_checks.sh <source dir>
set -euo pipefail
src=$(realpath "$1")
fail() { echo "FAIL: $*" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
mkdir -p fake configs out
touch configs/c.yaml
# downscale: --check names the output folder; a training exits $FAKE_RC and, on 0, writes its report.
cat >fake/downscale <<'SH'
#!/usr/bin/env bash
if [[ $2 == --check ]]; then
  [[ ${FAKE_BACKEND-} == cpu ]] && echo "[train] run.device auto: running on the CPU: no NVIDIA driver (libcuda.so.1 missing)" >&2
  [[ -n ${FAKE_BACKEND-} ]] && echo "backend ${FAKE_BACKEND} computes train.precision tf32"
  echo "device ${FAKE_DEVICE:-auto} (run.device)"; echo "output folder out"
  [[ -n ${FAKE_FINISHED-} ]] && echo "finished: out/checkpoint_last.h5 holds all 5 epochs of train.epochs 5: nothing to train"
  [[ -n ${FAKE_SETTLE-} && ! -e out/settled ]] && echo "settle: checkpoint_best.h5 is missing: copied from checkpoint_last.h5 (train --resume does this, training nothing)"
  exit 0
fi
# FAKE_USR1: signal the batch script (Slurm's --signal=B:USR1), then end with $FAKE_RC, having
# written a checkpoint after it when FAKE_CKPT is set.
if [[ -n ${FAKE_USR1-} ]]; then
  trap '' USR1
  kill -USR1 $PPID
  # Once the script has taken the signal in (it notes the checkpoint first, then says so), a
  # checkpoint written as AtomicFile writes one: a new file renamed over the old.
  for _ in $(seq 100); do grep -q "USR1 received" job.out && break; sleep 0.1; done
  [[ -n ${FAKE_CKPT-} ]] && { echo new >out/ck.tmp && mv out/ck.tmp out/checkpoint_last.h5; }
fi
[[ ${FAKE_RC:-0} -eq 0 && -z ${FAKE_SETTLE-} ]] && touch out/train_report.json  # a finished run settled writes none
[[ -n ${FAKE_SETTLE-} && -z ${FAKE_NOT_SETTLED-} ]] && touch out/settled
exit "${FAKE_RC:-0}"
SH
# srun: drops its options, runs the command once.
printf '%s\n' '#!/usr/bin/env bash' 'echo "srun $*" >>srun.log' 'echo "SRUN_CPUS_PER_TASK=${SRUN_CPUS_PER_TASK-}" >>srun_env.log' \
  'while [[ $1 == -* ]]; do shift; done' 'exec "$@"' >fake/srun
# apptainer exec [options] IMAGE COMMAND...: logs its options, runs the command.
printf '%s\n' '#!/usr/bin/env bash' 'echo "apptainer $*" >>apptainer.log' 'shift' 'while [[ $1 == -* ]]; do shift; done' \
  'shift' 'exec "$@"' >fake/apptainer
# squeue -o %l: the job's time limit, $FAKE_LIMIT (none by default: nothing to check).
printf '%s\n' '#!/usr/bin/env bash' '[[ -n ${FAKE_LIMIT-} ]] && echo "$FAKE_LIMIT"; exit 0' >fake/squeue
# scontrol requeue: Slurm ends the batch script with SIGTERM.
printf '%s\n' '#!/usr/bin/env bash' 'echo "scontrol $*" >>scontrol.log' 'kill -TERM $PPID' >fake/scontrol
chmod +x fake/*
for v in $(compgen -e | grep -E '^(SLURM_|DOWNSCALE_|CUDA_VISIBLE)' || true); do unset "$v"; done
export PATH=$work/fake:$PATH DOWNSCALE_MODULES="" SLURM_JOB_ID=7 SLURM_NTASKS=4

# job <tasks per node> <GPUs>: runs the script, .out and .err in job.out / job.err; its exit code.
job() {
  local rc=0
  SLURM_TASKS_PER_NODE=$1 CUDA_VISIBLE_DEVICES=$2 bash "$src/slurm/train_forhlr2.sh" configs/c.yaml >job.out 2>job.err || rc=$?
  return $rc
}
echo "== 1. tasks against GPUs"
job 4 0,1 || fail "4 tasks, 2 GPUs: exit $?, expected 0 (a warning only)"
grep -q "warning: 4 tasks on a node but 2 GPU(s) (0,1): ranks share GPUs" job.err || { cat job.err; fail "no warning for 4 tasks on 2 GPUs"; }
grep -q "warning: 4 tasks" job.out || fail "the warning is not in the .out"
job '2(x2)' 0,1,2,3 || fail "2 tasks, 4 GPUs: exit $?"
grep -q "warning: 2 task(s) on a node but 4 GPUs (0,1,2,3): 2 GPU(s) idle" job.err || { cat job.err; fail "no warning for idle GPUs"; }
job 4 0,1,2,3 || fail "4 tasks, 4 GPUs: exit $?"
grep -q warning job.err job.out && { cat job.err; fail "a warning for one task per GPU"; }
job 4 "" || fail "no GPUs: exit $?"
grep -q warning job.err job.out && { cat job.err; fail "a warning without GPUs"; }

echo "== 2. exit 75: requeue, then Slurm's SIGTERM"
rc=0
FAKE_RC=75 job 4 "" || rc=$?
[[ $rc -eq 75 ]] || { cat job.out job.err; fail "exit $rc after the requeue, expected 75"; }
grep -q "^scontrol requeue 7$" scontrol.log || fail "scontrol requeue 7 was not run"
grep -q "requeued job 7" job.out || { cat job.out; fail "no 'requeued job 7' line"; }
grep -q "TERM received" job.out && { cat job.out; fail "the requeue's SIGTERM was reported as passed to an ended training"; }

echo "== 3. run.device cuda without GPUs"
if [[ -e /dev/nvidiactl ]]; then
  echo "skipped: this node has the NVIDIA driver (/dev/nvidiactl), where the script launches and the ranks decide"
else
  rm -f srun.log
  rc=0
  FAKE_DEVICE=cuda job 2 "" || rc=$?
  [[ $rc -eq 2 ]] || { cat job.out job.err; fail "run.device cuda without GPUs: exit $rc, expected 2"; }
  grep -q "train_forhlr2.sh: run.device is cuda but this job has no GPU .*--gres=gpu:N" job.err || { cat job.err; fail "no message naming run.device and --gres"; }
  [[ -e srun.log ]] && fail "srun ran despite run.device cuda without GPUs"
  FAKE_DEVICE=cuda job 2 0,1 || fail "run.device cuda with GPUs 0,1: exit $?"
  grep -q "srun " srun.log || fail "srun did not run with GPUs"
fi

echo "== 4. benchmark.sh: a usage error stops at the first run"
rm -f srun.log
rc=0
FAKE_RC=2 bash "$src/slurm/benchmark.sh" --cpu -m resnet5,resnet101 -r 1,2 >bench.out 2>bench.err || rc=$?
[[ $rc -eq 2 ]] || { cat bench.out bench.err; fail "benchmark.sh after downscale's exit 2: exit $rc, expected 2"; }
[[ $(grep -c . srun.log) -eq 1 ]] || { cat bench.err srun.log; fail "benchmark.sh went on after a usage error"; }
grep -q -- "--model resnet5 --batch-size 256 " srun.log || { cat srun.log; fail "-m without -b: not the reference's batch 256"; }
grep -q "rejected its options (exit 2)" bench.err || { cat bench.err; fail "no line saying why benchmark.sh stopped"; }
# --cpu: every run gets the same threads per rank (a 1-rank line of other threads is no reference):
# here 2 cores over the 2 ranks of the largest run; the most tasks on any node of
# SLURM_TASKS_PER_NODE ("2(x2),4": 4); --cpus-per-task; none added when given after -- in either form.
grep -q -- "--threads 1\( \|$\)" srun.log || { cat srun.log; fail "benchmark.sh --cpu: no --threads 1 (2 cores, 2 ranks)"; }
bench_threads() {  # <expected --threads or "none"> <env...> -- <benchmark.sh arguments>
  local want=$1; shift
  local -a envs=()
  while [[ $1 != -- ]]; do envs+=("$1"); shift; done
  shift
  rm -f srun.log
  env "${envs[@]}" FAKE_RC=2 bash "$src/slurm/benchmark.sh" --cpu -m resnet50 "$@" >bench.out 2>bench.err || true
  local got
  got=$(grep -o -- "--threads[ =][0-9]*" srun.log | tr '\n' ' ')
  if [[ $want == none ]]; then [[ $got == "--threads=3 " ]] || fail "benchmark.sh -- --threads=3: srun got '$got'"
  else [[ $got == "--threads $want " ]] || { cat bench.out; fail "benchmark.sh ${envs[*]} $*: srun got '$got', expected --threads $want"; }; fi
}
bench_threads 4 SLURM_TASKS_PER_NODE='2(x2),4' SLURM_CPUS_ON_NODE=16 -- -r 1,4
bench_threads 8 SLURM_TASKS_PER_NODE='2(x2),4' SLURM_CPUS_ON_NODE=16 -- -r 1,2
bench_threads 3 SLURM_CPUS_PER_TASK=3 -- -r 1,2
bench_threads none SLURM_CPUS_ON_NODE=16 -- -r 1,2 -- --threads=3
echo "== 5. a copy in sbatch's spool folder finds slurm/rank_command.sh as it finds the binary"
# sbatch runs a copy of the script (slurm_script) from its spool folder: nothing next to it.
mkdir -p spool
cp "$src/slurm/train_forhlr2.sh" spool/slurm_script
cp "$src/slurm/benchmark.sh" spool/bench_script
rc=0
SLURM_TASKS_PER_NODE=4 bash spool/slurm_script configs/c.yaml >job.out 2>job.err || rc=$?
[[ $rc -eq 2 ]] || { cat job.out job.err; fail "no slurm/rank_command.sh anywhere: exit $rc, expected 2"; }
[[ $(grep -c . job.err) -eq 1 ]] && grep -q "^train_forhlr2.sh: slurm/rank_command.sh not found .*DOWNSCALE_HOME" job.err ||
  { cat job.err; fail "not one line naming slurm/rank_command.sh and DOWNSCALE_HOME"; }
# ... and the .out says why too: an empty .out reads as a job that never started.
grep -q "^== stopped (exit 2): slurm/rank_command.sh not found" job.out || { cat job.out; fail "the .out does not say why the job stopped"; }
rc=0
bash spool/bench_script --cpu -r 1 >bench.out 2>bench.err || rc=$?
[[ $rc -eq 2 ]] && grep -q "^benchmark.sh: slurm/rank_command.sh not found" bench.err || { cat bench.err; fail "benchmark.sh without slurm/rank_command.sh: exit $rc"; }
for where in DOWNSCALE_HOME DOWNSCALE_BUNDLE SLURM_SUBMIT_DIR; do
  rm -f srun.log
  env "$where=$src" SLURM_TASKS_PER_NODE=4 bash spool/slurm_script configs/c.yaml >job.out 2>job.err ||
    { cat job.err; fail "$where=$src: exit $?"; }
  grep -q "srun " srun.log || fail "$where=$src: srun did not run"
done
echo "== 6. scaling.sh: a job that can never start is cancelled, not waited for"
# Stand-ins: sbatch numbers jobs from 101; a job with --ntasks-per-node in $FAKE_STUCK stays
# PENDING with squeue reason $FAKE_REASON, the others are COMPLETED; scancel marks CANCELLED.
mkdir -p fake6 && touch store.h5
cat >fake6/sbatch <<'SH'
#!/usr/bin/env bash
n=$(( $(cat jobid 2>/dev/null || echo 100) + 1 )); echo $n >jobid
echo "$*" >>sbatch.log
for a; do [[ $a == --ntasks-per-node=* ]] && r=${a#*=}; [[ $a == run.dir=* ]] && dir=${a#run.dir=}; done
[[ " $FAKE_STUCK " == *" $r "* ]] && echo PENDING >state.$n || echo COMPLETED >state.$n
# FAKE_REPORT: the run's report, 1 rank with 2 threads, more ranks with 1 each.
if [[ -n ${FAKE_REPORT-} ]]; then
  mkdir -p "$dir/train"
  echo "{\"samples_per_second\": $((100 * r)), \"device\": \"cpu\", \"threads_per_rank\": $((r == 1 ? 2 : 1))}" >"$dir/train/train_report.json"
fi
echo $n
SH
# sinfo -N -o %c: each node's CPUs.
printf '%s\n' '#!/usr/bin/env bash' 'printf "16\n32\n"' >fake6/sinfo
printf '%s\n' '#!/usr/bin/env bash' 'echo "JobId=$4 JobState=$(cat state.$4) ExitCode=0:0"' >fake6/scontrol
printf '%s\n' '#!/usr/bin/env bash' 'echo "$FAKE_REASON"' >fake6/squeue
printf '%s\n' '#!/usr/bin/env bash' 'for j; do echo CANCELLED >state.$j; echo "scancel $j" >>scancel.log; done' >fake6/scancel
chmod +x fake6/*
# scaling <ranks> <out> [train args]: scaling.sh with the stand-ins; its exit code, stderr in <out>.err.
scaling() {
  local rc=0
  rm -f scancel.log
  PATH=$work/fake6:$PATH bash "$src/slurm/scaling.sh" --ranks "$1" --cpu --poll 0.1 --store store.h5 --out "$2" \
    configs/c.yaml "${@:3}" >"$2.out" 2>"$2.err" || rc=$?
  return $rc
}
rc=0
FAKE_STUCK=4 FAKE_REASON=PartitionConfig scaling 1,4 s1 || rc=$?
[[ $rc -eq 1 ]] || { cat s1.out s1.err; fail "a job pending for PartitionConfig: exit $rc, expected 1"; }
grep -q "^scaling.sh: job 102 (4 rank(s)) can never start: pending with reason PartitionConfig; cancelling it$" s1.err ||
  { cat s1.err; fail "no line naming job 102 and PartitionConfig"; }
grep -qx "scancel 102" scancel.log || fail "job 102 was not cancelled"
grep -q "| 4 | 102 | CANCELLED (PartitionConfig) (no report) |" s1/scaling.md || { cat s1/scaling.md; fail "the table does not say why job 102 was cancelled"; }
# ReqNodeNotAvail may clear (nodes back from maintenance): cancelled only once it lasts NODE_WAIT.
rc=0
FAKE_STUCK=1 FAKE_REASON="ReqNodeNotAvail, UnavailableNodes:n1" DOWNSCALE_SCALING_NODE_WAIT=1 scaling 1 s2 || rc=$?
[[ $rc -eq 1 ]] && grep -q "^scaling.sh: job 103 (1 rank(s)) can never start: pending with reason ReqNodeNotAvail, UnavailableNodes:n1 (for more than 1 s)" s2.err ||
  { cat s2.err; fail "ReqNodeNotAvail for more than DOWNSCALE_SCALING_NODE_WAIT: exit $rc"; }
# A reason that clears (Priority): waited for until the default time-out, here 1 s.
rc=0
FAKE_STUCK=1 FAKE_REASON=Priority DOWNSCALE_SCALING_TIMEOUT=1 scaling 1 s3 || rc=$?
[[ $rc -eq 1 ]] && grep -q "1 job(s) still not finished after 1 s (--timeout, DOWNSCALE_SCALING_TIMEOUT)" s3.err ||
  { cat s3.err; fail "DOWNSCALE_SCALING_TIMEOUT=1: exit $rc"; }
grep -q "can never start" s3.err && fail "a job pending for Priority was taken for one that can never start"
grep -q "^scancel " scancel.log || fail "the timed-out job was not cancelled"
# One run folder per rank count: a count given twice is refused before any submission.
rc=0
scaling 1,2,1 s4 || rc=$?
[[ $rc -eq 2 ]] && grep -q "^scaling.sh: --ranks '1,2,1': 1 is given twice$" s4.err && [[ ! -e s4/jobs.tsv ]] ||
  { cat s4.err; fail "--ranks 1,2,1: exit $rc"; }
# Under train.name the report is in train/<name>/: --collect finds it there.
rc=0
FAKE_STUCK= scaling 1 s5 --set train.name=mnn || rc=$?
grep -q "| 1 | [0-9]* | COMPLETED (no report) |" s5/scaling.md || { cat s5.out s5.err; fail "a completed job without its report yet"; }
mkdir -p s5/runs/ranks-1/train/mnn
printf '%s' '{"ranks": 1, "nodes": 1, "samples_per_second": 12.5, "samples_per_second_per_rank": [12.5],
  "total_seconds": 9.0, "final_train_loss": 1.25}' >s5/runs/ranks-1/train/mnn/train_report.json
rc=0
PATH=$work/fake6:$PATH bash "$src/slurm/scaling.sh" --collect --out s5 --poll 0.1 >s5c.out 2>s5c.err || rc=$?
grep -q "| 1 | [0-9]* | COMPLETED | .* | 12.5 |" s5/scaling.md || { cat s5c.out s5c.err s5/scaling.md; fail "the report under train/mnn/ not collected (exit $rc)"; }
rm -f sbatch.log
rc=0
FAKE_REPORT=1 scaling 1,4 s9 || rc=$?
[[ $rc -eq 0 ]] || { cat s9.err; fail "scaling.sh with reports: exit $rc"; }
[[ $(grep -c -- "--cpus-per-task=4 " sbatch.log) -eq 2 ]] || { cat sbatch.log; fail "CPU runs not given 16 CPUs over 4 ranks each"; }
grep -q "^| 4 | [0-9]* | COMPLETED | 0:0 | 400.0 | 100.0 | - | - |" s9/scaling.md &&
  grep -q "No speed-up or efficiency where the ranks ran other CPU threads than the reference's (4 ranks of 1 thread(s) against 1 of 2)" s9/scaling.md ||
  { cat s9/scaling.md; fail "an efficiency against a 1-rank run of other threads"; }

echo "== 7. OMPI_MCA_plm=isolated from the submit shell does not reach mpirun"
printf '%s\n' '#!/usr/bin/env bash' 'echo "mpirun plm=${OMPI_MCA_plm-unset}" >>mpirun.log' 'shift 2; exec "$@"' >fake/mpirun
chmod +x fake/mpirun
rm -f mpirun.log
OMPI_MCA_plm=isolated DOWNSCALE_LAUNCHER=mpirun SLURM_TASKS_PER_NODE=4 bash "$src/slurm/train_forhlr2.sh" configs/c.yaml \
  >job.out 2>job.err || { cat job.err; fail "mpirun launch: exit $?"; }
grep -qx "mpirun plm=unset" mpirun.log || { cat mpirun.log; fail "OMPI_MCA_plm=isolated reached mpirun"; }
grep -q "OMPI_MCA_plm=isolated came from the submit shell" job.out || fail "no line saying OMPI_MCA_plm was unset"

echo "== 8. the time limit against SIGUSR1's lead"
for limit in 1:00 2:00 0-00:02:00; do
  rm -f srun.log
  rc=0
  FAKE_LIMIT=$limit job 4 "" || rc=$?
  [[ $rc -eq 2 ]] || { cat job.out job.err; fail "time limit $limit: exit $rc, expected 2"; }
  grep -q "the job's time limit ($limit) is not longer than the 120 s by which SIGUSR1 precedes it" job.err ||
    { cat job.err; fail "time limit $limit: no line naming it"; }
  grep -q "time limit ($limit)" job.out || fail "time limit $limit: the reason is not in the .out"
  [[ ! -e srun.log ]] || fail "time limit $limit: launched anyway"
done
FAKE_LIMIT=4:00 job 4 "" || fail "time limit 4:00: exit $?, expected 0 (a warning only)"
grep -q "warning: the job's time limit (4:00) leaves 120 s before SIGUSR1" job.err || { cat job.err; fail "no warning for 4:00"; }
grep -q "warning: the job's time limit" job.out || fail "the 4:00 warning is not in the .out"
for limit in 1:00:00 1-00:00:00 UNLIMITED 30:00; do
  FAKE_LIMIT=$limit job 4 "" || fail "time limit $limit: exit $?"
  grep -q "time limit" job.err job.out && { cat job.err; fail "time limit $limit: a warning"; }
done
FAKE_LIMIT=2:00 DOWNSCALE_USR1_LEAD=30 job 4 "" || fail "2:00 with a lead of 30 s: exit $?, expected 0"

echo "== 9. GPUs in the job, the CPU chosen by run.device auto"
rm -f srun.log
rc=0
SLURM_JOB_GPUS=0,1 FAKE_BACKEND=cpu job 2 0,1 || rc=$?
[[ $rc -eq 2 ]] || { cat job.out job.err; fail "GPUs 0,1 and the CPU backend: exit $rc, expected 2"; }
grep -q "train_forhlr2.sh: this job has GPUs (0,1) but run.device auto chose the CPU on .* (no NVIDIA driver (libcuda.so.1 missing)): its GPUs would stay idle.*--set run.device=cpu" job.err ||
  { cat job.err; fail "no line naming the GPUs, the reason and run.device=cpu"; }
grep -q "^== stopped (exit 2): this job has GPUs" job.out || { cat job.out; fail "the .out does not say why"; }
[[ ! -e srun.log ]] || fail "launched on the CPU with GPUs idle"
SLURM_JOB_GPUS=0,1 FAKE_BACKEND=cpu FAKE_DEVICE=cpu job 2 0,1 || fail "run.device cpu with GPUs: exit $?, expected 0 (on purpose)"
SLURM_JOB_GPUS=0,1 FAKE_BACKEND=cuda job 2 0,1 || fail "a GPU backend with GPUs: exit $?"
FAKE_BACKEND=cpu job 2 "" || fail "the CPU backend without GPUs: exit $?"
# No allocation: a CUDA_VISIBLE_DEVICES passed on from the submit shell, Slurm's NoDevFiles, -1.
for v in 0,1 NoDevFiles -1; do
  FAKE_BACKEND=cpu job 2 "$v" || { cat job.err; fail "CUDA_VISIBLE_DEVICES=$v without GRES, the CPU backend: exit $?"; }
done
grep -q "GPU(s)" job.err && { cat job.err; fail "CUDA_VISIBLE_DEVICES=-1 counted as GPUs"; }
# A finished training ends the job with 0 before the device checks (run.device cuda, no GPU).
if [[ ! -e /dev/nvidiactl ]]; then
  FAKE_FINISHED=1 FAKE_DEVICE=cuda job 2 "" || { cat job.out job.err; fail "a finished training under run.device cuda without GPUs: exit $?"; }
fi

echo "== 10. a training that has ended: nothing launched, exit 0"
rm -f srun.log out/train_report.json
rc=0
FAKE_FINISHED=1 job 2 "" || rc=$?
[[ $rc -eq 0 ]] || { cat job.out job.err; fail "a finished training: exit $rc, expected 0"; }
grep -q "^== out/checkpoint_last.h5 holds all 5 epochs of train.epochs 5: nothing to train" job.out &&
  grep -q "^== nothing launched; the job completes" job.out || { cat job.out; fail "the .out does not say why nothing ran"; }
[[ ! -e srun.log ]] || fail "a finished training was launched"
# One stopped after its last checkpoint (check's settle: line): the ranks are launched to settle
# the folder, which writes no report, and the job completes (it ended at once, the folder left
# without its best model).
rc=0
FAKE_FINISHED=1 FAKE_SETTLE=1 job 2 "" || rc=$?
[[ $rc -eq 0 && -e srun.log ]] || { cat job.out job.err; fail "a finished training to settle: exit $rc, launched: $([[ -e srun.log ]] && echo yes || echo no)"; }
grep -q "^== the folder is settled first: checkpoint_best.h5 is missing" job.out && ! grep -q "it did not run" job.out ||
  { cat job.out; fail "the .out of a finished training settled"; }
[[ ! -e out/train_report.json ]] || fail "the settling fake wrote a report"
# A launch that exits 0 without settling (its ranks never ran): the check, asked again, still
# says settle, and the job fails.
rm -f out/settled
rc=0
FAKE_FINISHED=1 FAKE_SETTLE=1 FAKE_NOT_SETTLED=1 job 2 "" || rc=$?
[[ $rc -eq 1 ]] && grep -q "is still to settle: the ranks did not run" job.out ||
  { cat job.out; fail "a settling launch that settled nothing: exit $rc, expected 1"; }
rm -f out/settled
echo "== 11. containers: no host modules by default, --nv where the driver is; CPUs per task reach srun"
# A module system whose every load fails (this cluster's names are not bwHPC's).
mkdir -p modules/init
printf '%s\n' 'module() { echo "module $*" >>module.log; return 1; }' >modules/init/bash
touch image.sif
rm -f srun.log module.log apptainer.log
rc=0
(unset DOWNSCALE_MODULES; MODULESHOME=$work/modules job 2 "") || rc=$?
[[ $rc -eq 2 ]] && grep -q "module load compiler/gnu failed" job.err ||
  { cat job.err; fail "natively with the default modules on another cluster: exit $rc, expected 2 naming the module"; }
rm -f module.log
rc=0
(unset DOWNSCALE_MODULES; MODULESHOME=$work/modules DOWNSCALE_CONTAINER=apptainer:image.sif \
  DOWNSCALE_TEST_NVIDIACTL=$work/no-driver job 2 "") || rc=$?
[[ $rc -eq 0 ]] || { cat job.err; fail "in a container: exit $rc, expected 0"; }
[[ ! -e module.log ]] || { cat module.log; fail "host modules loaded for a container run"; }
grep -q "apptainer exec image.sif downscale train" apptainer.log || { cat apptainer.log; fail "not run in the container"; }
grep -q -- "--nv" apptainer.log && { cat apptainer.log; fail "--nv without GPUs or driver"; }
rm -f apptainer.log
DOWNSCALE_CONTAINER=apptainer:image.sif DOWNSCALE_TEST_NVIDIACTL=$work/image.sif job 2 "" ||
  { cat job.err; fail "a container on a node with the driver, no GPU variables: exit $?"; }
grep -q "apptainer exec --nv image.sif downscale train" apptainer.log || { cat apptainer.log; fail "no --nv where the driver is"; }
# Containers started by the host's mpirun: the host's MPI module is the one loaded by default.
rc=0
(unset DOWNSCALE_MODULES; MODULESHOME=$work/modules DOWNSCALE_CONTAINER=apptainer:image.sif DOWNSCALE_LAUNCHER=mpirun \
  job 2 "") || rc=$?
[[ $rc -eq 2 ]] && grep -q "module load mpi/openmpi failed" job.err && ! grep -q "compiler/gnu" module.log ||
  { cat job.err module.log; fail "a container under mpirun: exit $rc, expected 2 at the host's MPI module alone"; }
rm -f module.log
rm -f srun_env.log
SLURM_CPUS_PER_TASK=16 job 2 "" || fail "--cpus-per-task 16: exit $?"
grep -q "^SRUN_CPUS_PER_TASK=16$" srun_env.log || { cat srun_env.log; fail "srun's steps not given the job's CPUs per task"; }
echo "== 12. SIGUSR1 then 137 from srun: requeued when the checkpoint was written after the signal"
rm -f scontrol.log
echo old >out/checkpoint_last.h5  # an epoch's, from before the signal (same second, same size)
rc=0
FAKE_USR1=1 FAKE_CKPT=1 FAKE_RC=137 job 2 "" || rc=$?
[[ $rc -eq 75 ]] || { cat job.out job.err; fail "USR1, a checkpoint after it, srun 137: exit $rc, expected 75"; }
grep -q "^scontrol requeue 7$" scontrol.log || fail "not requeued"
grep -q "the launcher exited 137 after SIGUSR1, but out/checkpoint_last.h5 was written after the signal" job.out ||
  { cat job.out; fail "the .out does not say why 137 was taken as 75"; }
rm -f scontrol.log
rc=0
FAKE_USR1=1 FAKE_RC=137 job 2 "" || rc=$?
[[ $rc -eq 137 && ! -e scontrol.log ]] || { cat job.out; fail "USR1 and 137 without a new checkpoint: exit $rc, expected 137 and no requeue"; }
echo "ok"

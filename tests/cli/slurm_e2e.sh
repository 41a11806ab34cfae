#!/usr/bin/env bash
# slurm/train_forhlr2.sh and slurm/scaling.sh under a real Slurm (Debian's slurm-wlm 22.05)
# started by this test on this machine: a private munged, slurmctld and slurmd on free ports,
# their state, spool, logs and munge key in a temporary folder, one node (this machine) in a
# partition named visu as on ForHLR II, no GPUs (every job asks --gres=none), no cgroups.
#  1. `sbatch slurm/train_forhlr2.sh configs/demo.yaml ...` with 2 ranks (srun --mpi=pmix):
#     COMPLETED with ExitCode 0:0, its .out/.err named with the job id, every rank's log lines
#     in the .err, the checkpoint, metrics.csv and train_report.json in the run folder; the
#     same with DOWNSCALE_LAUNCHER=mpirun (Open MPI's mpirun inside the allocation), and with
#     DOWNSCALE_CONTAINER=apptainer:IMAGE through a stand-in for apptainer (a missing image: exit 2);
#  2. a bad --set key, epochs 0, test years inside the training years: the job FAILED with exit
#     code 2, found by `downscale train --check` before srun launched any rank (every time, not
#     143 when srun ended a rank first);
#  3. kill -9 of rank 1: srun --kill-on-bad-exit ends the step (FAILED) within
#     30 s (KillWait 5 s here: the survivor goes at the SIGKILL); SIGUSR1 to
#     the batch shell (as --signal=B:USR1@120 at the limit): the ranks checkpoint mid-epoch, exit 75,
#     the script requeues the job, which resumes from the checkpoint by itself and completes, both
#     runs' lines in the same .out/.err (--open-mode=append); SIGTERM to the batch shell alone
#     (scancel --signal=TERM --batch): the ranks checkpoint mid-epoch, the job exits 143;
#  4. slurm/scaling.sh for 1 and 2 ranks: the table has both runs, COMPLETED, speed-up 1.00 for 1.
#  5. slurm/benchmark.sh on CPU ranks (1, 2) for two models at batch 2 and 32x32 images: COMPLETED,
#     the JSON lines with efficiency, the table and the plot; scaling.sh's plot from 4.
# The store is small, built with the real command as in train_mpi.sh (synth -> fetch ->
# preprocess on configs/demo.yaml, three years). Installs slurm-wlm, munge and libpmix-dev when
# missing (root only; otherwise the test is skipped, exit 77). Whatever happens, the daemons
# and job processes it started end and its folder is removed (trap on EXIT).
#   usage: slurm_e2e.sh <downscale binary> <source dir>
set -euo pipefail
bin=$(realpath "$1")
src=$(realpath "$2")
t_start=$(date +%s)
fail() { echo "FAIL: $*" >&2; exit 1; }

# --- Slurm, munge and the PMIx plugin's library ---
need=()
for c in sbatch srun scontrol slurmctld slurmd munged mungekey; do command -v $c >/dev/null || need=(slurm-wlm munge); done
dpkg-query -W -f='${Status}' libpmix-dev 2>/dev/null | grep -q "install ok installed" || need+=(libpmix-dev)
if ((${#need[@]})); then
  if [[ $(id -u) -ne 0 ]]; then echo "SKIPPED: needs ${need[*]} (scripts/install-deps.sh installs them)"; exit 77; fi
  echo "installing ${need[*]}"
  apt-get update -qq
  # policy-rc.d-less machines start the packaged daemons: harmless, they use /etc and not our ports.
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
[[ $(id -u) -eq 0 ]] || { echo "SKIPPED: slurmd must run as root to start jobs"; exit 77; }

# A Slurm job this test runs inside (on a cluster) must not leak into ours.
for v in $(compgen -e | grep '^SLURM_' || true); do unset "$v"; done
unset DOWNSCALE_CONTAINER DOWNSCALE_LAUNCHER DOWNSCALE_LAUNCHER_ARGS DOWNSCALE_CONFIG DOWNSCALE_TEST_FAIL_RANK

work=$(mktemp -d /tmp/slurm_e2e.XXXXXX)
# munged insists every folder above its socket is searchable by all.
chmod 755 "$work"
# Every process this test starts (daemons, jobs: sbatch passes the environment on) carries this
# mark, so that the clean-up finds the ones that outlive their parents, and no others.
export DS_SLURM_E2E_MARK=$work
pids=()
hosts_line=""
cleanup() {
  local rc=$?
  set +e
  if [[ -S $work/munge/munge.socket && -n ${SLURM_CONF-} ]]; then
    jobs_left=$(timeout 5 squeue -h -o %i 2>/dev/null)
    if [[ -n $jobs_left ]]; then
      timeout 5 scancel $jobs_left
      for _ in $(seq 50); do [[ -z $(timeout 5 squeue -h -o %i 2>/dev/null) ]] && break; sleep 0.2; done
    fi
  fi
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for _ in $(seq 50); do
    alive=0
    for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
    ((alive)) || break
    sleep 0.1
  done
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  # Leftovers whose daemon is gone: job processes by the mark, slurmstepd (which clears its
  # environment) by its working folder, our log folder. Never this shell.
  for e in /proc/[0-9]*/environ; do
    p=${e#/proc/}; p=${p%/environ}
    [[ $p == "$$" || $p == "$BASHPID" ]] && continue
    if [[ $(readlink "/proc/$p/cwd" 2>/dev/null) == "$work"/* ]] ||
       tr '\0' '\n' 2>/dev/null <"$e" | grep -qxF "DS_SLURM_E2E_MARK=$work"; then
      kill -9 "$p" 2>/dev/null
    fi
  done
  if [[ -n $hosts_line ]]; then
    # /etc/hosts may be a bind mount (containers): rewrite it in place rather than rename over it.
    grep -vxF "$hosts_line" /etc/hosts >"$work/hosts" && cat "$work/hosts" >/etc/hosts
  fi
  if ((rc != 0)) && [[ -d $work/log ]]; then
    echo "--- last lines of the Slurm logs"
    tail -n 15 "$work"/log/*.log
  fi
  rm -rf "$work"
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- the cluster ---
node=$(hostname -s)
# Without the host name in /etc/hosts each job step waits ~5 s on a failed name look-up.
if ! getent hosts "$node" >/dev/null; then
  hosts_line="127.0.0.1 $node # slurm_e2e.sh $$"
  echo "$hosts_line" >>/etc/hosts
  echo "note: added '$node' to /etc/hosts for the test (removed at the end)"
fi
mkdir -p "$work"/{munge,etc,state,spool,log,tmp}
chmod 700 "$work/etc"
mungekey -c -k "$work/etc/munge.key" 2>/dev/null || dd if=/dev/urandom of="$work/etc/munge.key" bs=1024 count=1 status=none
chmod 400 "$work/etc/munge.key"
munged -F --socket="$work/munge/munge.socket" --key-file="$work/etc/munge.key" --pid-file="$work/munge/munged.pid" \
  --log-file="$work/log/munged.log" --seed-file="$work/munge/munged.seed" 2>>"$work/log/munged.log" &
pids+=($!)
for _ in $(seq 100); do [[ -S $work/munge/munge.socket ]] && break; sleep 0.05; done
[[ -S $work/munge/munge.socket ]] || { cat "$work/log/munged.log"; fail "munged did not start"; }

# Two ports free now, chosen by the kernel (another test or a second copy of this one may run).
read -r ctld_port slurmd_port < <(/usr/bin/python3 -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')
cpus=$(nproc)
((cpus >= 2)) || cpus=2  # config_overrides below: two ranks even on one core
export SLURM_CONF=$work/etc/slurm.conf
cat >"$SLURM_CONF" <<EOF
ClusterName=dse2e
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
AuthType=auth/munge
CredType=cred/munge
# cred_expire: how long a step credential lives, and so how long Slurm holds a requeued job
# (its credentials revoked on the node must expire first; 120 s by default). 10 s keeps section
# 3b short without bypassing that hold: releasing the job early (scontrol update StartTime=now)
# let its new step meet the revoked credential now and then ("Unauthorized credential").
AuthInfo=socket=$work/munge/munge.socket,cred_expire=10
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
TmpFS=$work/tmp
SlurmctldPidFile=$work/state/slurmctld.pid
SlurmdPidFile=$work/spool/slurmd.pid
SlurmctldLogFile=$work/log/slurmctld.log
SlurmdLogFile=$work/log/slurmd.log
# No systemd, no cgroups: track job processes by parent, no binding.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
MpiDefault=none
ReturnToService=2
# Start a job as soon as the previous one frees the node (the default waits up to 3 s).
SchedulerParameters=batch_sched_delay=0
# Job ids unlike another run's (shared /tmp names, logs read by a person).
FirstJobId=$(( (RANDOM % 900 + 100) * 1000 ))
# A step's tasks get SIGTERM, then SIGKILL this long after (the default 30 s): section 3's
# survivor, waiting in a collective for the rank killed, goes at the SIGKILL.
KillWait=5
# scontrol remembers ended jobs (state, exit code) this long; no accounting storage (sacct).
MinJobAge=600
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=1000 State=UNKNOWN
PartitionName=visu Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
slurmctld -D -f "$SLURM_CONF" >>"$work/log/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D -N "$node" -f "$SLURM_CONF" >>"$work/log/slurmd.out" 2>&1 &
pids+=($!)
for _ in $(seq 150); do [[ $(sinfo -h -o %T 2>/dev/null) == idle ]] && break; sleep 0.1; done
[[ $(sinfo -h -o %T 2>/dev/null) == idle ]] || { sinfo; fail "the node did not become idle within 15 s"; }
echo "slurm up after $(( $(date +%s) - t_start )) s: node $node, ports $ctld_port/$slurmd_port, $(sinfo -h -o '%c CPUs')"

# --- the store ---
cd "$work"
cp -r "$src/configs" .
years=(--set "synth.years=[2000,2002]" --set "fetch.years=[2000,2002]" --set "preprocess.train_years=[2000,2000]"
       --set "preprocess.validation_years=[2001,2001]" --set "preprocess.test_years=[2002,2002]")
"$bin" synth --config configs/demo.yaml "${years[@]}" 2>/dev/null
"$bin" fetch --config configs/demo.yaml "${years[@]}" 2>/dev/null
"$bin" preprocess --config configs/demo.yaml "${years[@]}" 2>/dev/null
for run in e2e mpirun container bad kill requeue term; do
  mkdir -p runs/$run/preprocess
  ln -s "$work/runs/demo/preprocess/store.h5" runs/$run/preprocess/store.h5
done
common=("${years[@]}" --set run.threads=1 --set train.epochs=2 --set train.warmup_epochs=0)

# What the jobs inherit: this binary, no modules, and temporary files (Open MPI's) in our folder.
export DOWNSCALE_BIN=$bin DOWNSCALE_HOME=$src DOWNSCALE_MODULES="" TMPDIR=$work/tmp
ranks=2
script=$src/slurm/train_forhlr2.sh

# wait_job <id> <seconds>: until the job has ended; prints its JobState and ExitCode.
wait_job() {
  local line=""
  for _ in $(seq $(( $2 * 10 ))); do
    line=$(scontrol show job -o "$1")
    [[ $line =~ JobState=(COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY) ]] && break
    sleep 0.1
  done
  echo "$(grep -o 'JobState=[A-Z_]*' <<<"$line") $(grep -o ' ExitCode=[0-9:]*' <<<"$line" | tr -d ' ')"
}

# wait_at_hook JOB: until the job's rank waits at its DOWNSCALE_TEST_WAIT_AT safe point (60 s at most).
wait_at_hook() {
  for _ in $(seq 600); do
    grep -q 'waiting for a signal' "downscale-train-$1.err" 2>/dev/null && return 0
    sleep 0.1
  done
  scontrol show job -o "$1"; cat "downscale-train-$1.out" "downscale-train-$1.err"
  fail "job $1 did not reach epoch 1 step 3"
}

echo "== 1. sbatch train_forhlr2.sh, $ranks ranks"
job=$(sbatch --parsable --ntasks-per-node=$ranks --gres=none "$script" configs/demo.yaml "${common[@]}" \
  --set run.dir=runs/e2e)
result=$(wait_job "$job" 60)
echo "job $job: $result"
out=downscale-train-$job.out err=downscale-train-$job.err
[[ -f $out && -f $err ]] || { ls; fail "no $out / $err in the submit folder"; }
cat "$out"
[[ $result == "JobState=COMPLETED ExitCode=0:0" ]] || { cat "$err"; fail "job $job: $result, expected COMPLETED, 0:0"; }
grep -q "job $job " "$out" || fail "$out: the header does not name job $job"
grep -q "training exited with code 0" "$out" || fail "$out: no exit line"
for r in $(seq 0 $((ranks - 1))); do
  grep -q "rank $r\] .*data parallel over $ranks ranks" "$err" || { cat "$err"; fail "$err: no '[train rank $r]' lines"; }
done
[[ -s runs/e2e/train/checkpoint_last.h5 ]] || fail "no runs/e2e/train/checkpoint_last.h5"
grep -q '^2,' runs/e2e/train/metrics.csv || fail "runs/e2e/train/metrics.csv lacks epoch 2"
# check_report <file> <job> <ranks>: rank 0's train_report.json, for scaling.sh.
check_report() {
  [[ -f $1 ]] || fail "no $1"
  /usr/bin/python3 - "$@" <<'PY'
import json, sys
path, job, ranks = sys.argv[1], sys.argv[2], int(sys.argv[3])
r = json.load(open(path))
assert r["ranks"] == ranks, ("ranks", r["ranks"])
assert str(r["slurm_job_id"]) == job, ("slurm_job_id", r["slurm_job_id"])
assert r["samples_per_second"] > 0, r["samples_per_second"]
assert len(r["samples_per_second_per_rank"]) == ranks, r["samples_per_second_per_rank"]
print(f"{path}: {ranks} ranks, job {job}, {r['samples_per_second']:.1f} samples/s")
PY
}
check_report runs/e2e/train/train_report.json "$job" $ranks

echo "== 1b. the same with DOWNSCALE_LAUNCHER=mpirun"
job=$(DOWNSCALE_LAUNCHER=mpirun sbatch --parsable --ntasks-per-node=$ranks --gres=none "$script" configs/demo.yaml \
  "${common[@]}" --set run.dir=runs/mpirun)
result=$(wait_job "$job" 60)
echo "job $job: $result"
[[ $result == "JobState=COMPLETED ExitCode=0:0" ]] ||
  { cat "downscale-train-$job.out" "downscale-train-$job.err"; fail "job $job: $result, expected COMPLETED, 0:0"; }
grep -q "command: .*mpirun -np $ranks " "downscale-train-$job.out" || fail "job $job did not run mpirun -np $ranks"
check_report runs/mpirun/train/train_report.json "$job" $ranks

echo "== 1c. DOWNSCALE_CONTAINER=apptainer:IMAGE, with a stand-in for apptainer (none here)"
# It records its arguments and runs what follows the image: the ranks' command line as the
# script builds it, launched by srun, the binary found as `downscale` on the container's PATH.
mkdir -p fakebin
printf '%s\n' '#!/usr/bin/env bash' \
  "echo \"\$*\" >>\"$work/apptainer.log\"" \
  '[[ $1 == exec ]] && shift' \
  'while [[ $1 == -* ]]; do shift; done' \
  'shift' \
  'exec "$@"' >fakebin/apptainer
chmod +x fakebin/apptainer
ln -s "$bin" fakebin/downscale
touch image.sif
job=$(PATH=$work/fakebin:$PATH DOWNSCALE_BIN="" DOWNSCALE_CONTAINER=apptainer:$work/image.sif sbatch --parsable \
  --ntasks-per-node=$ranks --gres=none "$script" configs/demo.yaml "${common[@]}" --set run.dir=runs/container)
result=$(wait_job "$job" 60)
echo "job $job: $result"
[[ $result == "JobState=COMPLETED ExitCode=0:0" ]] ||
  { cat "downscale-train-$job.out" "downscale-train-$job.err"; fail "job $job: $result, expected COMPLETED, 0:0"; }
[[ $(grep -c "^exec $work/image.sif downscale train --config configs/demo.yaml" apptainer.log) -eq $ranks ]] ||
  { cat apptainer.log; fail "expected $ranks times 'apptainer exec IMAGE downscale train ...'"; }
check_report runs/container/train/train_report.json "$job" $ranks
# A missing image: the script stops before launching, exit 2, naming it.
job=$(DOWNSCALE_CONTAINER=apptainer:$work/missing.sif sbatch --parsable --ntasks-per-node=1 --gres=none "$script" configs/demo.yaml)
result=$(wait_job "$job" 60)
[[ $result == "JobState=FAILED ExitCode=2:0" ]] || fail "job $job (missing image): $result, expected FAILED, 2:0"
grep -q "missing.sif.*not found" "downscale-train-$job.err" || { cat "downscale-train-$job.err"; fail "no message naming the missing image"; }
echo "missing image: job $job $result: $(cat "downscale-train-$job.err")"

echo "== 2. a bad --set key: the training's exit code"
job=$(sbatch --parsable --ntasks-per-node=$ranks --gres=none "$script" configs/demo.yaml "${common[@]}" \
  --set run.dir=runs/bad --set train.no_such_key=1)
result=$(wait_job "$job" 60)
echo "job $job: $result"
[[ $result == "JobState=FAILED ExitCode=2:0" ]] || { cat "downscale-train-$job.err"; fail "job $job: $result, expected FAILED, 2:0"; }
grep -q "unknown key 'train.no_such_key'" "downscale-train-$job.err" || fail "the error is not in downscale-train-$job.err"
grep -q "train --check failed with exit code 2: nothing launched" "downscale-train-$job.out" ||
  { cat "downscale-train-$job.out"; fail "job $job: the bad key was not caught by train --check before srun"; }
grep -q "training exited" "downscale-train-$job.out" && fail "job $job launched the ranks despite the bad key"
echo "== 2b. epochs 0 and overlapping test years: exit 2, every time, before srun"
for bad in "train.epochs=0" "preprocess.test_years=[2000,2000]"; do
  job=$(sbatch --parsable --ntasks-per-node=$ranks --gres=none "$script" configs/demo.yaml "${common[@]}" \
    --set run.dir=runs/bad --set "$bad")
  result=$(wait_job "$job" 60)
  echo "job $job (--set $bad): $result"
  [[ $result == "JobState=FAILED ExitCode=2:0" ]] || { cat "downscale-train-$job.err"; fail "job $job: $result, expected FAILED, 2:0"; }
done

echo "== 3. kill -9 of rank 1: the step ends"
job=$(sbatch --parsable --ntasks-per-node=$ranks --gres=none "$script" configs/demo.yaml "${common[@]}" \
  --set run.dir=runs/kill --set train.epochs=500)
victim=""
for _ in $(seq 300); do
  if grep -q 'rank 1\] .*data parallel' "downscale-train-$job.err" 2>/dev/null; then
    for e in /proc/[0-9]*/environ; do
      p=${e#/proc/}; p=${p%/environ}
      [[ $(readlink "/proc/$p/exe" 2>/dev/null) == "$bin" ]] || continue
      env_p=$(tr '\0' '\n' 2>/dev/null <"$e") || continue
      grep -qxF "DS_SLURM_E2E_MARK=$work" <<<"$env_p" && grep -qx "SLURM_JOB_ID=$job" <<<"$env_p" &&
        grep -qx "SLURM_PROCID=1" <<<"$env_p" && victim=$p
    done
    [[ -n $victim ]] && break
  fi
  sleep 0.1
done
[[ -n $victim ]] || { scontrol show job "$job"; cat "downscale-train-$job.err"; fail "rank 1 of job $job not found"; }
t_kill=$(date +%s)
kill -9 "$victim"
result=$(wait_job "$job" 30)
echo "job $job: $result, $(( $(date +%s) - t_kill )) s after kill -9"
[[ $result == JobState=FAILED* && $result != *ExitCode=0:0 ]] || fail "job $job: $result, expected FAILED with an exit code"
grep -q 'task 1: Killed' "downscale-train-$job.err" || { tail "downscale-train-$job.err"; fail "srun does not report task 1 killed"; }

echo "== 3b. SIGUSR1 before the time limit: checkpoint, exit 75, requeue, the job resumes by itself"
# What --signal=B:USR1@120 does at the limit, sent now with scancel (to the batch shell only).
# Rank 1 waits for it at epoch 1 step 3 (io/stop_signal.h's test hook), rank 0 at the next allreduce.
job=$(DOWNSCALE_TEST_WAIT_AT="epoch 1 step 3 " DOWNSCALE_TEST_WAIT_RANK=1 sbatch --parsable \
  --ntasks-per-node=$ranks --gres=none "$script" configs/demo.yaml "${common[@]}" --set run.dir=runs/requeue)
wait_at_hook "$job"
scancel --signal=USR1 --batch "$job"
# Requeued: pending again, after its first run wrote the checkpoint and exited 75. Slurm holds a
# requeued job back for cred_expire + 1 s (BeginTime; 11 s with this slurm.conf), then starts it.
for _ in $(seq 600); do
  scontrol show job -o "$job" | grep -q 'JobState=PENDING.*Restarts=1' && break
  sleep 0.1
done
scontrol show job -o "$job" | grep -q 'JobState=PENDING.*Restarts=1' ||
  { scontrol show job "$job"; cat "downscale-train-$job.out" "downscale-train-$job.err"; fail "job $job was not requeued"; }
grep -q "training exited with code 75" "downscale-train-$job.out" ||
  { cat "downscale-train-$job.out"; fail "job $job: the first run did not exit 75"; }
grep -q "interrupted by SIGUSR1 at epoch 1 step 3 of .*; wrote runs/requeue/train/checkpoint_last.h5" "downscale-train-$job.err" ||
  { cat "downscale-train-$job.err"; fail "job $job: no mid-epoch checkpoint on SIGUSR1"; }
grep -q "exit 75 is the planned checkpoint-and-requeue" "downscale-train-$job.err" ||
  { cat "downscale-train-$job.err"; fail "job $job: the .err does not say that exit 75 is the planned requeue"; }
result=$(wait_job "$job" 60)
echo "job $job: $result, $(scontrol show job -o "$job" | grep -o 'Restarts=[0-9]*')"
[[ $result == "JobState=COMPLETED ExitCode=0:0" ]] ||
  { cat "downscale-train-$job.out" "downscale-train-$job.err"; fail "job $job: $result, expected COMPLETED, 0:0 after the requeue"; }
scontrol show job -o "$job" | grep -q 'Restarts=1' || fail "job $job was not requeued once"
grep -q 'rank 0\] resuming from runs/requeue/train/checkpoint_last.h5 at epoch 1, step 3 of' "downscale-train-$job.err" ||
  { cat "downscale-train-$job.out" "downscale-train-$job.err"; fail "the requeued job did not resume at epoch 1 step 3"; }
grep -q '^2,' runs/requeue/train/metrics.csv || fail "runs/requeue/train/metrics.csv lacks epoch 2"
# --open-mode=append: the requeued run's lines follow the first run's in the same files.
grep -q "job $job .*, run 1$" "downscale-train-$job.out" && grep -q "training exited with code 75" "downscale-train-$job.out" &&
  grep -q "job $job .*, run 2$" "downscale-train-$job.out" && grep -q "interrupted by SIGUSR1" "downscale-train-$job.err" ||
  { cat "downscale-train-$job.out"; fail "job $job: the first run's lines are not kept in the .out/.err after the requeue"; }

echo "== 3c. SIGTERM to the batch shell alone (scancel --signal=TERM --batch): checkpoint, exit 143"
# srun, signalled, kills its tasks (no checkpoint, exit 137): the script has Slurm signal the
# training step's ranks instead, and they stop at a step as on SIGUSR1.
job=$(DOWNSCALE_TEST_WAIT_AT="epoch 1 step 3 " DOWNSCALE_TEST_WAIT_RANK=1 sbatch --parsable --no-requeue \
  --ntasks-per-node=$ranks --gres=none "$script" configs/demo.yaml "${common[@]}" --set run.dir=runs/term)
wait_at_hook "$job"
scancel --signal=TERM --batch "$job"
result=$(wait_job "$job" 60)
echo "job $job: $result"
[[ $result == *"ExitCode=143:0"* ]] ||
  { cat "downscale-train-$job.out" "downscale-train-$job.err"; fail "job $job: $result, expected exit 143"; }
grep -q "training exited with code 143" "downscale-train-$job.out" ||
  { cat "downscale-train-$job.out"; fail "job $job: the training did not exit 143"; }
grep -q "interrupted by SIGTERM at epoch 1 step 3 of .*; wrote runs/term/train/checkpoint_last.h5" "downscale-train-$job.err" ||
  { cat "downscale-train-$job.err"; fail "job $job: no mid-epoch checkpoint on SIGTERM"; }

echo "== 4. scaling.sh, 1 and 2 ranks"
rc=0
bash "$src/slurm/scaling.sh" --ranks 1,2 --cpu --poll 0.2 --timeout 120 --out scaling --store runs/demo/preprocess/store.h5 \
  configs/demo.yaml "${common[@]}" >scaling.log 2>&1 || rc=$?
cat scaling.log
[[ $rc -eq 0 ]] || fail "scaling.sh exited with $rc"
[[ -f scaling/scaling.md && -f scaling/scaling.tsv ]] || fail "no scaling/scaling.md or scaling.tsv"
/usr/bin/python3 - scaling/scaling.tsv <<'PY'
import csv, sys
rows = {int(r["ranks"]): r for r in csv.DictReader(open(sys.argv[1]), delimiter="\t")}
assert sorted(rows) == [1, 2], sorted(rows)
for n, r in rows.items():
    assert r["state"].startswith("COMPLETED") and r["exit"] == "0:0", r
    for d in ("runs/ranks-%d/train/checkpoint_last.h5" % n,):
        open("scaling/" + d, "rb").close()
assert rows[1]["speed-up"] == "1.00" and rows[1]["efficiency"] == "100%", rows[1]
assert float(rows[2]["samples/s"]) > 0 and float(rows[2]["speed-up"]) > 0, rows[2]
assert abs(float(rows[2]["per rank"]) * 2 - float(rows[2]["samples/s"])) < 0.2, rows[2]
PY
ls scaling/logs/ranks-1-*.out scaling/logs/ranks-2-*.err >/dev/null || fail "scaling.sh's job logs are missing"

echo "== 5. benchmark.sh on CPU ranks (1 and 2), two models; scaling.sh's plot"
[[ -s scaling/scaling.png ]] || fail "scaling.sh wrote no scaling/scaling.png"
grep -q '"unit": "samples/s"' scaling/scaling.jsonl || fail "scaling.jsonl does not say its lines are samples/s (the plot's axis)"
job=$(sbatch --parsable --ntasks-per-node=$ranks --gres=none "$src/slurm/benchmark.sh" --cpu -m resnet50,resnet101 \
  -b 2 -r 1,2 -o bench -- --image-size 32 --threads 1 --num-warmup-batches 1 --num-batches-per-iter 1 --num-iters 2)
result=$(wait_job "$job" 120)
echo "job $job: $result"
cat "downscale-benchmark-$job.out"
[[ $result == "JobState=COMPLETED ExitCode=0:0" ]] ||
  { cat "downscale-benchmark-$job.err" bench/logs/*.log; fail "benchmark job $job: $result, expected COMPLETED, 0:0"; }
grep -q '^Total img/sec on 2 CPU(s): ' "downscale-benchmark-$job.out" || fail "no 2-rank total in the job's output"
[[ -s bench/benchmark.png && -s bench/benchmark.md ]] || fail "benchmark.sh wrote no bench/benchmark.png or .md"
/usr/bin/python3 - bench/benchmark.jsonl <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
got = sorted((l["model"], l["ranks"]) for l in lines)
assert got == [("resnet101", 1), ("resnet101", 2), ("resnet50", 1), ("resnet50", 2)], got
for l in lines:
    assert l["slurm_job_id"] and l["total"] > 0 and l["efficiency"] > 0 and l["device"].startswith("cpu"), l
PY

echo "slurm e2e took $(( $(date +%s) - t_start )) s"

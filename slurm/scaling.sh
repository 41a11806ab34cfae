#!/usr/bin/env bash
# Scaling study: submits slurm/train_forhlr2.sh once per rank count (1, 2, 3, 4 GPUs on one
# node by default), waits for the jobs, and collects their train_report.json into one table:
# samples/s in total and per rank, speed-up and scaling efficiency against the 1-rank run.
# Weak scaling, as Horovod's recipe: the per-rank batch (train.batch_size) stays the same, so
# N ranks process N times the samples per step.
#
# usage: slurm/scaling.sh [options] [--] CONFIG [downscale train options...]
#   -r, --ranks LIST       rank counts, comma- or space-separated (default 1,2,3,4)
#   -o, --out DIR          study folder (default runs/scaling-<date>-<time>): logs/ (each job's
#                          .out/.err), runs/ranks-N/ (each run's run.dir), jobs.tsv,
#                          scaling.md and scaling.tsv (the table), scaling.png (samples/s
#                          against ranks, ideal line, efficiency; drawn by `downscale benchmark
#                          --plot` from scaling.jsonl when DOWNSCALE_BIN, `downscale` on PATH or
#                          build/pipeline/downscale is there)
#   -s, --store FILE       the training store every run reads (default: <run.dir>/preprocess/
#                          store.h5, run.dir from a --set run.dir=... argument or the config)
#   --cpu                  no GPUs: --gres=none instead of --gres=gpu:N, and every run's ranks
#                          the same threads (--threads)
#   --threads T            CPU threads per rank in every run (--cpus-per-task=T); with --cpu the
#                          default is a node's cores (sinfo) over the most ranks: runs whose ranks
#                          each take a share of the node (all cores for 1 rank, half for 2) put
#                          thread scaling into the efficiency (50 % for 2 ranks that scale perfectly)
#   --sbatch-arg ARG       one more sbatch argument (repeatable; after ours, so it wins), e.g.
#                          --sbatch-arg=--time=00:30:00 --sbatch-arg=--account=abc
#   --no-exclusive         let runs share a node (by default each job asks for --exclusive:
#                          a neighbour on the node would distort its throughput)
#   --script FILE          the batch script (default: train_forhlr2.sh next to this script)
#   --poll SECONDS         how often to ask Slurm about the jobs (default 5)
#   --timeout SECONDS      stop waiting after this long, cancel what is left (default
#                          $DOWNSCALE_SCALING_TIMEOUT, else 86400: a day; 0: wait for ever)
#   --collect              submit nothing: wait for and tabulate the jobs already in --out's jobs.tsv
#   -h, --help
# Everything after CONFIG goes to `downscale train` in every job, then --set run.dir=<out>/runs/
# ranks-N (last, so it wins). The environment reaches the jobs (DOWNSCALE_BIN, _CONTAINER, ...:
# see train_forhlr2.sh). Interrupting the wait (Ctrl-C) cancels the jobs not yet finished.
# A job that can never start is cancelled with one line naming it and its reason (squeue %r):
# pending for PartitionConfig, PartitionNodeLimit, PartitionTimeLimit, BadConstraints,
# DependencyNeverSatisfied, InvalidAccount, InvalidQOS or a per-job QOS/association limit (more
# nodes, GPUs or time than it may ever have) at once; for ReqNodeNotAvail (nodes down or
# reserved: an administrator may bring them back) once it has stayed so for
# $DOWNSCALE_SCALING_NODE_WAIT seconds (default 600). The others still run; the table shows it.
# Exit code: 0 every job COMPLETED with a report; 1 a job did not complete; 3 a job completed
# without writing its report; 2 bad usage.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; }
die() { echo "scaling.sh: $*" >&2; exit 2; }

ranks="1,2,3,4"
out=""
store=""
cpu=0
exclusive=1
script="$here/train_forhlr2.sh"
poll=5
timeout=${DOWNSCALE_SCALING_TIMEOUT:-86400}
node_wait=${DOWNSCALE_SCALING_NODE_WAIT:-600}
collect=0
threads=""
extra=()
while [[ $# -gt 0 ]]; do
  case $1 in
    -r | --ranks | -o | --out | -s | --store | --sbatch-arg | --script | --poll | --timeout | --threads)
      [[ $# -ge 2 ]] || die "$1 needs a value (--help for usage)" ;;&
    -r | --ranks) ranks=$2; shift 2 ;;
    --ranks=*) ranks=${1#*=}; shift ;;
    -o | --out) out=$2; shift 2 ;;
    --out=*) out=${1#*=}; shift ;;
    -s | --store) store=$2; shift 2 ;;
    --store=*) store=${1#*=}; shift ;;
    --cpu) cpu=1; shift ;;
    --threads) threads=$2; shift 2 ;;
    --threads=*) threads=${1#*=}; shift ;;
    --sbatch-arg) extra+=("$2"); shift 2 ;;
    --sbatch-arg=*) extra+=("${1#*=}"); shift ;;
    --no-exclusive) exclusive=0; shift ;;
    --script) script=$2; shift 2 ;;
    --script=*) script=${1#*=}; shift ;;
    --poll) poll=$2; shift 2 ;;
    --poll=*) poll=${1#*=}; shift ;;
    --timeout) timeout=$2; shift 2 ;;
    --timeout=*) timeout=${1#*=}; shift ;;
    --collect) collect=1; shift ;;
    -h | --help) usage; exit 0 ;;
    --) shift; break ;;
    -*) die "unknown option '$1' (--help for usage)" ;;
    *) break ;;
  esac
done
command -v python3 >/dev/null || die "python3 is needed to read the reports (standard library only)"
command -v scontrol >/dev/null || die "scontrol not found: is this a Slurm login node (a module to load)?"
[[ $poll =~ ^[0-9]+([.][0-9]+)?$ ]] || die "--poll '$poll': expected seconds"
[[ $timeout =~ ^[0-9]+$ ]] || die "--timeout '$timeout' (or DOWNSCALE_SCALING_TIMEOUT): expected whole seconds"
[[ $node_wait =~ ^[0-9]+$ ]] || die "DOWNSCALE_SCALING_NODE_WAIT '$node_wait': expected whole seconds"

if ((collect)); then
  [[ -n $out && -f $out/jobs.tsv ]] || die "--collect needs --out DIR with the jobs.tsv of an earlier study"
else
  [[ $# -ge 1 ]] || die "no config file given (--help for usage)"
  config=$1
  shift
  train_args=("$@")
  [[ -f $config ]] || die "config file '$config' not found"
  [[ -f $script ]] || die "batch script '$script' not found"
  command -v sbatch >/dev/null || die "sbatch not found: is this a Slurm login node (a module to load)?"
  read -r -a rank_list <<<"${ranks//,/ }"
  ((${#rank_list[@]})) || die "--ranks '$ranks': no rank counts"
  for n in "${rank_list[@]}"; do [[ $n =~ ^[1-9][0-9]*$ ]] || die "--ranks '$ranks': '$n' is not a positive whole number"; done
  # One run folder per rank count (runs/ranks-N): the same count twice would train twice into it.
  dup=$(printf '%s\n' "${rank_list[@]}" | sort | uniq -d | head -1)
  [[ -z $dup ]] || die "--ranks '$ranks': $dup is given twice"
  [[ -z $threads || $threads =~ ^[1-9][0-9]*$ ]] || die "--threads '$threads': expected a positive whole number"
  if ((cpu)) && [[ -z $threads ]]; then
    most=$(printf '%s\n' "${rank_list[@]}" | sort -n | tail -1)
    # The smallest node's CPUs (sinfo -N %c) in the partition the jobs ask for, shared by the most
    # ranks a run puts on it.
    partition=()
    for ((i = 0; i < ${#extra[@]}; i++)); do
      [[ ${extra[i]} == --partition=* ]] && partition=(-p "${extra[i]#*=}")
      [[ ${extra[i]} == -p?* ]] && partition=(-p "${extra[i]#-p}")
    done
    cores=$(timeout 20 sinfo -h -N ${partition[@]+"${partition[@]}"} -o %c 2>/dev/null | sort -n | head -1 || true)
    if [[ $cores =~ ^[0-9]+$ ]] && ((cores >= most)); then
      threads=$((cores / most))
      echo "CPU runs: $threads thread(s) per rank in every run ($cores CPUs a node over up to $most ranks; --threads sets another)"
    else
      echo "scaling.sh: warning: $([[ $cores =~ ^[0-9]+$ ]] && echo "the smallest node has $cores CPUs, fewer than $most ranks" ||
        echo "cannot tell the nodes' CPUs (sinfo)"): each run's ranks take their share of the node, so the efficiency holds thread scaling too; --threads T fixes it" >&2
    fi
  fi

  # The store: every run reads the same one, through a link in its own run folder.
  if [[ -z $store ]]; then
    run_dir=""
    for ((i = 0; i < ${#train_args[@]}; i++)); do
      [[ ${train_args[i]} == --set && ${train_args[i+1]-} == run.dir=* ]] && run_dir=${train_args[i+1]#run.dir=}
      [[ ${train_args[i]} == --set=run.dir=* ]] && run_dir=${train_args[i]#--set=run.dir=}
    done
    # The config's `run:` section, `dir:` key (a plain scalar, as in configs/*.yaml).
    [[ -n $run_dir ]] || run_dir=$(awk '/^[^ #]/ {in_run = ($0 ~ /^run:/)} in_run && /^ +dir:/ {
        sub(/^ +dir: */, ""); sub(/ +#.*/, ""); gsub(/["'\'']/, ""); print; exit }' "$config")
    [[ -n $run_dir ]] || die "cannot tell the run folder from '$config': pass --store FILE"
    store=$run_dir/preprocess/store.h5
  fi
  [[ -f $store ]] || die "training store '$store' not found: run \`downscale preprocess\` first, or pass --store FILE"
  store=$(cd "$(dirname "$store")" && pwd)/$(basename "$store")

  out=${out:-runs/scaling-$(date +%Y%m%d-%H%M%S)}
  [[ ! -e $out/jobs.tsv ]] || die "'$out' already holds a study (jobs.tsv): choose another --out, or --collect it"
  mkdir -p "$out/logs"
  out=$(cd "$out" && pwd)
  printf 'ranks\tjob\trun_dir\tout\terr\n' >"$out/jobs.tsv"
  for n in "${rank_list[@]}"; do
    run=$out/runs/ranks-$n
    mkdir -p "$run/preprocess"
    ln -sfn "$store" "$run/preprocess/store.h5"
    gres=--gres=gpu:$n
    ((cpu)) && gres=--gres=none
    excl=()
    ((exclusive)) && excl=(--exclusive)
    [[ -n $threads ]] && excl+=(--cpus-per-task="$threads")
    # Our options override the script's #SBATCH lines; --sbatch-arg ones come last and win.
    job=$(sbatch --parsable --job-name="downscale-scaling-$n" --nodes=1 --ntasks-per-node="$n" "$gres" \
            ${excl[@]+"${excl[@]}"} --output="$out/logs/ranks-$n-%j.out" --error="$out/logs/ranks-$n-%j.err" \
            ${extra[@]+"${extra[@]}"} "$script" "$config" ${train_args[@]+"${train_args[@]}"} --set "run.dir=$run") ||
      { echo "scaling.sh: sbatch failed for $n ranks; jobs submitted so far are in $out/jobs.tsv" >&2; exit 1; }
    job=${job%%;*}  # --parsable: "id" or "id;cluster"
    printf '%s\t%s\t%s\t%s\t%s\n' "$n" "$job" "$run" "$out/logs/ranks-$n-$job.out" "$out/logs/ranks-$n-$job.err" >>"$out/jobs.tsv"
    echo "submitted $n rank(s): job $job, run folder $run"
  done
fi

# --- wait: scontrol every --poll seconds (sbatch --wait polls at growing intervals, up to a minute) ---
mapfile -t jobs < <(tail -n +2 "$out/jobs.tsv" | cut -f2)
((${#jobs[@]})) || die "$out/jobs.tsv lists no job (every sbatch failed?): nothing to collect"
declare -A state why node_since
job_state() {  # the job's state; "" once Slurm has forgotten it (MinJobAge)
  local s
  s=$(scontrol show job -o "$1" 2>/dev/null | grep -o 'JobState=[A-Z_]*' | cut -d= -f2) || true
  if [[ -z $s ]] && command -v sacct >/dev/null; then
    s=$(sacct -n -X -P -j "$1" -o State 2>/dev/null | head -1 | cut -d' ' -f1) || true
  fi
  echo "$s"
}
# never_starts <job>: sets why[job] to the squeue reason of a PENDING job that can never start
# (not in a subshell: node_since must persist from one poll to the next).
never_starts() {
  local reason
  reason=$(squeue -h -j "$1" -o %r 2>/dev/null | head -1) || true
  case $reason in
    PartitionConfig* | PartitionNodeLimit* | PartitionTimeLimit* | BadConstraints* | DependencyNeverSatisfied* | \
      InvalidAccount* | InvalidQOS* | QOSMax*PerJob* | AssocMax*PerJob*)
      why[$1]=$reason ;;
    ReqNodeNotAvail*)
      node_since[$1]=${node_since[$1]:-$(date +%s)}
      (($(date +%s) - node_since[$1] >= node_wait)) && why[$1]="$reason (for more than $node_wait s)" ;;
    *) unset "node_since[$1]" ;;
  esac
  return 0
}
finished() { [[ $1 =~ ^(COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY|PREEMPTED|BOOT_FAIL|DEADLINE|)$ ]]; }
cancel_left() {
  local left=()
  for j in "${jobs[@]}"; do finished "${state[$j]-PENDING}" || left+=("$j"); done
  if ((${#left[@]})); then
    echo "scaling.sh: cancelling jobs ${left[*]}" >&2
    scancel "${left[@]}" || true
  fi
}
trap 'echo; cancel_left; exit 130' INT TERM
start=$(date +%s)
while :; do
  pending=0
  for j in "${jobs[@]}"; do
    finished "${state[$j]-PENDING}" && [[ -n ${state[$j]+x} ]] && continue
    state[$j]=$(job_state "$j")
    if [[ ${state[$j]} == PENDING ]] && command -v squeue >/dev/null; then
      never_starts "$j"
      if [[ -n ${why[$j]-} ]]; then
        echo "scaling.sh: job $j ($(awk -F'\t' -v j="$j" '$2 == j {print $1}' "$out/jobs.tsv") rank(s)) can never start: pending with reason ${why[$j]}; cancelling it" >&2
        scancel "$j" || true
        state[$j]=CANCELLED
      fi
    fi
    finished "${state[$j]}" || pending=$((pending + 1))
  done
  ((pending)) || break
  if ((timeout && $(date +%s) - start > timeout)); then
    echo "scaling.sh: $pending job(s) still not finished after $timeout s (--timeout, DOWNSCALE_SCALING_TIMEOUT)" >&2
    cancel_left
    break
  fi
  sleep "$poll"
done
trap - INT TERM

# --- the table ---
states=$out/states.tsv
: >"$states"
for j in "${jobs[@]}"; do
  exit_code=$(scontrol show job -o "$j" 2>/dev/null | grep -o ' ExitCode=[0-9:]*' | cut -d= -f2) || true
  printf '%s\t%s\t%s\n' "$j" "${state[$j]:-UNKNOWN}${why[$j]:+ (${why[$j]%%[ ,]*})}" "${exit_code:-?}" >>"$states"
done
rc=0
python3 - "$out" <<'PY' || rc=$?
import csv, glob, json, os, sys

out = sys.argv[1]
states = {}
with open(os.path.join(out, "states.tsv")) as f:
    for job, state, code in csv.reader(f, delimiter="\t"):
        states[job] = (state, code)
rows = []
with open(os.path.join(out, "jobs.tsv")) as f:
    for r in csv.DictReader(f, delimiter="\t"):
        state, code = states.get(r["job"], ("UNKNOWN", "?"))
        report = None
        # train/train_report.json, or train/<name>/ under train.name (one name per study).
        train = os.path.join(r["run_dir"], "train")
        for path in [os.path.join(train, "train_report.json")] + sorted(glob.glob(os.path.join(train, "*", "train_report.json"))):
            try:
                with open(path) as g:
                    report = json.load(g)
                break
            except (OSError, ValueError):
                pass
        rows.append(dict(ranks=int(r["ranks"]), job=r["job"], state=state, exit=code, report=report))
rows.sort(key=lambda r: r["ranks"])

def sps(r):
    v = r["report"] and r["report"].get("samples_per_second")
    return float(v) if isinstance(v, (int, float)) and v > 0 else None

def threads_of(r):  # CPU threads per rank (None on GPUs, or in a report without the field)
    rep = r["report"] or {}
    return rep.get("threads_per_rank") if str(rep.get("device", "cpu")).startswith("cpu") else None

other_threads = []

# Against the 1-rank run; without one, the fewest ranks that have a figure stand in (per-rank rate).
with_figure = [r for r in rows if sps(r)]
base = next((r for r in with_figure if r["ranks"] == 1), with_figure[0] if with_figure else None)
fmt = lambda v, spec: "-" if v is None else format(v, spec)
header = ["ranks", "job", "state", "exit", "samples/s", "per rank", "speed-up", "efficiency", "seconds", "final loss"]
table = []
for r in rows:
    rep = r["report"] or {}
    total = sps(r)
    per = rep.get("samples_per_second_per_rank")
    per_rank = sum(per) / len(per) if isinstance(per, list) and per else (total / r["ranks"] if total else None)
    speedup = eff = None
    # Threads per rank as the base's, or no comparison: 2 ranks of 1 thread against 1 rank of 2
    # would be thread scaling, not communication (as `downscale benchmark` refuses too).
    same_threads = threads_of(r) == threads_of(base) if base else False
    if total and base and same_threads:
        speedup = total / sps(base)                                  # N ranks against 1
        eff = 100 * (total / r["ranks"]) / (sps(base) / base["ranks"])  # per-rank rate against 1 rank's
    elif total and base:
        other_threads.append(f"{r['ranks']} ranks of {threads_of(r)} thread(s) against {base['ranks']} of {threads_of(base)}")
    table.append([str(r["ranks"]), r["job"], r["state"] + ("" if r["report"] else " (no report)"), r["exit"],
                  fmt(total, ".1f"), fmt(per_rank, ".1f"), fmt(speedup, ".2f"),
                  "-" if eff is None else f"{eff:.0f}%", fmt(rep.get("total_seconds"), ".1f"),
                  fmt(rep.get("final_train_loss"), ".4f")])

note = ""
if base and base["ranks"] != 1:
    note = f"\nNo 1-rank figure: speed-up against the {base['ranks']}-rank run, efficiency per rank against it.\n"
if other_threads:
    note += ("\nNo speed-up or efficiency where the ranks ran other CPU threads than the reference's (" +
             "; ".join(other_threads) + "): it would be thread scaling; --threads fixes them.\n")
md = ["| " + " | ".join(header) + " |", "|" + "|".join(" ---: " for _ in header) + "|"]
md += ["| " + " | ".join(row) + " |" for row in table]
text = "\n".join(md) + "\n" + note
with open(os.path.join(out, "scaling.md"), "w") as f:
    f.write(f"Scaling study in {out}\n\n" + text)
with open(os.path.join(out, "scaling.tsv"), "w") as f:
    f.write("\t".join(header) + "\n" + "".join("\t".join(row) + "\n" for row in table))
print(text, end="")
print(f"(also in {out}/scaling.md and scaling.tsv)")
# The runs as `downscale benchmark --json` lines, for its --plot.
with open(os.path.join(out, "scaling.jsonl"), "w") as f:
    for r in rows:
        rep = r["report"] or {}
        if sps(r):
            line = dict(model="downscale train", batch=rep.get("batch_size_per_rank", 0), image_size=0,
                        ranks=r["ranks"], nodes=rep.get("nodes", 1), device=rep.get("device", "?"),
                        precision="-", allreduce_dtype="-", total=sps(r), unit="samples/s")
            if threads_of(r) is not None:
                line["threads"] = threads_of(r)  # the plot's series, as benchmark's lines
            f.write(json.dumps(line) + "\n")
# UNKNOWN: Slurm has forgotten the job (a --collect long after): its report tells.
bad = [r for r in rows if r["state"] != "COMPLETED" and not (r["state"] == "UNKNOWN" and r["report"])]
sys.exit(1 if bad else 3 if any(r["report"] is None for r in rows) else 0)
PY
# The plot, with the login node's downscale (or the container's, as the jobs ran it).
bin=${DOWNSCALE_BIN-}
[[ -n $bin ]] || { command -v downscale >/dev/null && bin=downscale || bin=$(pwd)/build/pipeline/downscale; }
if [[ -s $out/scaling.jsonl ]] && command -v "$bin" >/dev/null; then
  "$bin" benchmark --plot "$out/scaling.jsonl" "$out/scaling.png" && echo "(plot: $out/scaling.png)" ||
    echo "scaling.sh: the plot failed (the table stands)" >&2
elif [[ -s $out/scaling.jsonl ]]; then
  echo "(no plot: no downscale binary here; set DOWNSCALE_BIN and rerun with --collect)"
fi
exit $rc

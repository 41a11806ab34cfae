#!/usr/bin/env bash
# `downscale benchmark` (issue 15): one CPU run per model at a tiny batch and image size checks
# the reference script's lines and the JSON line; a 2-rank `mpirun` run checks the total over
# two CPUs and the efficiency against the 1-rank line of the same file; --plot writes a PNG;
# --profile-layers writes the layer profile (and refuses 2 ranks); an unknown model exits 2 naming
# the choices, --device cuda without a usable GPU exits 2 naming --device.
#   usage: benchmark.sh <downscale binary> <source dir>
set -euo pipefail
bin=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_plm_rsh_agent=false
tiny=(--no-cuda --threads 1 --batch-size 2 --num-warmup-batches 1 --num-batches-per-iter 1 --num-iters 2 --json runs.jsonl)
declare -A size=([resnet50]=32 [resnet101]=32 [inception_v3]=75)
for m in resnet50 resnet101 inception_v3; do
  echo "== $m"
  "$bin" benchmark --model "$m" --image-size "${size[$m]}" "${tiny[@]}" > "$m.out" 2> "$m.err" || { cat "$m.err"; exit 1; }
  cat "$m.out"
  for pat in "^Model: $m\$" '^Batch size: 2$' '^Number of CPUs: 1$' '^Image size: ' '^Running warmup\.\.\.$' \
             '^Iter #0: [0-9.]+ img/sec per CPU$' '^Iter #1: [0-9.]+ img/sec per CPU$' \
             '^Img/sec per CPU: [0-9.]+ \+-[0-9.]+$' '^Total img/sec on 1 CPU\(s\): [0-9.]+ \+-[0-9.]+$'; do
    grep -Eq "$pat" "$m.out" || { echo "$m: no line matching '$pat'"; exit 1; }
  done
done

echo "== more threads than this process's CPUs: said, the run goes on"
# The CPUs this process may run on, as the binary counts them (nproc follows OMP_NUM_THREADS).
cpus=$(/usr/bin/python3 -c 'import os; print(len(os.sched_getaffinity(0)))')
over=$(( cpus + 1 ))
"$bin" benchmark --model resnet50 --image-size 32 --no-cuda --threads "$over" --batch-size 2 --num-warmup-batches 0 \
  --num-batches-per-iter 1 --num-iters 1 > over.out 2> over.err || { cat over.err; echo "--threads $over failed"; exit 1; }
grep -q -- "--threads is $over on 1 rank sharing the $cpus CPU" over.err ||
  { cat over.err; echo "--threads $over on $cpus CPUs: no warning"; exit 1; }
grep -q -- "--threads is" resnet50.err resnet101.err inception_v3.err && { echo "--threads 1 warned of"; exit 1; }

echo "== resnet50 on 2 ranks"
mpirun -np 2 --oversubscribe --bind-to none "$bin" benchmark --model resnet50 --image-size 32 "${tiny[@]}" > two.out
cat two.out
grep -Eq '^Number of CPUs: 2$' two.out || { echo "no 'Number of CPUs: 2'"; exit 1; }
grep -Eq '^Total img/sec on 2 CPU\(s\): [0-9.]+ \+-[0-9.]+$' two.out || { echo "no 'Total img/sec on 2'"; exit 1; }
grep -Eq '^Scaling efficiency: [0-9]+% against' two.out || { echo "no scaling efficiency line"; exit 1; }
[[ $(grep -c '^Model:' two.out) -eq 1 ]] || { echo "only rank 0 prints"; exit 1; }

/usr/bin/python3 - <<'PY'
import json
lines = [json.loads(l) for l in open("runs.jsonl")]
assert len(lines) == 4, f"expected 4 JSON lines, got {len(lines)}"
keys = ["model", "batch", "image_size", "ranks", "nodes", "device", "precision", "allreduce_dtype",
        "mean", "ci95", "total", "unit", "efficiency", "activation_bytes", "parameters", "threads"]
for l in lines:
    missing = [k for k in keys if k not in l]
    assert not missing, f"missing keys {missing} in {l}"
    assert l["batch"] == 2 and l["mean"] > 0 and l["ci95"] >= 0 and l["device"].startswith("cpu"), l
    assert l["unit"] == "images/s", l  # the plot's axis label
    assert l["threads"] == 1, l  # per rank, on a CPU: what makes a 1-rank line a reference
    assert abs(l["total"] - l["mean"] * l["ranks"]) < 1e-6 * l["total"], l
    assert l["activation_bytes"] > 0 and l["parameters"] > 20_000_000, l  # the real nets (Net::activation_bytes)
assert [l["model"] for l in lines] == ["resnet50", "resnet101", "inception_v3", "resnet50"]
assert [l["image_size"] for l in lines] == [32, 32, 75, 32]
one, two = lines[0], lines[3]
assert one["ranks"] == 1 and one["efficiency"] == 1.0, one
assert two["ranks"] == 2 and two["nodes"] == 1, two
# Efficiency: the 2-rank total against twice the 1-rank per-rank figure of the same file.
expect = two["total"] / (2 * one["mean"])
assert abs(two["efficiency"] - expect) < 1e-9 * expect, (two["efficiency"], expect)
print("JSON lines ok:", [(l["model"], l["ranks"], round(l["total"], 2), l["efficiency"]) for l in lines])
PY

echo "== resnet50 on 2 ranks of 2 threads: the 1-thread 1-rank line is no reference"
# 1 rank of 1 thread against 2 ranks of 2 would put thread scaling into the efficiency.
cp runs.jsonl threads.jsonl
mpirun -np 2 --oversubscribe --bind-to none "$bin" benchmark --model resnet50 --image-size 32 --no-cuda --threads 2 \
  --batch-size 2 --num-warmup-batches 1 --num-batches-per-iter 1 --num-iters 2 --json threads.jsonl > threads.out
grep -q '^Scaling efficiency: the 1-rank line in threads.jsonl ran 1 thread(s), this run 2 per rank: run the 1-rank benchmark with --threads 2' threads.out ||
  { echo "2 threads per rank: no message naming the 1-rank line's threads"; grep -i efficiency threads.out; exit 1; }
/usr/bin/python3 -c 'import json; l = json.loads(open("threads.jsonl").readlines()[-1]); assert l["threads"] == 2 and l["efficiency"] is None, l'

echo "== --profile-layers"
# The layer profile instead of the timed iterations: every layer of the net named once, each with
# a forward and a backward time, the step's parts positive; the summary names the slowest layer.
"$bin" benchmark --model resnet50 --image-size 32 --no-cuda --threads 1 --batch-size 2 --num-warmup-batches 1 \
  --num-iters 2 --profile-layers prof.json > prof.out
cat prof.out
grep -Eq '^Step: forward [0-9.]+ ms, loss [0-9.]+ ms, backward [0-9.]+ ms, optimizer [0-9.]+ ms; [0-9]+ layers' prof.out \
  || { echo "no Step line"; exit 1; }
grep -q '^Wrote prof.json$' prof.out && ! grep -q '^Iter #' prof.out || { echo "profile: no Wrote line, or iterations ran"; exit 1; }
/usr/bin/python3 - <<'PY'
import json, re
p = json.load(open("prof.json"))
assert p["model"] == "resnet50 3x32x32" and p["batch"] == 2 and p["steps"] == 2 and p["precision"] == "tf32", p
names = [l["name"] for l in p["layers"]]
assert len(names) == len(set(names)) and len(names) > 150, len(names)  # ResNet50: 174 layers
assert "conv1_conv" in names and "predictions" in names, names[:5]
assert all(l["forward_s"] > 0 and l["backward_s"] > 0 for l in p["layers"]), [l for l in p["layers"] if l["forward_s"] <= 0][:3]
assert all(p[k] > 0 for k in ("forward_s", "loss_s", "backward_s", "optimizer_s")), p
assert sum(l["param_floats"] for l in p["layers"]) == 25583592  # every gradient, once
slowest = max(p["layers"], key=lambda l: l["forward_s"] + l["backward_s"])["name"]
first = [l for l in open("prof.out") if l.startswith("  ")][0].split()[0]
assert first == slowest, (first, slowest)
print("profile ok:", len(names), "layers, slowest", slowest)
PY
rc=0; mpirun -np 2 --oversubscribe --bind-to none "$bin" benchmark --model resnet50 --image-size 32 "${tiny[@]}" \
  --profile-layers two.json > two_prof.out 2>&1 || rc=$?
[[ $rc -eq 2 ]] && grep -q -- '--profile-layers profiles one rank' two_prof.out && [[ ! -e two.json ]] \
  || { echo "--profile-layers on 2 ranks: rc $rc"; cat two_prof.out; exit 1; }

echo "== --plot"
"$bin" benchmark --plot runs.jsonl scaling.png
[[ $(head -c 8 scaling.png | od -An -tx1 | tr -d ' \n') == 89504e470d0a1a0a ]] || { echo "scaling.png is not a PNG"; exit 1; }
# One rank sends nothing: its line is the reference of every allreduce dtype's series, as for the
# efficiency the benchmark prints (the plot once drew the fp16 series against its own 2 ranks, 100%).
cat > dtypes.jsonl <<'EOF2'
{"model":"resnet50","batch":2,"image_size":64,"device":"cpu","precision":"fp32","threads":1,"allreduce_dtype":"fp32","ranks":1,"total":18.4}
{"model":"resnet50","batch":2,"image_size":64,"device":"cpu","precision":"fp32","threads":1,"allreduce_dtype":"fp16","ranks":2,"total":7.57}
{"model":"resnet50","batch":2,"image_size":64,"device":"cpu","precision":"fp32","threads":1,"allreduce_dtype":"fp32","ranks":2,"total":30}
EOF2
"$bin" benchmark --plot dtypes.jsonl dtypes.png > dtypes.out
grep -q "fp16 allreduce: 1 rank 18.4 (100%), 2 ranks 7.6 (21%)$" dtypes.out &&
  grep -q "fp32 allreduce: 1 rank 18.4 (100%), 2 ranks 30.0 (82%)$" dtypes.out || { echo "the plot's efficiency per dtype:"; cat dtypes.out; exit 1; }
echo '{"oops": 1}' > bad.jsonl
rc=0; "$bin" benchmark --plot bad.jsonl bad.png 2> bad.err || rc=$?
[[ $rc -eq 3 ]] && grep -q 'bad.jsonl: line 1' bad.err || { echo "a foreign line: rc $rc"; cat bad.err; exit 1; }

echo "== errors"
rc=0; "$bin" benchmark --model vgg16 2> err.txt || rc=$?
[[ $rc -eq 2 ]] && grep -q 'resnet50, resnet101, inception_v3' err.txt || { echo "unknown model: rc $rc"; cat err.txt; exit 1; }
# Contradictory or out-of-range options are exit 2 at once, with run.threads' bounds (5000
# threads ran, oneDNN stuck in its warmup, and --no-cuda silently beat --device cuda).
for bad in "--no-cuda --device cuda:--no-cuda excludes --device" "--threads 5000:not in range 0 to 1024" \
           "--bucket-mb -1:--bucket-mb: Value -1 not in range" "--num-iters -1:--num-iters is -1, must be positive" \
           "--num-warmup-batches -2:--num-warmup-batches is -2, must be 0 or more"; do
  rc=0; "$bin" benchmark ${bad%%:*} 2> err.txt || rc=$?
  [[ $rc -eq 2 ]] && grep -q -- "${bad#*:}" err.txt || { echo "benchmark ${bad%%:*}: rc $rc"; cat err.txt; exit 1; }
done
# --device cuda where no GPU can be used (a plugin path that does not exist, so a GPU machine too):
# exit 2 naming the option typed, not train's config key run.device.
rc=0; DOWNSCALE_CUDA_PLUGIN=$work/no-such-plugin.so "$bin" benchmark --device cuda --model resnet50 --image-size 32 2> err.txt || rc=$?
[[ $rc -eq 2 ]] && grep -q -- '--device is cuda but no GPU can be used: the CUDA plugin does not load' err.txt \
  && ! grep -q 'run.device' err.txt || { echo "--device cuda without a GPU: rc $rc"; cat err.txt; exit 1; }
echo "benchmark: ok"

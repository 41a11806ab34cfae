#!/usr/bin/env bash
# downscale train --predict-scaling on the demo store: measures a profile on the CPU, prints the
# table (1-4 GPUs, 2-64 nodes), writes nothing but --out (no train folder), reads a profile back
# (its own --out), and fails in one line on a bad profile (exit 3) or an unknown link (exit 2).
# With bench_train_step: its --profile-layers output feeds the model too.
#   usage: predict_scaling.sh <downscale binary> <source dir> [<bench_train_step binary>]
set -euo pipefail
bin=$1
src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
cp "$src/configs/demo.yaml" .
for stage in synth fetch preprocess; do "$bin" "$stage" --config demo.yaml >/dev/null 2>&1; done
fail() { echo "FAIL: $*"; exit 1; }

"$bin" train --config demo.yaml --set train.batch_size=4 --predict-scaling --profile-steps 1 --out t.json >out.txt
cat out.txt
[[ ! -e runs/demo/train ]] || fail "--predict-scaling wrote runs/demo/train"
grep -q 'images/s' out.txt || fail "no table"
[[ $(grep -cE '^ +[0-9]+ +[0-9]+ +[0-9]+ ' out.txt) == 10 ]] || fail "expected 10 rows"
grep -q 'source: .*nccl-tests' out.txt || fail "the link's source is not printed"
/usr/bin/python3 -c "
import json; j = json.load(open('t.json'))
assert [r['ranks'] for r in j['rows']] == [1, 2, 3, 4, 8, 16, 32, 64, 128, 256], j['rows']
assert j['profile']['batch'] == 4 and j['profile']['layers'], j['profile']"

"$bin" train --config demo.yaml --predict-scaling --profile t.json --link pcie5 --nic per-node --allreduce-dtype bf16 \
  >again.txt || fail "reading the profile back"
grep -q 'pcie5' again.txt && grep -q 'bf16 (2 bytes' again.txt || fail "options not in the report"

if [[ -n ${3:-} ]]; then
  "$3" --profile-layers --grid 8x12 --batch 1 --steps 1 --warmup 0 --threads 1 --out bench.json >/dev/null
  "$bin" train --config demo.yaml --predict-scaling --profile bench.json >bench.txt || fail "the bench profile"
  grep -q 'model mnn 20x8x12' bench.txt || fail "the bench profile's model: $(head -3 bench.txt)"
  /usr/bin/python3 -c "
import json; j = json.load(open('bench.json'))
assert j['parameter_floats'] == sum(l['param_floats'] for l in j['layers']) > 0
assert all(l['backward_s'] >= 0 for l in j['layers']) and j['layers'][-1]['param_floats'] > 0, j"
fi

# The gradients' dtype comes from the config when --allreduce-dtype is not given.
"$bin" train --config demo.yaml --predict-scaling --profile t.json --set train.allreduce_dtype=fp16 >cfg.txt ||
  fail "train.allreduce_dtype from the config"
grep -q 'fp16 (2 bytes' cfg.txt || fail "train.allreduce_dtype fp16 not in the report: $(grep -i dtype cfg.txt)"
# A range error states the range readably (not the largest double).
set +e
"$bin" train --config demo.yaml --predict-scaling --profile t.json --gpus-per-node 0 2>err.txt
rc=$?
set -e
[[ $rc == 2 ]] || fail "--gpus-per-node 0: exit $rc, want 2"
grep -q 'not in range 1 to 1024' err.txt || fail "--gpus-per-node 0 message: $(cat err.txt)"

echo '{"device": "x"}' >bad.json
set +e
"$bin" train --config demo.yaml --predict-scaling --profile bad.json 2>err.txt
rc=$?
set -e
[[ $rc == 3 ]] || fail "bad profile: exit $rc, want 3"
grep -q 'bad.json: not a layer profile' err.txt || fail "bad profile message: $(cat err.txt)"
set +e
"$bin" train --config demo.yaml --predict-scaling --profile t.json --link carrier-pigeon 2>err.txt
rc=$?
set -e
[[ $rc == 2 ]] || fail "unknown link: exit $rc, want 2"
grep -q "unknown link 'carrier-pigeon'" err.txt || fail "unknown link message: $(cat err.txt)"
set +e
"$bin" train --config demo.yaml --predict-scaling --profile t.json --network nvlink4 2>err.txt
rc=$?
set -e
[[ $rc == 2 ]] || fail "NVLink between nodes: exit $rc, want 2"
grep -q "'nvlink4' is a link inside a node" err.txt || fail "NVLink between nodes message: $(cat err.txt)"
echo "predict_scaling: ok"

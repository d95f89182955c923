#!/usr/bin/env bash
# The user's own models on an accelerator, in one call (docs/training.md, "On an accelerator"):
#   bash studies/own_models_device.sh OUT_DIR [DEVICE]
# 1. benchmarks/training_overhead.py on DEVICE (default cuda): the digits MLP, the CNN and the
#    transformer, the default configuration (a canary branch where needed), 300 steps, 1,000
#    canaries, 3 interleaved repeats; then
# 2. studies/training_own_models.py --branch --device DEVICE: every flaw on the four model
#    kinds, seeds 0-4 per flaw and 0-7 correct, 8 processes side by side (two per model:
#    flaws 0-2 and correct 0-4, flaws 3-4 and correct 3-7; correct seeds 3-4 run in both and
#    the journal keeps one of each), merged into OUT_DIR/own_models_DEVICE.jsonl with its
#    detection matrix.
# Each part has its own time limit, so a slow part still leaves the other's results.
set -u
out=${1:?usage: own_models_device.sh OUT_DIR [DEVICE]}
dev=${2:-cuda}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
python3 -c "import torch, opacus, numpy; print('torch', torch.__version__, 'opacus', opacus.__version__, 'numpy', numpy.__version__, torch.cuda.get_device_name() if torch.cuda.is_available() else 'no cuda')"
timeout "${OVERHEAD_LIMIT:-250}" python3 benchmarks/training_overhead.py --device "$dev" \
    --steps 300 --repeats 3 --models digits_mlp cnn transformer | tee "$out/overhead_$dev.txt"
tmp=$(mktemp -d)
for m in cnn text transformer tabular; do
    timeout "${MATRIX_LIMIT:-230}" python3 studies/training_own_models.py --branch --device "$dev" \
        --models "$m" --first-seed 0 --seeds 3 --correct-seeds 5 --out "$tmp/$m.a.jsonl" \
        >"$tmp/$m.a.log" 2>&1 &
    timeout "${MATRIX_LIMIT:-230}" python3 studies/training_own_models.py --branch --device "$dev" \
        --models "$m" --first-seed 3 --seeds 2 --correct-seeds 5 --out "$tmp/$m.b.jsonl" \
        >"$tmp/$m.b.log" 2>&1 &
done
wait
cat "$tmp"/*.jsonl >"$out/own_models_$dev.jsonl"
tail -n 3 "$tmp"/*.log | grep -v '^$' | grep -iv "secure rng\|warnings.warn" | tail -n 40
python3 studies/training_own_models.py --matrix --out "$out/own_models_$dev.jsonl" \
    | tee "$out/matrix_$dev.txt"
python3 -c "
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
crash = [r for r in rows if r.get('crash')]
print(len(rows), 'runs;', len(crash), 'crashed', *[r['id'] + ': ' + r['crash'] for r in crash[:5]])
" "$out/own_models_$dev.jsonl"

#!/usr/bin/env bash
# The device check for a lent GPU machine (one GPU: NCCL at world size 1). Not part of the tests or CI.
#   bash tests/bench/gpu_check.sh      (from the repository root, with a CUDA build of torch installed)
# Runs collbench on CUDA with NCCL: events timing, then the CUDA-graph mode, and checks that every
# result is correct and every time is positive. Prints the tables and one verdict line per mode.
set -euo pipefail
OUT=${OUT:-/tmp/collbench-gpu}
mkdir -p "$OUT"
python - <<'PY'
import torch
print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version(),
      "gpu", torch.cuda.get_device_name(0))
PY
common=(ranks=1 backend=nccl device=cuda "output_dir=$OUT/runs" bench.min_bytes=8 bench.max_bytes=256M
        bench.ops=[all_reduce,all_gather,reduce_scatter,broadcast,reduce,all_to_all,gather,scatter,sendrecv])
for mode in events graph; do
  extra=()
  [ "$mode" = graph ] && extra=(bench.cuda_graph_launches=5)
  collbench run "${common[@]}" "${extra[@]}" --format json > "$OUT/$mode.json"
  collbench report "$(python -c "import json,sys; print(json.load(open('$OUT/$mode.json'))['run_dir'])")"
  python - "$OUT/$mode.json" "$mode" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
rows = doc["rows"]
timer = {"events": "cuda_events", "graph": "cuda_graph"}[sys.argv[2]]
ok = doc["passed"] and rows and all(r["wrong"] == 0 and r["time_us"] > 0 and r["timer"] == timer for r in rows)
best = max(rows, key=lambda r: r["busbw"])
print(f"VERDICT {sys.argv[2]}: {'PASS' if ok else 'FAIL'}: {len(rows)} rows, timer {timer}, "
      f"peak busbw {best['busbw']:.1f} GB/s ({best['op']} at {best['size']} B), problems {doc['problems']}")
PY
done

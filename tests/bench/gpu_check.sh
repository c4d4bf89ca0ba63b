#!/usr/bin/env bash
# The one prepared check for a lent GPU machine (one GPU: NCCL at world size 1). Not part of the tests or CI.
#   bash tests/bench/gpu_check.sh      (from the repository root, with a CUDA build of torch installed)
# One GPU exercises no transport: at world size 1 NCCL copies within the device, so no NVLink, PCIe or
# network path is measured and no busbw here says anything about a fabric. What it checks is collbench's
# CUDA path: the timers, CUDA graphs, the check, and the memory each op really takes.
# Every op from 8 B to 1 GiB three ways: nccl-tests' loop timer (the default), the same with the
# per-iteration events pass (-I), and CUDA graphs (-G 5); every result must be correct and every time
# positive, with the timer each mode names. Then the three side by side (ratios to the loop timer), and
# collbench's timers against a bare torch loop timed the same way in the same process. The loop run keeps
# NCCL's own log (fabric.nccl_info=true): its report shows the fabric section (world size 1: intra-node only).
# Prints one VERDICT line per mode and a final ALL PASS / FAILED. Takes a few minutes.
set -euo pipefail
OUT=${OUT:-/tmp/collbench-gpu}
mkdir -p "$OUT"
export PYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}$PWD"
COLLBENCH=(python -m jobs.cli)
python - <<'PY'
import torch
print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version(),
      "gpu", torch.cuda.get_device_name(0))
PY
common=(ranks=1 backend=nccl device=cuda "output_dir=$OUT/runs" bench.min_bytes=8 bench.max_bytes=1G
        bench.warmup_iters=5 bench.iters=20
        bench.ops=[all_reduce,all_gather,reduce_scatter,broadcast,reduce,all_to_all,gather,scatter,sendrecv])
declare -A extra=([loop]="fabric.nccl_info=true" [per_iteration]="bench.per_iteration=true" [graph]="bench.cuda_graph_launches=5")
failed=0
for mode in loop per_iteration graph; do
  # shellcheck disable=SC2086
  if ! "${COLLBENCH[@]}" run "${common[@]}" ${extra[$mode]} --format json > "$OUT/$mode.json" 2> "$OUT/$mode.err"; then
    echo "VERDICT $mode: FAIL: collbench run exited non-zero"; tail -20 "$OUT/$mode.err"; failed=1; continue
  fi
  "${COLLBENCH[@]}" report "$(python -c "import json; print(json.load(open('$OUT/$mode.json'))['run_dir'])")" || true
  python - "$OUT/$mode.json" "$mode" <<'PY' || failed=1
import json, pathlib, sys
doc, mode = json.load(open(sys.argv[1])), sys.argv[2]
rows = doc["rows"]
timer = {"loop": "cuda_loop", "per_iteration": "cuda_loop", "graph": "cuda_graph"}[mode]
ok = bool(doc["passed"] and rows) and all(r["wrong"] == 0 and r["time_us"] > 0 and r["timer"] == timer for r in rows)
records = [json.loads(line) for f in pathlib.Path(doc["run_dir"], "results").glob("*.jsonl") for line in open(f)]
samples = all(len(r["times_us"]) > 0 for r in records) if mode != "loop" else all(not r["times_us"] for r in records)
setup = doc.get("setup") or {}
best = max(rows, key=lambda r: r["busbw"])
fabric = doc.get("fabric") or {}
seen = mode != "loop" or any(h["nccl_versions"] for h in fabric.get("hosts", []))  # fabric.nccl_info on the loop run
verdict = "PASS" if ok and samples and setup.get("ranks") == 1 and seen else "FAIL"
print(f"VERDICT {mode}: {verdict}: {len(rows)} rows, timer {timer}, per-iteration samples {'as expected' if samples else 'WRONG'}, "
      f"peak busbw {best['busbw']:.1f} GB/s ({best['op']} at {best['size']} B), set-up {setup.get('slowest_s', '?')} s, "
      f"fabric {'read' if seen else 'MISSING'}, problems {doc['problems']}")
sys.exit(verdict != "PASS")
PY
done
python - "$OUT" <<'PY' || failed=1
import json, pathlib, statistics, sys
out = pathlib.Path(sys.argv[1])
docs = {m: json.load(open(out / f"{m}.json")) for m in ("loop", "per_iteration", "graph") if (out / f"{m}.json").exists()}
rows = {m: {(r["op"], r["size"], r["in_place"]): r for r in d["rows"]} for m, d in docs.items()}
if "per_iteration" in docs:  # the per-call distribution is per rank: rank 0's records (world size 1)
    lines = pathlib.Path(docs["per_iteration"]["run_dir"], "results", "rank-00000.jsonl").read_text().splitlines()
    rows["per_iteration"] = {(r["op"], r["size"], r["in_place"]): r for r in map(json.loads, lines)}
print("# side by side, us per call (loop: nccl-tests' timer; events: median of -I's per-call events; graph: -G 5)")
print(f"{'op':>15} {'size':>11} {'loop':>9} {'events':>9} {'graph':>9} {'ev/loop':>8} {'gr/loop':>8}")
for key, loop in rows.get("loop", {}).items():
    events = rows.get("per_iteration", {}).get(key)
    graph = rows.get("graph", {}).get(key)
    if key[2] and (key[0], key[1], False) in rows["loop"]:
        continue  # one placement per size in this view
    ev = events["median_us"] if events else float("nan")
    gr = graph["time_us"] if graph else float("nan")
    print(f"{key[0]:>15} {key[1]:>11} {loop['time_us']:>9.2f} {ev:>9.2f} {gr:>9.2f} "
          f"{ev / loop['time_us']:>8.2f} {gr / loop['time_us']:>8.2f}")
PY
python tests/bench/bench_vs_bare.py --device cuda --ranks 1 --rounds 7 --iters 20 \
  --sizes 8,1K,4K,64K,1M,16M,256M,1G | tee "$OUT/bare.txt" || failed=1
# The large-size memory check: ib-h100's own sweep (bfloat16, 8 B to 8G, all_reduce, all_gather,
# reduce_scatter, check on) op by op at world size 1, torch's peak allocated and reserved beside the guard's
# estimate (collectives.plan.peak_bytes_per_rank for NCCL); then all_reduce again under CUDA graphs (captured
# in thread-local mode, as nccl-tests captures), up to the same 8G.
echo "# memory: ib-h100's sweep at world size 1 (PASS per op: torch reserved no more than the guard, no wrong element)"
python tests/bench/bench_memory.py --device cuda --config ib-h100 | tee "$OUT/memory.txt" || failed=1
python tests/bench/bench_memory.py --device cuda --config ib-h100 --ops all_reduce --graph-launches 2 \
  | tee "$OUT/memory-graph.txt" || failed=1
if [ "$failed" = 0 ]; then echo "ALL PASS"; else echo "FAILED"; exit 1; fi

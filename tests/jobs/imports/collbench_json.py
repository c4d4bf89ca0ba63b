"""collbench's own nccl-tests JSON of a run it ran, written by the real exporter
(jobs/inspect/exports/nccl_tests_json.py) from a synthetic finished run: on the CPU as a gloo run writes it
(device_info "cpu", no NCCL), or on GPUs, whose environment names the GPU and the NCCL torch carried."""

from __future__ import annotations

from pathlib import Path

from jobs.inspect.exports.nccl_tests_json import documents, render
from jobs.inspect.report import assess
from jobs.rundir.writing import write_json_atomic
from tests.jobs.rundir.synthetic import sweep_run

GPU = "NVIDIA H100 80GB HBM3"


def collbench_json(folder: Path, *, on_gpus: bool = False) -> Path:
    """The all_reduce document of a finished 2-rank collbench run, as `report --format nccl-tests-json`
    prints it, in folder/all_reduce.json."""
    run = sweep_run(folder / "native")
    if on_gpus:
        for rank in (0, 1):
            write_json_atomic(
                run.rank_env(rank),
                {"hostname": "vm", "torch": "2.5.1", "cuda": "12.4", "nccl": "2.21.5", "variables": {},
                 "gpu": {"index": rank, "name": GPU, "pci_bus_id": f"0000:1{rank}:00.0"}},
            )  # fmt: skip
    path = folder / "all_reduce.json"
    path.write_text(render(documents(run, assess(run))["all_reduce"]) + "\n", encoding="utf-8")
    return path

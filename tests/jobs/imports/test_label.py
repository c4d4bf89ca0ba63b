"""What an import is labelled (jobs/imports/label.py): backend, device and versions from what the files say,
"unknown" where they do not, never NCCL on CUDA assumed. Read through read_outputs from the fixture logs, from
collbench's own JSON written by its real exporter, and from plain tables where the files disagree."""

from __future__ import annotations

from pathlib import Path

from jobs.imports.label import label_of
from jobs.imports.model import NCCL_TESTS_JSON, Device, LoggedVersion, Table
from jobs.imports.read import read_outputs
from jobs.rundir.records.run import ImportedAs
from tests.jobs.imports.collbench_json import GPU, collbench_json

LOGS = Path(__file__).parent / "logs"


def test_nccl_tests_text_names_its_nccl_library_and_its_gpus() -> None:
    label = read_outputs([LOGS / "v2.19-no-validation.log"]).label
    assert label.imported_as == ImportedAs(backend="nccl", device="cuda", nccl_version="2.27.3")
    assert label.line() == (
        "labelled nccl on cuda from nccl-library=22703 and devices 'NVIDIA H100 80GB HBM3' in nccl-tests' text; "
        "NCCL version 2.27.3, CUDA version unknown, torch version unknown"
    )


def test_before_2_18_the_gpus_say_nccl_and_its_version_is_unknown() -> None:
    label = read_outputs([LOGS / "v2.17-two-runs.log"]).label
    assert label.imported_as == ImportedAs(backend="nccl", device="cuda")
    assert label.evidence == "devices 'NVIDIA A100-SXM4-80GB' in nccl-tests' text"


def test_nccls_own_version_line_names_nccl_and_the_cuda_it_was_built_for(tmp_path: Path) -> None:
    lines = (LOGS / "v2.17-two-runs.log").read_text().splitlines()
    lines.insert(6, "nodeA:40001:40001 [0] NCCL INFO NCCL version 2.18.5+cuda12.2")
    log = tmp_path / "with-nccl-info.log"
    log.write_text("\n".join(lines) + "\n")
    job = read_outputs([log])
    assert job.skipped == 4
    assert job.label.imported_as == ImportedAs(
        backend="nccl", device="cuda", nccl_version="2.18.5", cuda_version="12.2"
    )
    assert job.label.evidence.startswith(f"NCCL's 'NCCL version 2.18.5' at {log}:7 and devices ")


def test_nccl_tests_json_names_its_nccl_version_and_device_info() -> None:
    label = read_outputs([LOGS / "v3-all_gather.json"]).label
    assert label.imported_as == ImportedAs(backend="nccl", device="cuda", nccl_version="2.27.3")
    assert label.evidence == "nccl_version 22703 and device_info 'NVIDIA GB200' in nccl-tests' JSON"


def test_collbench_json_of_a_cpu_run_is_gloo_on_the_cpu(tmp_path: Path) -> None:
    label = read_outputs([collbench_json(tmp_path)]).label
    assert label.imported_as == ImportedAs(backend="gloo", device="cpu")
    assert label.line() == (
        "labelled gloo on cpu from device_info 'cpu' on every rank (NCCL runs on GPUs only); "
        "NCCL version unknown, CUDA version unknown, torch version unknown"
    )


def test_collbench_json_of_a_gpu_run_does_not_say_its_backend(tmp_path: Path) -> None:
    label = read_outputs([collbench_json(tmp_path, on_gpus=True)]).label
    assert label.imported_as == ImportedAs(device="cuda", nccl_version="2.21.5")
    assert label.line().startswith(
        f"labelled backend unknown on cuda from device_info '{GPU}' in collbench's own JSON, which does not name "
        "its run's backend; NCCL version 2.21.5"
    )


def test_what_the_files_disagree_on_is_unknown() -> None:
    tables = [
        Table(where="a.json", written_by=NCCL_TESTS_JSON, nccl_version=22703),
        Table(where="b.json", written_by=NCCL_TESTS_JSON, nccl_version=22105),
    ]
    devices = [Device(rank=0, host="h", name="cpu"), Device(rank=1, host="h", device=0, name=GPU)]
    logged = [
        LoggedVersion(nccl="2.27.3", cuda="12.9", where="a:1"),
        LoggedVersion(nccl="2.27.3", cuda="12.8", where="a:2"),
    ]
    label = label_of(tables, devices, logged)
    assert label.imported_as == ImportedAs()
    assert label.evidence == "the files name NCCL 2.21.5 and 2.27.3 and 1 rank(s) on 'cpu' and 1 on GPUs"
    unnamed = label_of(tables[:1], [Device(rank=0, host="h")], [])
    assert unnamed.imported_as == ImportedAs(backend="nccl", nccl_version="2.27.3")
    assert unnamed.line().startswith("labelled nccl on device unknown from nccl_version 22703 in nccl-tests' JSON;")

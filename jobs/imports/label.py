"""What an import's files say it ran on: backend, device and versions, each "unknown" where the files do
not say. Never assumed: nccl-tests' output names GPUs and, from 2.18, its NCCL; collbench's own JSON of a
CPU run names the device "cpu", and of a GPU run neither its backend (gloo runs on GPUs too) nor anything
but the NCCL library torch carried.

- device: cpu where every rank's device is "cpu" (device_info, as collbench writes a CPU rank); cuda where
  every rank's device is a GPU (named, or a CUDA index on a `# Using devices` line); unknown otherwise.
- backend: gloo on cpu (NCCL runs on GPUs only); nccl where nccl-tests wrote the output (its binaries run
  NCCL) and it names an NCCL version or GPUs; unknown otherwise, collbench's JSON of a GPU run included.
- NCCL version: the library's (`nccl-library=`, JSON nccl_version, NCCL's own `NCCL version` log line);
  unknown where none is named or the files name several.
- CUDA version: the one NCCL's `NCCL version 2.27.3+cuda12.9` line names (the CUDA NCCL was built for).
- torch version: nccl-tests' and collbench's output name none: always unknown."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from jobs.imports.model import COLLBENCH_JSON, NCCL_TESTS_TEXT, Device, LoggedVersion, Table
from jobs.inspect.exports.nccl_tests_json import nccl_version_of_code
from jobs.rundir.records.run import UNKNOWN, ImportedAs

CPU = "cpu"


@dataclass(frozen=True, kw_only=True, slots=True)
class Label:
    """ImportedAs, and in words what said so."""

    imported_as: ImportedAs
    evidence: str
    """What told the backend and device: `device_info 'cpu' on every rank`, `nccl-library=22703 and ...`."""

    def line(self) -> str:
        """One line for `collbench import`: what it labelled, from what, and the versions."""
        said = self.imported_as
        backend = said.backend if said.backend != UNKNOWN else "backend unknown"
        device = said.device if said.device != UNKNOWN else "device unknown"
        return (
            f"labelled {backend} on {device} from {self.evidence}; NCCL version {said.nccl_version}, "
            f"CUDA version {said.cuda_version}, torch version {said.torch_version}"
        )


def label_of(tables: Sequence[Table], devices: Sequence[Device], logged: Sequence[LoggedVersion]) -> Label:
    """The label of one job's tables, ranks and NCCL log lines."""
    device, device_said = _device(devices, tables)
    nccl, nccl_said = _nccl_version(tables, logged)
    cuda = _only({version.cuda for version in logged if version.cuda})
    backend, backend_said = _backend(device, device_said, nccl, nccl_said, tables)
    return Label(
        imported_as=ImportedAs(backend=backend, device=device, nccl_version=nccl, cuda_version=cuda),
        evidence=backend_said,
    )


def _only(values: set[str]) -> str:
    return next(iter(values)) if len(values) == 1 else UNKNOWN


def _device(devices: Sequence[Device], tables: Sequence[Table]) -> tuple[str, str]:
    """cpu, cuda or unknown, and what said so."""
    names = [device.name.strip() for device in devices]
    on_cpu = sum(name.lower() == CPU for name in names)
    on_gpu = sum(
        name.lower() != CPU and bool(name or device.device is not None)
        for name, device in zip(names, devices, strict=True)
    )
    if devices and on_cpu == len(devices):
        return CPU, "device_info 'cpu' on every rank"
    if devices and on_gpu == len(devices):
        named = sorted({name for name in names if name})
        if not named:
            return "cuda", "GPU device indices on the '# Using devices' lines"
        kind = "devices" if any(table.written_by == NCCL_TESTS_TEXT for table in tables) else "device_info"
        shown = ", ".join(repr(name) for name in named[:3]) + (" ..." if len(named) > 3 else "")
        return "cuda", f"{kind} {shown}"
    if on_cpu and on_gpu:
        return UNKNOWN, f"{on_cpu} rank(s) on 'cpu' and {on_gpu} on GPUs"
    return UNKNOWN, "ranks whose device is neither named nor numbered"


def _nccl_version(tables: Sequence[Table], logged: Sequence[LoggedVersion]) -> tuple[str, str]:
    """The NCCL library's version, and what said so; unknown where none or several are named."""
    said: dict[str, str] = {}
    for table in tables:
        if table.nccl_version:
            field = "nccl-library=" if table.written_by == NCCL_TESTS_TEXT else "nccl_version "
            said.setdefault(nccl_version_of_code(table.nccl_version), f"{field}{table.nccl_version}")
    for line in logged:
        said.setdefault(line.nccl, f"NCCL's 'NCCL version {line.nccl}' at {line.where}")
    if len(said) == 1:
        ((version, where),) = said.items()
        return version, where
    if said:
        return UNKNOWN, f"the files name NCCL {' and '.join(sorted(said))}"
    return UNKNOWN, ""


def _backend(device: str, device_said: str, nccl: str, nccl_said: str, tables: Sequence[Table]) -> tuple[str, str]:
    """gloo, nccl or unknown, and the evidence in words."""
    if device == CPU:
        return "gloo", f"{device_said} (NCCL runs on GPUs only)"
    if any(table.written_by == COLLBENCH_JSON for table in tables):
        return UNKNOWN, f"{device_said} in collbench's own JSON, which does not name its run's backend"
    evidence = " and ".join(part for part in (nccl_said, device_said if device != UNKNOWN else "") if part)
    if nccl != UNKNOWN or device == "cuda":
        return "nccl", f"{evidence} in {tables[0].written_by}"
    return UNKNOWN, " and ".join(part for part in (nccl_said, device_said) if part) or "nothing in the files"

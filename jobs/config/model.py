"""The one config schema: YAML from cluster_configs/ + key=value overrides -> a validated Config."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

from collectives.dtypes import BACKENDS, BackendName, DeviceName, check_supported
from collectives.layout import LAYOUTS
from collectives.settings import BenchSettings
from jobs.config.check_settings import CheckSettings
from jobs.config.drain_settings import DrainSettings
from jobs.config.exports_settings import ExportSettings
from jobs.config.fabric_settings import FabricSettings
from jobs.config.history_settings import HistorySettings
from jobs.config.isolate_settings import IsolateSettings
from jobs.config.rails_settings import RailSettings
from jobs.config.schema import ConfigError, build, to_plain
from jobs.config.tasks import TASKS, TaskName, TaskSpec, kind_of
from jobs.config.topology_settings import TopologySettings
from slurm.gpus import gpu_problems
from slurm.settings import SlurmSettings

DEFAULT_CONFIG = "local"


@dataclass(kw_only=True, slots=True)
class Timeouts:
    collective_s: float = 120.0
    """Longest wait for rendezvous or for any one collective; then the rank fails."""
    job_min: float = 30.0
    """Wall-clock limit of the whole job (Slurm --time, and the local launcher's limit)."""
    watchdog_s: float = 0.0
    """A rank that makes no progress for this long dumps its Python stacks into its log;
    0 means 0.9 x collective_s, so the stacks land before the peers' collective timeout."""

    def resolved_watchdog_s(self) -> float:
        return self.watchdog_s if self.watchdog_s > 0 else 0.9 * self.collective_s


@dataclass(kw_only=True, slots=True)
class Rendezvous:
    master_addr: str = ""
    """Rendezvous host: empty for the first node of the job (127.0.0.1 locally), an address,
    or a template such as '{host}-ib' applied to the first node's name."""
    master_port: int = 0
    """Rendezvous port; 0 derives one from the Slurm job id (a free port locally)."""


@dataclass(kw_only=True, slots=True)
class Faults:
    """Deliberate faults, for proving that collbench catches them. -1 disables each."""

    corrupt_rank: int = -1
    """This rank flips one element of its output before every check."""
    fail_rank: int = -1
    """This rank raises an error before its sweep."""
    hang_rank: int = -1
    """This rank sleeps instead of running its sweep, until it is killed."""
    slow_rank: int = -1
    """This rank reaches every measurement slow_ms late, as a straggler does."""
    slow_ms: float = 0.0
    """How late faults.slow_rank is at each measurement."""


@dataclass(kw_only=True, slots=True)
class Config:
    task: TaskName = "sweep"
    """The kind of run (jobs.config.tasks): the bench sweep over all ranks (sweep), collbench isolate's rounds
    of node groups (isolate), collbench check's (check: isolate.mode check; task isolate with isolate.mode
    check reads as check), or one node's own local sweep (check-node)."""
    launcher: Literal["local", "slurm", "slurm-step", "imported"] = "local"
    """Run the ranks on this machine (local), as a Slurm job (slurm), or as srun job steps inside the
    allocation this process already holds (slurm-step: salloc, a batch script; collbench check).
    imported is what `collbench import` writes into the config of a run it made from nccl-tests' output:
    nothing can be started with it."""
    ranks: int | None = None
    """World size of a local run (default 1), or auto: one rank per GPU visible here (device=cuda;
    CUDA_VISIBLE_DEVICES, else /dev/nvidiaN), counted when the config is loaded. Under Slurm leave unset:
    nodes x tasks per node."""
    nodes: int = 1
    """Nodes of a Slurm job."""
    backend: BackendName = "gloo"
    """torch.distributed backend: gloo (CPU) or nccl (CUDA). Set alone, or over a config file's, it brings
    its device along (backend=nccl: device cuda), as device does its backend."""
    device: DeviceName = "cpu"
    """Where the buffers live: cpu, or cuda (a GPU of its own per rank: cuda:local_rank where a task sees every
    GPU of its node, cuda:0 where Slurm binds one to each task; under Slurm the job asks for one per rank)."""
    output_dir: str = "runs"
    """Where run directories are created; must be shared by all nodes under Slurm."""
    env: dict[str, str] = field(default_factory=dict)
    """Environment set for every rank (NCCL_*, GLOO_SOCKET_IFNAME, ...)."""
    bench: BenchSettings = field(default_factory=BenchSettings)
    timeouts: Timeouts = field(default_factory=Timeouts)
    rendezvous: Rendezvous = field(default_factory=Rendezvous)
    slurm: SlurmSettings = field(default_factory=SlurmSettings)
    faults: Faults = field(default_factory=Faults)
    fabric: FabricSettings = field(default_factory=FabricSettings)
    isolate: IsolateSettings = field(default_factory=IsolateSettings)
    check: CheckSettings = field(default_factory=CheckSettings)
    drain: DrainSettings = field(default_factory=DrainSettings)
    history: HistorySettings = field(default_factory=HistorySettings)
    exports: ExportSettings = field(default_factory=ExportSettings)
    rails: RailSettings = field(default_factory=RailSettings)
    topology: TopologySettings = field(default_factory=TopologySettings)

    def __post_init__(self) -> None:
        self.task = kind_of(self.task, self.isolate.mode)

    @property
    def spec(self) -> TaskSpec:
        """What this kind of run does differently (jobs.config.tasks.TASKS)."""
        return TASKS[self.task]

    @property
    def on_slurm(self) -> bool:
        """The ranks run on Slurm's nodes, as a job of their own or as steps of an allocation."""
        return self.launcher in ("slurm", "slurm-step")

    @property
    def world_size(self) -> int:
        if self.on_slurm:
            return self.nodes * self.slurm.resolved_tasks_per_node()
        return self.ranks if self.ranks is not None else 1

    @property
    def ranks_per_node(self) -> int:
        """Ranks on each node: slurm.tasks_per_node under Slurm, else every rank of the run (one node)."""
        return self.slurm.resolved_tasks_per_node() if self.on_slurm else self.world_size

    def measured_bench(self) -> BenchSettings:
        """What the ranks' task measures: the bench section, or for isolate (and check) its op and sizes."""
        return self.isolate.bench(self.bench) if self.spec.in_rounds else self.bench

    def largest_size_key(self) -> str:
        """The key that sets the largest size the task measures: what to lower when it does not fit."""
        if self.spec.size_key:
            return self.spec.size_key
        return "bench.sizes" if self.bench.sizes else "bench.max_bytes"


_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def validate(cfg: Config) -> None:
    """Cross-field checks the types alone cannot express; raises ConfigError on the first problem."""
    problems = _world_problems(cfg) + _bench_problems(cfg) + _env_problems(cfg) + cfg.slurm.problems()
    problems += _timeout_problems(cfg) + _fault_problems(cfg) + _fabric_problems(cfg) + _isolate_problems(cfg)
    problems += cfg.check.problems() + cfg.drain.problems() + cfg.exports.problems()
    problems += cfg.rails.problems(cfg.ranks_per_node) + cfg.topology.problems() + _device_problems(cfg)
    if problems:
        raise ConfigError(problems[0])


def derive(cfg: Config, **changes: Any) -> Config:
    """`cfg` with `changes` (a section changed whole, as `isolate=replace(cfg.isolate, ...)`), validated:
    what a command derives from the user's config (isolate's level, check's plan, a sweep's node count)
    is checked as the one object it starts, never rebuilt from `key=value` strings."""
    derived = replace(cfg, **changes)
    validate(derived)
    return derived


def _world_problems(cfg: Config) -> list[str]:
    found = []
    if cfg.ranks is not None and cfg.ranks < 1:
        found.append(f"ranks: {cfg.ranks} must be >= 1")
    if cfg.nodes < 1:
        found.append(f"nodes: {cfg.nodes} must be >= 1")
    if cfg.launcher == "local" and cfg.nodes != 1:
        found.append(f"nodes: {cfg.nodes} needs launcher=slurm; the local launcher runs on one node")
    if cfg.on_slurm and cfg.ranks is not None and cfg.ranks != cfg.world_size:
        found.append(
            f"ranks: {cfg.ranks} does not match nodes x slurm.tasks_per_node = {cfg.world_size}; "
            "under Slurm leave ranks unset"
        )
    if not 0 <= cfg.rendezvous.master_port <= 65535:
        found.append(f"rendezvous.master_port: {cfg.rendezvous.master_port} must be 0 (derived) or 1-65535")
    return found


def _device_problems(cfg: Config) -> list[str]:
    """A run on GPUs under Slurm asks for one per rank (slurm.gpus): refused before it waits in the queue."""
    if cfg.device != "cuda" or not cfg.on_slurm:
        return []
    return gpu_problems(cfg.slurm, cfg.nodes, submitted=cfg.launcher == "slurm")


def _isolate_problems(cfg: Config) -> list[str]:
    if not cfg.spec.in_rounds:
        return []
    if not cfg.on_slurm:
        return [
            f"task: {cfg.task} needs launcher=slurm or slurm-step (it measures nodes against each other); "
            f"got {cfg.launcher!r}"
        ]
    if cfg.isolate.mode != cfg.spec.plan_mode and cfg.spec.plan_mode:
        return [f"isolate.mode: {cfg.isolate.mode} does not plan task {cfg.task}; allowed: {cfg.spec.plan_mode}"]
    found = cfg.isolate.problems(cfg.nodes)
    if found:
        return found
    group_ranks = 2 * cfg.slurm.resolved_tasks_per_node()  # the smallest group: a pair of nodes
    return _op_problems(cfg, cfg.isolate.bench(cfg.bench), group_ranks, "isolate.op")


def _bench_problems(cfg: Config) -> list[str]:
    bench = cfg.bench
    found = []
    if not bench.ops:
        found.append(f"bench.ops: the list is empty; choose from {', '.join(LAYOUTS)}")
    found += _size_problems(bench)
    found += _iteration_problems(cfg)
    if bench.root != "all" and not 0 <= bench.root < cfg.world_size:
        found.append(f"bench.root: {bench.root} is not a rank of this run; allowed: 0-{cfg.world_size - 1} or all")
    return found + _op_problems(cfg, bench, cfg.world_size, "bench.ops")


def _op_problems(cfg: Config, bench: BenchSettings, nranks: int, key: str) -> list[str]:
    found = []
    for op in dict.fromkeys(bench.ops):
        layout = LAYOUTS[op]
        try:
            check_supported(cfg.backend, cfg.device, bench.dtype, bench.reduce_op, layout.reduces)
        except ValueError as error:
            found.append(f"{key}: {op} on backend {cfg.backend}: {error}")
        if cfg.backend == "gloo" and nranks < layout.gloo_min_ranks:
            found.append(
                f"{key}: {op} on backend gloo needs at least {layout.gloo_min_ranks} ranks; this run has {nranks}"
            )
    return found


def _size_problems(bench: BenchSettings) -> list[str]:
    found = []
    for name in ("min_bytes", "max_bytes"):
        if getattr(bench, name) <= 0:
            found.append(f"bench.{name}: {getattr(bench, name)} must be a positive size such as 8 or 4M")
    if bench.min_bytes > bench.max_bytes:
        found.append(f"bench.min_bytes: {bench.min_bytes} is larger than bench.max_bytes {bench.max_bytes}")
    if bench.step_bytes < 0:
        found.append(f"bench.step_bytes: {bench.step_bytes} must be 0 (use step_factor) or a positive size")
    if bench.step_bytes == 0 and not bench.sizes and bench.step_factor <= 1:
        found.append(f"bench.step_factor: {bench.step_factor:g} must be > 1")
    found += [f"bench.sizes[{i}]: {size} must be a positive size" for i, size in enumerate(bench.sizes) if size <= 0]
    return found


def _iteration_problems(cfg: Config) -> list[str]:
    bench = cfg.bench
    found = []
    for name, floor in (("iters", 1), ("warmup_iters", 0), ("min_iters", 1), ("cuda_graph_launches", 0)):
        if getattr(bench, name) < floor:
            found.append(f"bench.{name}: {getattr(bench, name)} must be >= {floor}")
    if bench.max_iters < bench.min_iters:
        found.append(f"bench.max_iters: {bench.max_iters} is smaller than bench.min_iters {bench.min_iters}")
    if bench.time_budget_ms < 0:
        found.append(f"bench.time_budget_ms: {bench.time_budget_ms:g} must be 0 (use iters) or positive")
    if bench.cuda_graph_launches > 0 and cfg.device != "cuda":
        found.append(
            f"bench.cuda_graph_launches: {bench.cuda_graph_launches} needs device=cuda; this run is on {cfg.device}"
        )
    if bench.cuda_graph_launches > 0 and bench.timer == "per_call":
        found.append(
            "bench.timer: 'per_call' cannot time CUDA graph replays, which run under one clock; allowed with "
            "bench.cuda_graph_launches: auto or loop (bench.per_iteration=true adds the per-replay times)"
        )
    return found


def _env_problems(cfg: Config) -> list[str]:
    found = []
    for name, value in cfg.env.items():
        if not _ENV_NAME.match(name):
            found.append(f"env: {name!r} is not a variable name; allowed: letters, digits and '_'")
        if "\n" in value or "\0" in value:
            found.append(f"env.{name}: {value!r} spans several lines; allowed: a single line")
    return found


def _timeout_problems(cfg: Config) -> list[str]:
    return [
        f"timeouts.{name}: {getattr(cfg.timeouts, name):g} must be > 0"
        for name in ("collective_s", "job_min")
        if getattr(cfg.timeouts, name) <= 0
    ] + ([f"timeouts.watchdog_s: {cfg.timeouts.watchdog_s:g} must be >= 0"] if cfg.timeouts.watchdog_s < 0 else [])


def _fault_problems(cfg: Config) -> list[str]:
    return [
        f"faults.{name}: {getattr(cfg.faults, name)} is not a rank of this run; allowed: -1 or 0-{cfg.world_size - 1}"
        for name in ("corrupt_rank", "fail_rank", "hang_rank", "slow_rank")
        if not -1 <= getattr(cfg.faults, name) < cfg.world_size
    ]


def configs_dir() -> Path:
    """cluster_configs/: inside the installed package, or at the top of a checkout."""
    here = Path(__file__).resolve().parent.parent
    for candidate in (here / "cluster_configs", here.parent / "cluster_configs"):
        if candidate.is_dir():
            return candidate
    raise ConfigError(f"cluster_configs/ is missing: looked in {here} and {here.parent}")


def available_configs() -> list[str]:
    return sorted(p.stem for p in configs_dir().glob("*.yaml"))


def resolve_config_path(name_or_path: str) -> Path:
    """A config by path, or by name from cluster_configs/ ('local' -> cluster_configs/local.yaml)."""
    as_path = Path(name_or_path).expanduser()
    if as_path.is_file():
        return as_path
    named = configs_dir() / f"{name_or_path}.yaml"
    if "/" not in name_or_path and named.is_file():
        return named
    raise ConfigError(
        f"--config: {name_or_path!r} is neither a YAML file nor a config name; names: {', '.join(available_configs())}"
    )


def load_config(name_or_path: str | None = None, overrides: list[str] | tuple[str, ...] = ()) -> Config:
    """The validated Config from a YAML file (default: the embedded local config) plus overrides."""
    path = resolve_config_path(name_or_path or DEFAULT_CONFIG)
    from_file = _load_yaml(path)
    typed = [_parse_override(o) for o in overrides]
    merged = OmegaConf.merge(from_file, *typed)
    try:
        data = OmegaConf.to_container(merged, resolve=True)
    except OmegaConfBaseException as error:
        raise ConfigError(f"{path}: {_first_line(error)}") from None
    if isinstance(data, dict):
        said = {key: 1 for key in from_file} | {key: 2 for override in typed for key in override}
        _pair_backend_and_device(data, said)
        _resolve_auto_ranks(data, os.environ)
    cfg = build(Config, data)
    validate(cfg)
    return cfg


def _pair_backend_and_device(data: dict[Any, Any], said: Mapping[Any, int]) -> None:
    """backend and device go together (gloo on cpu, nccl on cuda): the one set where the other was left at
    its default (or set in the file while the overrides set this one) brings the other along. Both set at
    the same place and apart are left for validate to refuse, naming both. `said`: key -> where it was
    set, 1 the file, 2 the overrides (unset: the schema's default)."""
    backend, device = data.get("backend", "gloo"), data.get("device", "cpu")
    if backend not in BACKENDS or BACKENDS[backend].device == device:
        return
    paired = {spec.device: name for name, spec in BACKENDS.items()}
    if device not in paired:
        return  # not a device: build says so
    if said.get("device", 0) > said.get("backend", 0):
        data["backend"] = paired[device]
    elif said.get("backend", 0) > said.get("device", 0):
        data["device"] = BACKENDS[backend].device


AUTO_RANKS = "auto"
"""ranks: auto, one rank per GPU this process sees (a local run on CUDA)."""


def _resolve_auto_ranks(data: dict[Any, Any], environ: Mapping[str, str]) -> None:
    """ranks: auto -> the number of GPUs visible here, or one line saying why there is none to count."""
    if data.get("ranks") != AUTO_RANKS:
        return
    launcher, device = data.get("launcher", "local"), data.get("device", "cpu")
    if launcher != "local":
        raise ConfigError(
            f"ranks: auto counts this machine's GPUs, for launcher=local; under launcher={launcher} leave ranks "
            "unset (nodes x slurm.tasks_per_node)"
        )
    if device != "cuda":
        raise ConfigError(f"ranks: auto is one rank per visible GPU and needs device=cuda; got {device}: set ranks=N")
    count, seen = visible_gpus(data.get("env") or {}, environ)
    if count < 1:
        raise ConfigError(
            f"ranks: auto found no GPU visible here ({seen}); on a GPU machine set CUDA_VISIBLE_DEVICES or "
            "ranks=N, or run on the CPU: --config local"
        )
    data["ranks"] = count


def visible_gpus(config_env: Mapping[str, Any], environ: Mapping[str, str]) -> tuple[int, str]:
    """How many GPUs a rank started here may use, without CUDA: the config's env.CUDA_VISIBLE_DEVICES, else
    this process's, else the NVIDIA device files (/dev/nvidia0, ...); and what it was counted from."""
    for where, env in (("env.CUDA_VISIBLE_DEVICES", config_env), ("CUDA_VISIBLE_DEVICES", environ)):
        given = env.get("CUDA_VISIBLE_DEVICES")
        if given is not None:
            entries = [entry.strip() for entry in str(given).split(",") if entry.strip()]
            return len(entries), f"{where}={given!r}"
    devices = [path for path in Path("/dev").glob("nvidia*") if re.fullmatch(r"nvidia\d+", path.name)]
    return len(devices), f"{len(devices)} /dev/nvidiaN device file(s), CUDA_VISIBLE_DEVICES unset"


def _load_yaml(path: Path) -> Any:
    try:
        loaded = OmegaConf.load(path)
    except Exception as error:  # yaml.YAMLError and OmegaConf's own errors
        raise ConfigError(f"config file {str(path)!r} is not valid YAML: {_first_line(error)}") from None
    if not OmegaConf.is_dict(loaded):
        raise ConfigError(f"config file {str(path)!r} must hold a mapping of keys at the top, not a list")
    return loaded


_OVERRIDE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*=")


def _parse_override(text: str) -> Any:
    if not _OVERRIDE.match(text):
        raise ConfigError(f"override {text!r} is not KEY=VALUE; for example ranks=4 or bench.ops=[all_reduce]")
    try:
        return OmegaConf.from_dotlist([text])
    except Exception as error:
        raise ConfigError(f"override {text!r}: {_first_line(error)}") from None


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def to_yaml(cfg: Config) -> str:
    return OmegaConf.to_yaml(OmegaConf.create(to_plain(cfg)))


def config_from_plain(data: dict[str, Any]) -> Config:
    """A Config back from its saved form (the run directory's config.yaml)."""
    cfg = build(Config, data)
    validate(cfg)
    return cfg


__all__ = ["BACKENDS", "Config", "ConfigError", "load_config", "to_yaml", "validate"]


NCCL_INFO_LEVELS = ("INFO", "TRACE")
NCCL_INFO_SUBSYSTEMS = ("INIT", "NET")
"""What fabric.nccl_info needs NCCL to print: channel lines are INIT, network and GPUDirect lines NET."""


def _fabric_problems(cfg: Config) -> list[str]:
    fabric = cfg.fabric
    found = []
    if fabric.max_port_errors < -1:
        found.append(f"fabric.max_port_errors: {fabric.max_port_errors} must be -1 (not checked) or >= 0")
    if fabric.line_gbps < 0:
        found.append(f"fabric.line_gbps: {fabric.line_gbps:g} must be 0 (read from sysfs) or a rate in Gb/s")
    wants = [name for name, on in (("require_network", fabric.require_network != "any"),
                                   ("require_gdr", fabric.require_gdr)) if on]  # fmt: skip
    for name in wants:
        if cfg.backend != "nccl":
            found.append(f"fabric.{name}: {getattr(fabric, name)} needs backend=nccl; this run uses {cfg.backend}")
        elif not fabric.nccl_info:
            found.append(f"fabric.{name}: {getattr(fabric, name)} needs fabric.nccl_info=true (NCCL's own account)")
    if fabric.nccl_info and cfg.backend == "nccl":
        level = cfg.env.get("NCCL_DEBUG", "INFO")
        if level.upper() not in NCCL_INFO_LEVELS:
            found.append(
                f"env.NCCL_DEBUG: {level!r} hides what fabric.nccl_info reads; allowed with it: INFO, TRACE "
                "(or leave NCCL_DEBUG unset)"
            )
        subsystems = {part.strip().upper() for part in cfg.env.get("NCCL_DEBUG_SUBSYS", "INIT,NET").split(",")}
        missing = [name for name in NCCL_INFO_SUBSYSTEMS if "ALL" not in subsystems and name not in subsystems]
        if missing or any(part.startswith("^") for part in subsystems):
            found.append(
                f"env.NCCL_DEBUG_SUBSYS: {cfg.env['NCCL_DEBUG_SUBSYS']!r} leaves out what fabric.nccl_info reads; "
                "allowed with it: a list holding INIT and NET, or ALL (or leave it unset)"
            )
    return found

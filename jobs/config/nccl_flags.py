"""nccl-tests' flags (`-b 8 -e 8G -f 2 -n 20 -d bfloat16`) as data: each a spelling of one config key, the
KEY=VALUE override it stands for, or for a flag that maps nowhere, the key to use instead or why it means
nothing in collbench. The table is nccl-tests' option table (src/common.cu, `longopts`), flag for flag;
jobs/cli/nccl_flags.py puts it on the commands that start a sweep and in `collbench config`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from jobs.config.schema import ConfigError


@dataclass(frozen=True, slots=True)
class Flag:
    """One nccl-tests flag and the config key it sets, or why it sets none."""

    short: str
    """nccl-tests' one-letter spelling: `-b`."""
    long: str
    """nccl-tests' long spelling: `--minbytes`."""
    metavar: str
    key: str = ""
    """The config key it sets; empty for a flag that maps nowhere."""
    values: Mapping[str, str] = field(default_factory=dict)
    """nccl-tests' value -> collbench's; empty: the value is passed on as typed, for the schema to judge."""
    refusal: str = ""
    """For a flag that maps nowhere: the key to use instead, or why it means nothing here."""
    as_here: str = ""
    """For a flag that maps nowhere: the one value that says what collbench always does (`-g 1`: one GPU
    per process), taken and changing nothing; any other value is refused."""

    @property
    def taken(self) -> bool:
        return bool(self.key)

    def spelled(self) -> str:
        return f"{self.short}, {self.long}"

    def override(self, value: str) -> str:
        """The KEY=VALUE this flag with `value` stands for; a value outside `values` is refused."""
        if not self.values:
            return f"{self.key}={value}"
        if value not in self.values:
            allowed = ", ".join(self.values)
            raise ConfigError(f"{self.short} {value}: {self._why_not(value)}; allowed: {allowed} ({self.key})")
        return f"{self.key}={self.values[value]}"

    def _why_not(self, value: str) -> str:
        return NOT_HERE.get((self.short, value), f"not a value of nccl-tests' {self.long} that collbench runs")


DTYPES = {
    "int8": "int8",
    "uint8": "uint8",
    "int32": "int32",
    "int64": "int64",
    "half": "float16",
    "float": "float32",
    "double": "float64",
    "bfloat16": "bfloat16",
}
"""nccl-tests' type names (test_typenames) -> collbench's bench.dtype; collbench's own names are taken too."""

_OPS = {name: name for name in ("sum", "prod", "min", "max", "avg")}
_BOOL = {"0": "false", "1": "true"}

NOT_HERE: dict[tuple[str, str], str] = {
    ("-d", "all"): "collbench measures one type per run (bench.dtype); run once per type",
    ("-o", "all"): "collbench measures one reduction per run (bench.reduce_op); run once per op",
    ("-o", "mulsum"): "torch.distributed has no pre-multiplied sum",
    ("-d", "uint32"): "torch.distributed has no uint32 collectives",
    ("-d", "uint64"): "torch.distributed has no uint64 collectives",
    ("-c", "N"): "collbench checks each size once, after timing it",
}
"""Values of a taken flag that collbench cannot run, and why (answered with the values it can)."""

FLAGS: tuple[Flag, ...] = (
    Flag("-b", "--minbytes", "SIZE", "bench.min_bytes"),
    Flag("-e", "--maxbytes", "SIZE", "bench.max_bytes"),
    Flag("-i", "--stepbytes", "SIZE", "bench.step_bytes"),
    Flag("-f", "--stepfactor", "F", "bench.step_factor"),
    Flag("-n", "--iters", "N", "bench.iters"),
    Flag("-w", "--warmup_iters", "N", "bench.warmup_iters"),
    Flag("-c", "--check", "0|1", "bench.check", _BOOL),
    Flag("-d", "--datatype", "TYPE", "bench.dtype", {**DTYPES, **{v: v for v in DTYPES.values()}}),
    Flag("-o", "--op", "OP", "bench.reduce_op", _OPS),
    Flag("-r", "--root", "N", "bench.root"),
    Flag("-T", "--timeout", "S", "timeouts.collective_s"),
    Flag("-G", "--cudagraph", "N", "bench.cuda_graph_launches"),
    Flag("-C", "--report_cputime", "0|1", "bench.report_cputime", _BOOL),
    Flag("-a", "--average", "0-3", "bench.average", {"0": "rank0", "1": "mean", "2": "min", "3": "max"}),
    Flag("-I", "--per_iter_timing", "0|1", "bench.per_iteration", _BOOL),
    Flag("-t", "--nthreads", "N", refusal="collbench runs one process per rank, no threads: set ranks=N", as_here="1"),
    Flag(
        "-g",
        "--ngpus",
        "N",
        refusal="each rank has one GPU of its own: set ranks=N on one node (--config local-gpu: one per visible "
        "GPU), or slurm.tasks_per_node and slurm.gpus_per_node",
        as_here="1",
    ),
    Flag(
        "-m",
        "--agg_iters",
        "N",
        refusal="collbench times one collective per iteration, none grouped: set bench.iters",
        as_here="1",
    ),
    Flag(
        "-N",
        "--run_cycles",
        "N",
        refusal="no key: a run measures its sweep once; start it again for another",
        as_here="1",
    ),
    Flag("-p", "--parallel_init", "0|1", refusal="no meaning here: every rank is a process and joins on its own"),
    Flag("-z", "--blocking", "0-3", refusal="no key: bench.timer (loop | per_call) says how the calls are waited for"),
    Flag("-y", "--stream_null", "0|1", refusal="no key: torch.distributed runs NCCL on its own streams", as_here="0"),
    Flag(
        "-S",
        "--report_timestamps",
        "0|1",
        refusal="no key: every rank's log line has its time (collbench logs RUN)",
        as_here="0",
    ),
    Flag(
        "-J",
        "--output_file",
        "FILE",
        refusal="no key: the run directory keeps the results; nccl-tests' JSON: collbench report RUN "
        "--format nccl-tests-json > FILE",
    ),
    Flag(
        "-R",
        "--local_register",
        "0-2",
        refusal="no key: collbench does not register its buffers with NCCL",
        as_here="0",
    ),
    Flag("-x", "--cta_policy", "0-2", refusal="no key: collbench sets no NCCL communicator config (env sets NCCL_*)"),
    Flag(
        "-D",
        "--device_implementation",
        "N",
        refusal="no key: NCCL's device-API kernels are nccl-tests' own",
        as_here="0",
    ),
    Flag("-V", "--device_cta_count", "N", refusal="no key: NCCL's device-API kernels are nccl-tests' own"),
    Flag(
        "-M",
        "--memory",
        "0|1",
        refusal="no key: each size's memory is checked before it runs (docs/configuration.md)",
        as_here="0",
    ),
    Flag("-u", "--unalign", "N", refusal="no key: collbench's buffers are torch's, aligned", as_here="0"),
    Flag(
        "-K",
        "--per_iter_skip",
        "N",
        refusal="no key: bench.warmup_iters come untimed before bench.per_iteration's",
        as_here="0",
    ),
)
"""Every flag of nccl-tests' option table but -h (help, as here)."""

ROOT_ALL = "-1"
"""nccl-tests' -r -1: every rank as root in turn, collbench's bench.root=all."""


def taken_flags() -> tuple[Flag, ...]:
    return tuple(flag for flag in FLAGS if flag.taken)


def flag_spellings() -> dict[str, str]:
    """Config key -> the nccl-tests flag that sets it: `bench.min_bytes` -> `-b, --minbytes`."""
    return {flag.key: flag.spelled() for flag in taken_flags()}


def refused_flags() -> tuple[Flag, ...]:
    return tuple(flag for flag in FLAGS if not flag.taken)


def flag_overrides(given: Sequence[tuple[Flag, str | None]]) -> list[str]:
    """The KEY=VALUE overrides the flags stand for, in the order typed; the first flag with no key, or a
    value collbench cannot run, raises ConfigError with its line."""
    for flag, value in given:
        if not flag.taken and value != flag.as_here:
            said = f"{flag.short} {value}" if value is not None else flag.short
            raise ConfigError(f"{said} ({flag.long}, nccl-tests' flag) is not taken here: {flag.refusal}")
    _one_step_kind(given)
    return [_override(flag, value or "") for flag, value in given if flag.taken]


def _override(flag: Flag, value: str) -> str:
    if flag.short == "-r" and value == ROOT_ALL:
        return f"{flag.key}=all"
    if flag.short == "-c" and value.isdigit() and int(value) > 1:
        raise ConfigError(f"-c {value}: {NOT_HERE[('-c', 'N')]}; allowed: 0, 1 (bench.check)")
    return flag.override(value)


def _one_step_kind(given: Sequence[tuple[Flag, str | None]]) -> None:
    """-f and -i together: nccl-tests then steps by -f and drops -i; collbench asks for one of them."""
    shorts = {flag.short for flag, _ in given}
    if {"-f", "-i"} <= shorts:
        raise ConfigError(
            "-f and -i: give one; -f F multiplies the size (bench.step_factor), -i SIZE adds to it (bench.step_bytes)"
        )


def merged(flags: Sequence[str], overrides: Sequence[str]) -> list[str]:
    """The flags' overrides, then the typed ones; a key set both ways is refused, naming both."""
    typed = {override.split("=", 1)[0]: override for override in overrides if "=" in override}
    for override in flags:
        key = override.split("=", 1)[0]
        if key in typed:
            flag = next(f for f in FLAGS if f.key == key)
            raise ConfigError(f"{flag.short} and {typed[key]} both set {key}; give one")
    return [*flags, *overrides]

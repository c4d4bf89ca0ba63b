"""Element types, reduce operations and what each backend can run: plain data, no torch."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

DTypeName = Literal["int8", "uint8", "int32", "int64", "float16", "bfloat16", "float32", "float64"]
ReduceOpName = Literal["sum", "prod", "min", "max", "avg"]
BackendName = Literal["gloo", "nccl"]
DeviceName = Literal["cpu", "cuda"]


@dataclass(frozen=True, slots=True)
class DTypeSpec:
    name: str
    """Our name, as written in configs (torch's)."""
    nccl_name: str
    """The name nccl-tests prints in its 'type' column."""
    size: int
    """Bytes per element."""
    is_float: bool


DTYPES: dict[str, DTypeSpec] = {
    spec.name: spec
    for spec in (
        DTypeSpec(name="int8", nccl_name="int8", size=1, is_float=False),
        DTypeSpec(name="uint8", nccl_name="uint8", size=1, is_float=False),
        DTypeSpec(name="int32", nccl_name="int32", size=4, is_float=False),
        DTypeSpec(name="int64", nccl_name="int64", size=8, is_float=False),
        DTypeSpec(name="float16", nccl_name="half", size=2, is_float=True),
        DTypeSpec(name="bfloat16", nccl_name="bfloat16", size=2, is_float=True),
        DTypeSpec(name="float32", nccl_name="float", size=4, is_float=True),
        DTypeSpec(name="float64", nccl_name="double", size=8, is_float=True),
    )
}

REDUCE_OPS: dict[str, str] = {
    "sum": "SUM",
    "prod": "PRODUCT",
    "min": "MIN",
    "max": "MAX",
    "avg": "AVG",
}
"""Our reduce-op name -> the torch.distributed.ReduceOp member."""


@dataclass(frozen=True, slots=True)
class BackendSpec:
    name: str
    device: str
    """The only device this backend runs collectives on (in collbench)."""
    dtypes: tuple[str, ...]
    reduce_ops: tuple[str, ...]
    float_only_reduce_ops: tuple[str, ...] = ()
    """Reduce ops this backend runs on floating-point types only."""


BACKENDS: dict[str, BackendSpec] = {
    "gloo": BackendSpec(
        name="gloo",
        device="cpu",
        dtypes=get_args(DTypeName),
        reduce_ops=("sum", "prod", "min", "max", "avg"),
        float_only_reduce_ops=("avg",),
    ),
    "nccl": BackendSpec(
        name="nccl",
        device="cuda",
        dtypes=get_args(DTypeName),
        reduce_ops=("sum", "prod", "min", "max", "avg"),
    ),
}


def check_supported(backend: str, device: str, dtype: str, reduce_op: str, reducing: bool) -> None:
    """Raise ValueError naming what the backend supports when it cannot run this combination."""
    spec = BACKENDS[backend]
    if device != spec.device:
        raise ValueError(f"device {device!r} cannot be used with backend {backend!r}; {backend} runs on {spec.device}")
    if dtype not in spec.dtypes:
        raise ValueError(f"dtype {dtype!r} is not supported by {backend}; it supports {', '.join(spec.dtypes)}")
    if not reducing:
        return
    if reduce_op not in spec.reduce_ops:
        raise ValueError(
            f"reduce op {reduce_op!r} is not supported by {backend}; it supports {', '.join(spec.reduce_ops)}"
        )
    if reduce_op in spec.float_only_reduce_ops and not DTYPES[dtype].is_float:
        floats = ", ".join(name for name, d in DTYPES.items() if d.is_float)
        raise ValueError(
            f"reduce op {reduce_op!r} on dtype {dtype!r} is not supported by {backend}; "
            f"{backend} runs {reduce_op} on {floats} only"
        )

from typing import get_args

import pytest

from collectives.dtypes import BACKENDS, DTYPES, REDUCE_OPS, DTypeName, ReduceOpName, check_supported


def test_tables_cover_every_name_the_schema_allows() -> None:
    assert set(DTYPES) == set(get_args(DTypeName))
    assert set(REDUCE_OPS) == set(get_args(ReduceOpName))


def test_gloo_runs_avg_on_floats_only() -> None:
    check_supported("gloo", "cpu", "float32", "avg", reducing=True)
    with pytest.raises(ValueError, match="gloo runs avg on float16, bfloat16, float32, float64 only"):
        check_supported("gloo", "cpu", "int32", "avg", reducing=True)


def test_reduce_op_is_irrelevant_for_gathers() -> None:
    check_supported("gloo", "cpu", "int8", "avg", reducing=False)


@pytest.mark.parametrize(("backend", "device"), [("gloo", "cuda"), ("nccl", "cpu")])
def test_backend_device_mismatch_names_the_right_device(backend: str, device: str) -> None:
    with pytest.raises(ValueError, match=f"{backend} runs on {BACKENDS[backend].device}"):
        check_supported(backend, device, "float32", "sum", reducing=True)

"""A rank holds one size's buffers at a time: the previous size's are gone before the next are allocated, a
step of the same shape reuses them, and an op measured in place only gets no send buffer."""

from __future__ import annotations

import weakref

import pytest
import torch

from collectives.plan import plan_sweep
from collectives.settings import BenchSettings
from collectives.sweep import Buffers, SizeBuffers

CPU = torch.device("cpu")


def test_the_previous_sizes_buffers_are_freed_before_the_next_are_allocated(monkeypatch: pytest.MonkeyPatch) -> None:
    steps, _ = plan_sweep(BenchSettings(ops=["all_gather"], sizes=[1024, 4096]), 2)
    buffers = SizeBuffers(torch.float32, CPU)
    first = buffers.for_step(steps[0])
    alive = [weakref.ref(first.send), weakref.ref(first.recv)]
    del first
    allocate = Buffers.allocate

    def allocate_after_the_free(*args: object, **kwargs: object) -> Buffers:
        assert all(ref() is None for ref in alive), "the previous size's buffers are still alive"
        return allocate(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Buffers, "allocate", allocate_after_the_free)
    second = buffers.for_step(steps[1])
    assert second.recv.numel() == steps[1].counts.recv


def test_a_step_of_the_same_shape_reuses_the_buffers() -> None:
    steps, _ = plan_sweep(BenchSettings(ops=["broadcast"], sizes=[4096], root="all"), 2)
    buffers = SizeBuffers(torch.float32, CPU)
    assert buffers.for_step(steps[0]) is buffers.for_step(steps[1])


def test_an_op_measured_in_place_only_allocates_no_send_buffer() -> None:
    steps, _ = plan_sweep(BenchSettings(ops=["all_reduce", "all_gather"], sizes=[4096]), 2)
    buffers = SizeBuffers(torch.float32, CPU)
    reduced = buffers.for_step(steps[0])
    assert reduced.send.numel() == 0 and reduced.recv.numel() == 1024
    assert buffers.for_step(steps[1]).send.numel() == steps[1].counts.send

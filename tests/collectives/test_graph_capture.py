"""CUDA graphs are captured in thread-local mode, as nccl-tests captures (NCCL may allocate while a call is
captured). No GPU runs here: torch.cuda.graph is stood in for to see how collectives.timing calls it;
tests/bench/gpu_check.sh runs graphs mode for real."""

from __future__ import annotations

from types import TracebackType
from typing import Any

import pytest
import torch

from collectives import timing


class FakeGraph:
    pass


class RecordingCapture:
    """torch.cuda.graph's place: records its arguments and what ran inside it."""

    seen: dict[str, Any] = {}

    def __init__(self, graph: FakeGraph, **options: Any) -> None:
        RecordingCapture.seen = {"graph": graph, **options, "calls_inside": 0, "open": False}

    def __enter__(self) -> None:
        RecordingCapture.seen["open"] = True

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        RecordingCapture.seen["open"] = False


def test_the_iterations_are_captured_in_thread_local_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "CUDAGraph", FakeGraph)
    monkeypatch.setattr(torch.cuda, "graph", RecordingCapture)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: None)

    def call() -> None:
        assert RecordingCapture.seen["open"], "called outside the capture"
        RecordingCapture.seen["calls_inside"] += 1

    graph = timing._capture(call, 3, torch.device("cuda", 0))
    assert RecordingCapture.seen["capture_error_mode"] == "thread_local"
    assert RecordingCapture.seen["graph"] is graph and RecordingCapture.seen["calls_inside"] == 3

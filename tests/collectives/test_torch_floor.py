"""The torch floor: one line naming what collbench needs and the torch it found."""

from __future__ import annotations

import pytest
import torch

from collectives.torch_floor import TorchTooOld, require_torch_floor, torch_floor_problem


@pytest.mark.parametrize("version", ["2.6.0", "2.6.0a0+gitabc123", "2.13.0+cpu", "3.0.1"])
def test_torch_2_6_and_later_pass(version: str) -> None:
    assert torch_floor_problem(version) == ""


@pytest.mark.parametrize("version", ["2.5.1+cu121", "2.1.0", "1.13.1", "unknown"])
def test_an_older_torch_is_one_line_naming_both_versions(version: str) -> None:
    with pytest.raises(TorchTooOld) as refused:
        require_torch_floor(version)
    assert str(refused.value) == (
        f"collbench needs torch >= 2.6 (group_src/group_dst/group_peer, split_group); this is torch {version}"
    )


def test_the_torch_installed_here_passes() -> None:
    require_torch_floor(torch.__version__)

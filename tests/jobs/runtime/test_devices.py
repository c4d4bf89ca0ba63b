"""A rank's GPU from what its process sees, with faked device counts and visible lists."""

import pytest

from jobs.runtime.devices import DeviceUnavailable, device_for, visible_entries


def test_a_task_that_sees_every_gpu_of_its_node_takes_its_local_rank() -> None:
    mine = device_for(local_rank=5, local_world_size=8, visible_count=8, cuda_visible_devices=None)
    assert (mine.index, mine.visible_as) == (5, "")


def test_a_task_slurm_bound_to_one_gpu_takes_cuda_0_whatever_its_local_rank() -> None:
    mine = device_for(local_rank=5, local_world_size=8, visible_count=1, cuda_visible_devices="5")
    assert (mine.index, mine.visible_as) == (0, "5")


def test_one_gpu_seen_by_several_ranks_that_were_not_each_bound_to_one_is_refused() -> None:
    """Two local ranks on a one-GPU machine (submitit's list '0,1', one device) would share it."""
    with pytest.raises(DeviceUnavailable, match=r"sees 1 GPUs \(CUDA_VISIBLE_DEVICES='0,1'\), fewer than the 2 ranks"):
        device_for(local_rank=1, local_world_size=2, visible_count=1, cuda_visible_devices="0,1", host="n1")
    with pytest.raises(DeviceUnavailable, match=r"CUDA_VISIBLE_DEVICES unset\), fewer than the 2 ranks"):
        device_for(local_rank=0, local_world_size=2, visible_count=1, cuda_visible_devices=None)
    assert device_for(0, 1, 1, None).index == 0, "one rank alone takes the one GPU"


def test_the_entry_of_an_inherited_list_is_named_uuids_included() -> None:
    mine = device_for(1, 2, 2, "GPU-aaaa, MIG-bbbb")
    assert (mine.index, mine.visible_as) == (1, "MIG-bbbb")


def test_more_gpus_than_ranks_is_fine() -> None:
    assert device_for(1, 2, 8, "0,1,2,3,4,5,6,7").index == 1


def test_fewer_visible_gpus_than_local_ranks_is_refused_naming_host_rank_and_count() -> None:
    with pytest.raises(DeviceUnavailable) as refused:
        device_for(local_rank=3, local_world_size=8, visible_count=4, cuda_visible_devices="0,1,2,3", host="n7")
    line = str(refused.value)
    assert "\n" not in line
    assert line.startswith("n7: local rank 3 of 8 sees 4 GPUs (CUDA_VISIBLE_DEVICES='0,1,2,3')")
    assert "fewer than the 8 ranks" in line


def test_no_visible_gpu_is_refused_and_says_what_was_set() -> None:
    with pytest.raises(DeviceUnavailable, match=r"n1: local rank 0 of 1 sees no GPU \(CUDA_VISIBLE_DEVICES=''\)"):
        device_for(0, 1, 0, "", host="n1")
    with pytest.raises(DeviceUnavailable, match="CUDA_VISIBLE_DEVICES unset"):
        device_for(0, 1, 0, None, host="n1")


def test_visible_entries() -> None:
    assert visible_entries(None) == []
    assert visible_entries("") == []
    assert visible_entries("3, 5,,7") == ["3", "5", "7"]

"""Hostlists as Slurm documents them (scontrol show hostnames / hostlist)."""

import pytest

from slurm.hostlist import BadHostlist, collect_hostlist, expand_hostlist, readable_hostlist


@pytest.mark.parametrize(
    ("expr", "hosts"),
    [
        ("n1", ["n1"]),
        ("n[1-3]", ["n1", "n2", "n3"]),
        ("n[1-3,7]", ["n1", "n2", "n3", "n7"]),
        ("n[01-03]", ["n01", "n02", "n03"]),
        ("n[08-11]", ["n08", "n09", "n10", "n11"]),
        ("n[8-11]", ["n8", "n9", "n10", "n11"]),
        ("gpu[1-2]-ib", ["gpu1-ib", "gpu2-ib"]),
        ("rack[1-2]-n[1,3]", ["rack1-n1", "rack1-n3", "rack2-n1", "rack2-n3"]),
        ("a,b[1-2],c", ["a", "b1", "b2", "c"]),
        ("n[1-2],m[5]", ["n1", "n2", "m5"]),
        ("node-07.cluster", ["node-07.cluster"]),
        ("[1-2]x", ["1x", "2x"]),
        ("n1,n1", ["n1", "n1"]),
        ("  n[1-2]  ", ["n1", "n2"]),
    ],
)
def test_expands_every_documented_form(expr: str, hosts: list[str]) -> None:
    assert expand_hostlist(expr) == hosts


@pytest.mark.parametrize(
    "expr",
    [
        "",
        "   ",
        "n[1-3",
        "n1]",
        "n[[1-2]]",
        "n[3-1]",
        "n[a-b]",
        "n[1-]",
        "n[-2]",
        "n[]",
        "n1,,n2",
        ",n1",
        "n1,",
        "n 1",
        "n[1;2]",
        "n[1-2",
        "n]1[",
        "n[1-2]]",
    ],
)
def test_malformed_lists_raise(expr: str) -> None:
    with pytest.raises(BadHostlist) as caught:
        expand_hostlist(expr)
    assert isinstance(caught.value, ValueError)
    assert repr(expr) in str(caught.value) or "empty" in str(caught.value)


def test_huge_ranges_are_refused() -> None:
    with pytest.raises(BadHostlist, match="more than"):
        expand_hostlist("n[0-999999999]")


@pytest.mark.parametrize(
    ("hosts", "expr"),
    [
        (["n1", "n2", "n3", "n5"], "n[1-3,5]"),
        (["n3", "n1", "n2"], "n[1-3]"),
        (["n01", "n02", "n03"], "n[01-03]"),
        (["n9", "n10"], "n[9-10]"),
        (["vm"], "vm"),
        (["n1"], "n1"),
        (["gpu1", "cpu1", "gpu2"], "gpu[1-2],cpu1"),
        (["n1", "n1", "n2"], "n[1-2]"),
        (["node0", "node1", "node2"], "node[0-2]"),  # a bare 0 is not zero padding
        (["mlx5_0", "mlx5_1", "mlx5_7"], "mlx5_[0-1,7]"),
    ],
)
def test_collects_into_slurm_form(hosts: list[str], expr: str) -> None:
    assert collect_hostlist(hosts) == expr


@pytest.mark.parametrize("hosts", [["a1b2", "a1b3", "x"], ["n001", "n002", "n010", "n7"], ["h"], ["n1", "m1", "n2"]])
def test_collect_then_expand_round_trips(hosts: list[str]) -> None:
    assert sorted(expand_hostlist(collect_hostlist(hosts))) == sorted(set(hosts))


def test_collect_refuses_names_a_hostlist_cannot_hold() -> None:
    with pytest.raises(BadHostlist):
        collect_hostlist(["n1", "bad name"])


def test_a_readable_list_compacts_what_it_can_and_shows_the_other_names_as_they_are() -> None:
    odd = "n1<img src=x onerror=alert(1)>"
    assert readable_hostlist(["n2", odd, "n1", "n3", "n2", ""]) == f"n[1-3],{odd},''"
    assert readable_hostlist([odd]) == odd
    assert readable_hostlist([]) == ""

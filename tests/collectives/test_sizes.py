import pytest

from collectives.sizes import format_size, parse_size, size_sweep


@pytest.mark.parametrize(
    ("text", "expected"),
    [(8, 8), ("8", 8), ("1K", 1024), ("64M", 64 * 1024**2), ("1G", 1024**3), ("4m", 4 * 1024**2), ("2KB", 2048)],
)
def test_parse_size_accepts_bytes_and_suffixes(text: object, expected: int) -> None:
    assert parse_size(text) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", ["", "M", "12Q", "1.5.2K", "-", True, "ten"])
def test_parse_size_rejects_garbage_naming_the_value(bad: object) -> None:
    with pytest.raises(ValueError, match="is not a size"):
        parse_size(bad)  # type: ignore[arg-type]


def test_format_size_is_exact_and_short() -> None:
    assert [format_size(n) for n in (8, 1024, 3 * 1024**2, 1024**3, 1536)] == ["8", "1K", "3M", "1G", "1536"]


def test_sweep_follows_nccl_tests_factor_loop() -> None:
    assert size_sweep(8, 128, 2) == [8, 16, 32, 64, 128]
    assert size_sweep(8, 100, 2) == [8, 16, 32, 64]
    assert size_sweep(1000, 1000, 4) == [1000]
    assert size_sweep(10, 40, 1.5) == [10, 15, 22, 33]


def test_sweep_refuses_factor_not_above_one() -> None:
    with pytest.raises(ValueError, match="must be > 1"):
        size_sweep(8, 64, 1)

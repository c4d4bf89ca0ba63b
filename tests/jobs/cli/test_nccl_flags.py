"""nccl-tests' flags on run, submit and scale: each is the override of the key it names, through the one
schema; a flag with no key here is answered in one line naming what to use, exit 2, nothing started."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from jobs.cli.main import main
from jobs.config.nccl_flags import FLAGS, Flag, refused_flags, taken_flags

NCCL_TESTS_LONGOPTS = shlex.split(
    "nthreads ngpus minbytes maxbytes stepbytes stepfactor iters agg_iters warmup_iters run_cycles parallel_init "
    "check op datatype root blocking stream_null timeout cudagraph report_cputime report_timestamps output_file "
    "average local_register cta_policy device_implementation device_cta_count memory unalign per_iter_timing "
    "per_iter_skip"
)
"""nccl-tests' src/common.cu `longopts` (NVIDIA/nccl-tests a0b82b2, July 2026), -h/--help left out."""


def _dry_run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["run", "--dry-run", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_every_flag_of_nccl_tests_option_table_is_taken_or_answered() -> None:
    assert sorted(flag.long.removeprefix("--") for flag in FLAGS) == sorted(NCCL_TESTS_LONGOPTS)
    assert len({flag.short for flag in FLAGS}) == len(FLAGS)


def test_the_flags_are_the_overrides_they_name(capsys: pytest.CaptureFixture[str]) -> None:
    flags = shlex.split("-b 16 -e 64K -f 4 -n 7 -w 1 -d half -o max -r -1 -c 0 -a 2 -C 1 -I 1 -T 30 -G 0")
    overrides = [
        "bench.min_bytes=16", "bench.max_bytes=64K", "bench.step_factor=4", "bench.iters=7", "bench.warmup_iters=1",
        "bench.dtype=float16", "bench.reduce_op=max", "bench.root=all", "bench.check=false", "bench.average=min",
        "bench.report_cputime=true", "bench.per_iteration=true", "timeouts.collective_s=30",
        "bench.cuda_graph_launches=0",
    ]  # fmt: skip
    by_flags, by_keys = _dry_run(flags, capsys), _dry_run(overrides, capsys)
    assert by_flags[0] == by_keys[0] == 0, by_flags[2] + by_keys[2]
    assert by_flags[1] == by_keys[1]
    assert "dtype: float16" in by_flags[1] and "root: all" in by_flags[1] and "average: min" in by_flags[1]


def test_the_long_spellings_are_nccl_tests_own(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _dry_run(
        shlex.split("--minbytes 1K --maxbytes 1M --stepbytes 256K --datatype bfloat16 --op prod --iters 3"), capsys
    )
    assert code == 0, err
    for line in ("min_bytes: 1024", "max_bytes: 1048576", "step_bytes: 262144", "dtype: bfloat16", "iters: 3"):
        assert f"  {line}\n" in out


def test_the_issue_s_first_command_is_taken_its_g_1_being_what_collbench_does(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")  # on GPUs: 8G is each GPU's to hold, not this host's
    code, out, err = _dry_run(shlex.split("--config local-gpu -b 8 -e 8G -f 2 -g 1"), capsys)
    assert code == 0, err
    assert "max_bytes: 8589934592" in out and "ranks: 2" in out


@pytest.mark.parametrize("flag", refused_flags(), ids=lambda flag: flag.short)
def test_a_flag_with_no_key_is_one_line_naming_what_to_use_and_nothing_starts(
    flag: Flag, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = tmp_path / "runs"
    assert main(["run", flag.short, "7", "bench.max_bytes=64K", f"output_dir={runs}"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    line = f"collbench: error: {flag.short} 7 ({flag.long}, nccl-tests' flag) is not taken here: {flag.refusal}"
    assert err.splitlines() == [line]
    assert not runs.exists(), "nothing was started"


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["-g", "8"], "set ranks=N on one node (--config local-gpu: one per visible GPU)"),
        (["-t", "2"], "no threads: set ranks=N"),
        (["-m", "4"], "set bench.iters"),
        (["-d", "all"], "-d all: collbench measures one type per run (bench.dtype); run once per type; allowed: int8,"),
        (["-d", "uint32"], "-d uint32: torch.distributed has no uint32 collectives"),
        (["-o", "all"], "-o all: collbench measures one reduction per run (bench.reduce_op)"),
        (["-o", "mulsum"], "allowed: sum, prod, min, max, avg (bench.reduce_op)"),
        (["-c", "5"], "-c 5: collbench checks each size once, after timing it; allowed: 0, 1 (bench.check)"),
        (["-a", "4"], "allowed: 0, 1, 2, 3 (bench.average)"),
        (["-n", "5", "bench.iters=10"], "-n and bench.iters=10 both set bench.iters; give one"),
        (["-f", "2", "-i", "1M"], "-f and -i: give one"),
        (["-n", "0"], "bench.iters: 0 must be >= 1"),  # the schema's own refusal, as for bench.iters=0
        (["-b", "1M", "-e", "1K"], "bench.min_bytes: 1048576 is larger than bench.max_bytes 1024"),
    ],
)
def test_a_value_collbench_cannot_run_is_one_line_naming_the_key(
    argv: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _dry_run(argv, capsys)
    assert code == 2 and out == ""
    assert len(err.splitlines()) == 1 and says in err, err


def test_submit_and_scale_take_them_and_answer_the_same(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["submit", "--config", "testcluster", "--dry-run", "-n", "9", "-g", "8"]) == 2
    assert "-g 8 (--ngpus, nccl-tests' flag) is not taken here" in capsys.readouterr().err
    assert main(["scale", "--config", "testcluster", "nodes=[1,2]", "-t", "4", "--dry-run"]) == 2
    assert "-t 4 (--nthreads, nccl-tests' flag) is not taken here" in capsys.readouterr().err
    assert main(["scale", "--config", "testcluster", "-n", "5", "nodes=[1,2]", "bench.iters=6", "--dry-run"]) == 2
    assert "-n and bench.iters=6 both set bench.iters" in capsys.readouterr().err


def test_scale_keeps_its_timeout_for_wait_and_takes_minus_t_for_nccl_tests(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["scale", "--help"])
    help_text = capsys.readouterr().out
    assert "-T S " in help_text and "--timeout S" in help_text and "wait: give up after S seconds" in help_text
    assert "-b SIZE, --minbytes SIZE" in help_text


@pytest.mark.parametrize("command", ["run", "submit"])
def test_help_shows_each_flag_with_its_key(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main([command, "--help"])
    help_text = capsys.readouterr().out
    assert "nccl-tests' flags:" in help_text
    assert "-d TYPE, --datatype TYPE" in help_text and "half=float16" in help_text
    assert all(flag.key in help_text for flag in taken_flags())
    assert "nccl-tests' flags with no key here:" in help_text and "--ngpus" not in help_text  # listed, not detailed
    assert " ".join(flag.short for flag in refused_flags()) in " ".join(help_text.replace(",", "").split())


def test_collbench_config_lists_the_flags_beside_their_keys(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config"]) == 0
    out = capsys.readouterr().out
    assert "  -b, --minbytes SIZE          bench.min_bytes\n" in out
    assert "  -T, --timeout S              timeouts.collective_s\n" in out
    assert "  -g, --ngpus                  each rank has one GPU of its own: set ranks=N" in out
    assert main(["config", "slurm"]) == 0
    assert "nccl-tests' flags" not in capsys.readouterr().out  # no flag sets a slurm key
    assert main(["config", "bench", "--format", "json"]) == 0
    keys = {key["key"]: key for key in json.loads(capsys.readouterr().out)}
    assert keys["bench.iters"]["nccl_tests_flag"] == "-n, --iters"
    assert keys["bench.timer"]["nccl_tests_flag"] is None


def test_a_misspelt_long_flag_is_answered_with_nccl_tests_spelling(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--maxbyte", "8"]) == 2
    line = capsys.readouterr().err.splitlines()[-1]
    assert line.endswith("--tolerance and nccl-tests' flags (collbench config lists them); did you mean --maxbytes?")
    assert " -b," not in line  # the command's own options are listed, the flags named once

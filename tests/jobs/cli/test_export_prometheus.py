"""`collbench export prometheus` against the real tools, from Debian's packages: `promtool check metrics`
(package prometheus) and a Pushgateway (package prometheus-pushgateway) started here on a free loopback
port with a temporary persistence file, read back over its HTTP API. The packages are installed when
missing (as root; outside root the tests skip, and in CI, CI=true, they fail instead), and the services
Debian's packages ship are stopped and disabled: only the tests' own Pushgateway runs, and only while they do."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jobs.config.fingerprint import config_fingerprint
from jobs.history.gather import gather
from jobs.inspect.report import assess
from jobs.rundir.layout import RunDir
from jobs.rundir.records.config import load_run_config
from tests.conftest import CommandResult, collbench
from tests.debian import need_tools
from tests.jobs.rundir.files import fingerprint
from tests.jobs.rundir.synthetic import isolate_run, sweep_run

PACKAGES = ("prometheus", "prometheus-pushgateway")
TOOLS = ("promtool", "prometheus-pushgateway")


def _stop_packaged_daemons() -> None:
    for service in PACKAGES:  # the packaged daemons: never left running by the suite
        if Path("/run/systemd/system").is_dir():
            subprocess.run(["systemctl", "disable", "--now", service], capture_output=True, check=False)
        elif Path(f"/etc/init.d/{service}").exists():
            subprocess.run([f"/etc/init.d/{service}", "stop"], capture_output=True, check=False)
            subprocess.run(["update-rc.d", service, "disable"], capture_output=True, check=False)


@pytest.fixture(scope="module")
def prometheus_tools() -> None:
    if all(shutil.which(tool) for tool in TOOLS):
        return
    need_tools(TOOLS, PACKAGES, "the Prometheus tests")
    _stop_packaged_daemons()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def pushgateway(prometheus_tools: None, tmp_path: Path) -> Iterator[str]:
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    log = (tmp_path / "pushgateway.log").open("w")
    daemon = subprocess.Popen(
        ["prometheus-pushgateway", f"--web.listen-address=127.0.0.1:{port}",
         f"--persistence.file={tmp_path / 'pushgateway.data'}"],
        stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"{url}/-/ready", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                pass
            assert daemon.poll() is None, (tmp_path / "pushgateway.log").read_text()
            assert time.monotonic() < deadline, "the Pushgateway did not get ready in 30 s"
            time.sleep(0.2)
        yield url
    finally:
        daemon.terminate()
        daemon.wait(timeout=10)
        log.close()


def _promtool(text: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True, check=False)


def _export(*args: str, cwd: Path) -> CommandResult:
    return collbench("export", "prometheus", *args, cwd=cwd, timeout=120)


def _samples(text: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            found.setdefault(line.split("{")[0].split(" ")[0], []).append(line)
    return found


def test_a_run_and_an_isolate_run_pass_promtool_without_a_complaint(prometheus_tools: None, tmp_path: Path) -> None:
    for run in (sweep_run(tmp_path / "sweep"), isolate_run(tmp_path / "isolate")):
        result = _export(str(run.path), cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        checked = _promtool(result.stdout)
        assert checked.returncode == 0 and checked.stdout == "" and checked.stderr == "", checked


def test_the_metrics_are_the_run_s_figures_in_base_units(prometheus_tools: None, tmp_path: Path) -> None:
    run = sweep_run(tmp_path)
    text = _export(str(run.path), "--cluster", "lab", "--config-label", "ar-2r", cwd=tmp_path).stdout
    samples = _samples(text)
    assert all(name.startswith("collbench_") for name in samples)
    assert not [name for name in samples if "gbs" in name or "percent" in name or "micro" in name], "base units"
    rows = assess(run).rows
    busbw = samples["collbench_bus_bandwidth_bytes_per_second"]
    assert len(busbw) == len(rows) == 2
    for row in rows:
        line = next(s for s in busbw if f'message_size_bytes="{row.size}"' in s)
        assert 'collective="AllReduce"' in line and 'cluster="lab"' in line and 'config="ar-2r"' in line
        assert float(line.rsplit(" ", 1)[1]) == pytest.approx(row.busbw * 1e9)
        time_line = next(s for s in samples["collbench_collective_time_seconds"] if f'_bytes="{row.size}"' in s)
        assert float(time_line.rsplit(" ", 1)[1]) == pytest.approx(row.time_us / 1e6)
    assert 'message_size="1.00KB"' in busbw[0] + busbw[1] and 'message_size="4.00KB"' in busbw[0] + busbw[1]
    assert samples["collbench_run_success"] == ['collbench_run_success{cluster="lab",config="ar-2r"} 1.0']
    assert samples["collbench_run_wrong_elements"][0].endswith(" 0.0")
    for name in ("collbench_run_start_time_seconds", "collbench_run_info", "collbench_wrong_elements"):
        assert name in samples, name
    info = samples["collbench_run_info"][0]
    assert f'run_id="{run.run_id}"' in info
    assert "run_id" not in "".join(busbw), "what changes every run is on run_info alone"


def test_the_config_label_ends_in_the_history_s_fingerprint(prometheus_tools: None, tmp_path: Path) -> None:
    run = sweep_run(tmp_path)
    cfg = load_run_config(run)
    recorded = gather(run).run["config"]  # what `collbench history list` shows in its config column
    assert recorded == config_fingerprint(cfg) and len(recorded) == 12
    label = f"{cfg.task}-{cfg.backend}-{cfg.nodes}n{cfg.world_size}r-{recorded}"
    (line,) = _samples(_export(str(run.path), cwd=tmp_path).stdout)["collbench_run_success"]
    assert f'config="{label}"' in line
    (line,) = _samples(_export(str(run.path), "--config-name", "ar-2r", cwd=tmp_path).stdout)["collbench_run_success"]
    assert 'config="ar-2r"' in line, "--config-name, the flag's first spelling, still works"


def test_isolate_gives_each_node_s_verdict_and_level(prometheus_tools: None, tmp_path: Path) -> None:
    run = isolate_run(tmp_path)
    samples = _samples(_export(str(run.path), cwd=tmp_path).stdout)
    verdicts = [s for s in samples["collbench_isolate_node_verdict"] if s.endswith(" 1.0")]
    hosts = {s.split('hostname="')[1].split('"')[0] for s in samples["collbench_isolate_node_verdict"]}
    assert len(verdicts) == len(hosts) >= 2, "exactly one state per node"
    assert any('verdict="healthy"' in s for s in verdicts)
    assert "collbench_isolate_level_bytes_per_second" in samples
    assert len(samples["collbench_isolate_node_level_ratio"]) == len(hosts)
    assert "collbench_bus_bandwidth_bytes_per_second" not in samples, "isolate's rounds are not sweep rows"


def test_the_textfile_is_written_whole_and_the_run_is_only_read(prometheus_tools: None, tmp_path: Path) -> None:
    run = sweep_run(tmp_path / "runs")
    before = fingerprint(run.path)
    folder = tmp_path / "textfile"
    folder.mkdir()
    target = folder / "collbench.prom"
    result = _export(str(run.path), "--textfile", str(target), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert [p.name for p in folder.iterdir()] == ["collbench.prom"], "no temporary file left beside it"
    checked = _promtool(target.read_text())
    assert checked.returncode == 0 and checked.stdout == checked.stderr == "", checked
    assert fingerprint(run.path) == before


def test_a_textfile_that_cannot_be_written_is_one_line_and_exit_2(tmp_path: Path) -> None:
    run = sweep_run(tmp_path / "runs")
    before = fingerprint(run.path)
    if os.geteuid() == 0:
        unwritable = Path("/proc")  # root passes permission bits; /proc takes no new file even from root
    else:
        unwritable = tmp_path / "locked"
        unwritable.mkdir(mode=0o500)
    cases = {
        str(unwritable / "collbench.prom"): f"cannot write in '{unwritable}'" if os.geteuid() == 0 else "not writable",
        str(tmp_path / "absent" / "collbench.prom"): "is not a directory",
        str(tmp_path / "collbench.txt"): "reads only *.prom files",
    }
    for target, said in cases.items():
        result = _export(str(run.path), "--textfile", target, cwd=tmp_path)
        assert result.returncode == 2, result
        assert len(result.stderr.splitlines()) == 1 and said in result.stderr and target in result.stderr, result
    assert not (tmp_path / "collbench.txt").exists()
    assert fingerprint(run.path) == before


def _groups(url: str) -> list[dict[str, Any]]:
    with urllib.request.urlopen(f"{url}/api/v1/metrics", timeout=10) as answer:
        body = json.load(answer)
    assert body["status"] == "success"
    groups: list[dict[str, Any]] = body["data"]
    return groups


def test_a_push_lands_in_one_group_per_cluster_and_config(pushgateway: str, tmp_path: Path) -> None:
    first, isolate = sweep_run(tmp_path / "a"), isolate_run(tmp_path / "b")
    again = sweep_run(tmp_path / "c", slower=2.0)  # the same config measured again: replaces the group
    for run in (first, isolate, again):
        result = _export(str(run.path), "--pushgateway", pushgateway, "--cluster", "lab", cwd=tmp_path)
        assert result.returncode == 0, result.stderr
    groups = _groups(pushgateway)
    keys = sorted((g["labels"]["job"], g["labels"]["cluster"], g["labels"]["config"]) for g in groups)
    assert len(keys) == 2 and all(key[:2] == ("collbench", "lab") for key in keys), keys
    assert all("hostname" not in g["labels"] and "instance" not in g["labels"] for g in groups), "never per node"
    sweep = next(g for g in groups if g["labels"]["config"].startswith("sweep-"))
    info = sweep["collbench_run_info"]["metrics"][0]["labels"]
    assert info["run_id"] == again.path.name, "the later push of the config replaced the earlier"
    busbw = sweep["collbench_bus_bandwidth_bytes_per_second"]["metrics"]
    expected = {str(row.size): row.busbw * 1e9 for row in assess(RunDir(again.path)).rows}
    assert {m["labels"]["message_size_bytes"]: float(m["value"]) for m in busbw} == pytest.approx(expected)
    node = next(g for g in groups if g["labels"]["config"].startswith("isolate-"))
    assert "collbench_isolate_node_verdict" in node


def test_a_pushgateway_that_refuses_or_does_not_answer_is_one_line_and_exit_2(pushgateway: str, tmp_path: Path) -> None:
    run = sweep_run(tmp_path / "runs")
    before = fingerprint(run.path)
    silent = f"http://127.0.0.1:{_free_port()}"
    cases = {
        silent: "does not answer",
        f"{pushgateway}/not-the-api": "refused the push: HTTP 404",
        "ftp://127.0.0.1/": "is not an http or https URL; allowed: http(s)://HOST[:PORT][/PATH]",
        "http://:9091": "names no host",
    }
    for url, said in cases.items():
        result = _export(str(run.path), "--pushgateway", url, "--timeout", "5", cwd=tmp_path)
        assert result.returncode == 2, result
        assert len(result.stderr.splitlines()) == 1 and said in result.stderr and url in result.stderr, result
    assert _groups(pushgateway) == [], "nothing reached the gateway"
    assert fingerprint(run.path) == before


FAST_RUN = ["ranks=2", "bench.ops=[all_reduce]", "bench.min_bytes=1K", "bench.max_bytes=4K", "bench.warmup_iters=1",
            "bench.iters=3", "history.record=false"]  # fmt: skip


def test_the_exports_section_pushes_and_writes_at_the_end_of_a_local_run(pushgateway: str, tmp_path: Path) -> None:
    textfile = tmp_path / "textfile" / "collbench.prom"
    textfile.parent.mkdir()
    result = collbench(
        "run", *FAST_RUN, "output_dir=runs", f"exports.pushgateway={pushgateway}",
        f"exports.prometheus_textfile={textfile}", cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "exports:" not in result.stderr
    run_id = result.run_dir().name
    written = _samples(textfile.read_text())
    assert f'run_id="{run_id}"' in written["collbench_run_info"][0]
    connect = float(written["collbench_setup_connect_slowest_seconds"][0].rsplit(" ", 1)[1])
    assert 0 < connect < 60, "every rank timed its first collective"
    with urllib.request.urlopen(f"{pushgateway}/api/v1/metrics", timeout=10) as answer:
        pushed = json.loads(answer.read())["data"]
    assert any(
        sample["labels"].get("run_id") == run_id
        for group in pushed
        for sample in group.get("collbench_run_info", {}).get("metrics", [])
    ), pushed


def test_an_export_that_fails_at_the_end_costs_one_line_and_not_the_run(tmp_path: Path) -> None:
    closed = f"http://127.0.0.1:{_free_port()}"
    result = collbench(
        "run", *FAST_RUN, "output_dir=runs", f"exports.pushgateway={closed}", "exports.timeout_s=2",
        f"exports.prometheus_textfile={tmp_path / 'missing' / 'collbench.prom'}", cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    run = result.run_dir()
    lines = [line for line in result.stderr.splitlines() if "exports:" in line]
    assert len(lines) == 2, result.stderr
    assert f"`collbench export prometheus {run} --textfile {tmp_path / 'missing' / 'collbench.prom'}`" in lines[0]
    assert "does not answer" in lines[1] and f"`collbench export prometheus {run} --pushgateway {closed}`" in lines[1]
    assert (run / "summary.json").is_file() and (run / "table.txt").is_file()


@pytest.mark.parametrize(
    ("override", "said"),
    [
        ("exports.pushgateway=pushgw:9091", "exports.pushgateway: 'pushgw:9091' is not an http or https URL"),
        ("exports.pushgateway=http://", "exports.pushgateway: 'http://' names no host"),
        ("exports.pushgateway=http://gw:99999", "exports.pushgateway: 'http://gw:99999' is not a URL"),
        ("exports.prometheus_textfile=/tmp/x.txt", "exports.prometheus_textfile: '/tmp/x.txt' does not end in .prom"),
        ("exports.timeout_s=0", "exports.timeout_s: 0 must be > 0"),
    ],
)
def test_bad_exports_values_are_refused_at_load_before_anything_runs(override: str, said: str, tmp_path: Path) -> None:
    from jobs.cli.main import main

    code = main(["run", "--config", "local", override, f"output_dir={tmp_path / 'runs'}"])
    assert code == 2 and not (tmp_path / "runs").exists()
    result = collbench("submit", "--config", "testcluster", override, "--dry-run", cwd=tmp_path)
    assert result.returncode == 2 and result.stderr.startswith(f"collbench: error: {said}"), result.stderr
    assert result.stderr.count("\n") == 1


def test_export_of_a_running_slurm_run_asks_slurm_nothing(tmp_path: Path) -> None:
    from jobs.rundir.records.rank import STATUS, RankState

    run = sweep_run(tmp_path / "runs", launcher="slurm")
    (run.path / "summary.json").unlink(missing_ok=True)
    status = STATUS.read(run.rank_status(1))
    status.state = RankState.RUNNING
    STATUS.write(run.rank_status(1), status)
    shim, calls = tmp_path / "shim", tmp_path / "slurm-calls.log"
    shim.mkdir()
    for command in ("squeue", "sacct", "scontrol", "sinfo", "sbatch", "scancel", "srun"):
        script = shim / command
        script.write_text(
            f'#!/bin/sh\necho "{command} $*" >> {calls}\necho "{command}: must not be called" >&2\nexit 99\n'
        )
        script.chmod(0o755)
    env = {**os.environ, "PATH": f"{shim}:{os.environ.get('PATH', '/usr/bin:/bin')}"}
    before = fingerprint(run.path)
    result = collbench("export", "prometheus", str(run.path), cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    assert "collbench_run_ended" in result.stdout and not calls.exists()
    assert fingerprint(run.path) == before

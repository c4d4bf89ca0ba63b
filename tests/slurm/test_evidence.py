"""srun's and slurmstepd's own lines, node states and partitions, as the test cluster printed them."""

import pytest

from slurm.evidence import parse_node_addresses, parse_node_states, read_step_messages, signal_of
from slurm.preflight import RequestRefused, check_request, parse_partitions, slurm_minutes
from slurm.runner import SlurmFailed
from slurm.settings import SlurmSettings

KILLED_RANK = """\
[rank0]: RuntimeError: [../gloo/transport/tcp/pair.cc:537] Read error [10.78.0.12]:60629: Connection reset by peer
srun: error: n2: task 3: Killed
srun: launch/slurm: _step_signal: Terminating StepId=1.0
slurmstepd-n1: error: *** STEP 1.0 ON n1 CANCELLED AT 2026-12-03T08:00:52 ***
srun: error: n2: task 2: Terminated
srun: error: n1: task 0: Terminated
srun: error: n1: task 1: Exited with exit code 1
srun: Force Terminated StepId=1.0
"""

REQUEUED = """\
slurmstepd-n1: error: *** STEP 3.0 ON n1 CANCELLED AT 2026-12-03T08:04:21 DUE TO JOB REQUEUE ***
srun: Job step aborted: Waiting up to 7 seconds for job step to finish.
srun: error: n2: tasks 2-3: Killed
srun: error: n1: tasks 0-1: Killed
"""


def test_the_task_srun_saw_die_first_is_the_cause_and_the_rest_are_its_teardown() -> None:
    evidence = read_step_messages(KILLED_RANK.splitlines())
    assert evidence.task_ends[3].before_teardown and evidence.task_ends[3].how == "Killed"
    assert [t for t, end in sorted(evidence.task_ends.items()) if not end.before_teardown] == [0, 1, 2]
    assert evidence.task_ends[1].how == "Exited with exit code 1"
    assert evidence.cancelled == "", "slurmstepd's STEP line after srun's own teardown is no cancel"
    assert evidence.srun_ended_step == "Terminating StepId=1.0"
    assert [end.task for end in evidence.bad_exits()] == [3]
    assert signal_of("Killed") == "SIGKILL" and signal_of("Segmentation fault (core dumped)") == "SIGSEGV"


CANCELLED = """\
srun: Job step aborted: Waiting up to 7 seconds for job step to finish.
srun: got SIGCONT
slurmstepd-n1: error: *** JOB 133 ON n1 CANCELLED AT 2026-12-04T17:33:13 ***
srun: forcing job termination
slurmstepd-n1: error: *** STEP 133.0 ON n1 CANCELLED AT 2026-12-04T17:33:13 ***
srun: error: n2: task 1: Exited with exit code 1
srun: launch/slurm: _step_signal: Terminating StepId=133.0
"""

TIME_LIMIT = """\
slurmstepd-n1: error: *** STEP 9.0 ON n1 CANCELLED AT 2026-12-04T18:00:01 DUE TO TIME LIMIT ***
slurmstepd-n1: error: *** JOB 9 ON n1 CANCELLED AT 2026-12-04T18:00:01 DUE TO TIME LIMIT ***
"""


def test_a_cancel_of_the_job_is_slurms_even_when_srun_ends_the_step_after_it() -> None:
    evidence = read_step_messages(CANCELLED.splitlines())
    assert evidence.cancelled == "cancelled at 2026-12-04T17:33:13"
    assert evidence.srun_ended_step == "" and evidence.bad_exits() == []
    limit = read_step_messages(TIME_LIMIT.splitlines())
    assert limit.cancelled == "cancelled at 2026-12-04T18:00:01 due to time limit"


def test_a_requeue_kills_every_task_after_the_teardown_began() -> None:
    evidence = read_step_messages(REQUEUED.splitlines())
    assert sorted(evidence.task_ends) == [0, 1, 2, 3]
    assert not any(end.before_teardown for end in evidence.task_ends.values())
    assert evidence.cancelled == "cancelled at 2026-12-03T08:04:21 due to job requeue"


def test_node_states_flag_down_and_not_responding() -> None:
    states = {s.node: s for s in parse_node_states("n1|idle|none\nn2|down*|Not responding\nn3|mixed*|none\n")}
    assert not states["n1"].unhealthy and states["n2"].unhealthy and states["n3"].unhealthy
    assert states["n2"].describe() == "down and not responding (Not responding)"
    line = "NodeName=n2 Arch=x86_64 CoresPerSocket=4 NodeAddr=10.78.0.12 NodeHostName=n2 Version=22.05.8"
    assert parse_node_addresses(line) == {"n2": "10.78.0.12"}


PARTITIONS = (
    "PartitionName=debug AllowGroups=ALL Default=YES MaxNodes=UNLIMITED MaxTime=UNLIMITED Nodes=n[1-3] "
    "State=UP TotalNodes=3\n"
    "PartitionName=short Default=NO MaxNodes=2 MaxTime=00:30:00 Nodes=n[1-3] State=UP TotalNodes=3\n"
)


class Answers:
    def __init__(self, partitions: str = PARTITIONS, accounts: str = "root\nml\n", qos: str = "normal\n") -> None:
        self.out = {"partition": partitions, "account": accounts, "qos": qos}

    def __call__(self, argv: list[str]) -> str:
        kind = next(word for word in ("partition", "account", "qos") if word in argv)
        return self.out[kind]


def test_partitions_and_slurm_times() -> None:
    debug, short = parse_partitions(PARTITIONS)
    assert (debug.name, debug.nodes, debug.max_nodes, debug.max_time_min, debug.default) == (
        "debug", ["n1", "n2", "n3"], None, None, True
    )  # fmt: skip
    assert (short.max_nodes, short.max_time_min) == (2, 30.0)
    assert [slurm_minutes(t) for t in ("30", "30:30", "4:00:00", "1-12:00:00", "INFINITE")] == [
        30.0, 30.5, 240.0, 2160.0, None
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("settings", "nodes", "time_min", "message"),
    [
        ({}, 4, 10, "nodes: 4 is more than partition 'debug' can ever hold (3 node(s) usable: n[1-3]); allowed: 1-3"),
        ({"partition": "short"}, 3, 10, "nodes: 3 is more than partition 'short' can ever hold"),
        ({"partition": "short"}, 1, 45, "timeouts.job_min: 45 is beyond the MaxTime of partition 'short', 30 min"),
        ({"partition": "gpu"}, 1, 10, "slurm.partition: 'gpu' is not a partition of this cluster; partitions: debug"),
        ({"exclude": "n[2-3]"}, 2, 10, "nodes: 2 is more than partition 'debug' can ever hold (1 node(s) usable: n1)"),
        ({"nodelist": "n[3-4]"}, 2, 10, "slurm.nodelist: n4 not in partition 'debug'"),
        ({"account": "physics"}, 1, 10, "slurm.account: 'physics' is not one Slurm knows; known accounts: ml, root"),
        ({"qos": "turbo"}, 1, 10, "slurm.qos: 'turbo' is not one Slurm knows; known qoss: normal"),
    ],
)
def test_a_request_beyond_the_cluster_is_refused_with_what_is_allowed(
    settings: dict[str, str], nodes: int, time_min: float, message: str
) -> None:
    with pytest.raises(RequestRefused) as refused:
        check_request(SlurmSettings(**settings), nodes, time_min, Answers())
    assert str(refused.value).startswith(message)


def test_a_request_the_cluster_can_run_passes() -> None:
    check_request(SlurmSettings(partition="short", account="ml", qos="normal"), 2, 30, Answers())
    check_request(SlurmSettings(), 3, 10_000, Answers())


class WithoutAccounting(Answers):
    def __call__(self, argv: list[str]) -> str:
        if argv[0] == "sacctmgr":
            raise SlurmFailed(argv, 1, "", "sacctmgr: error: Problem talking to the database: Connection refused")
        return super().__call__(argv)


def test_an_account_is_left_to_sbatch_when_accounting_cannot_say() -> None:
    check_request(SlurmSettings(account="physics", qos="turbo"), 1, 10, WithoutAccounting())
    with pytest.raises(RequestRefused, match="nodes: 4 is more than partition 'debug'"):
        check_request(SlurmSettings(account="physics"), 4, 10, WithoutAccounting())

"""What squeue and sacct say of many jobs at once, parsed (slurm.queue)."""

from slurm.queue import Source, parse_sacct, parse_squeue, sacct_argv, squeue_argv, with_accounted_end


def test_one_squeue_and_one_sacct_name_every_job() -> None:
    assert squeue_argv(["7", "8", "9"]) == ["squeue", "-h", "-t", "all", "-j", "7,8,9", "-o", "%i|%T|%r|%N"]
    assert sacct_argv(["7", "9"])[:6] == ["sacct", "-X", "-n", "-P", "-j", "7,9"]


def test_squeue_lines_give_state_with_pending_reason_and_nodes() -> None:
    found = parse_squeue("7|RUNNING|None|n[1-2]\n8|PENDING|Resources|\n9|PENDING|None|\nbroken line\n")
    assert (found["7"].state, found["7"].nodes, found["7"].source) == ("RUNNING", "n[1-2]", Source.SQUEUE)
    assert found["8"].state == "PENDING (Resources)" and found["8"].nodes == ""
    assert found["9"].state == "PENDING"
    assert sorted(found) == ["7", "8", "9"]


def test_sacct_lines_give_the_last_state_of_each_job() -> None:
    found = parse_sacct("7|CANCELLED by 0|n1\n8|PENDING|None assigned\n8|NODE_FAIL|n[2-3]\n")
    assert found["7"].state == "CANCELLED by 0"
    assert (found["8"].state, found["8"].nodes, found["8"].source) == ("NODE_FAIL", "n[2-3]", Source.SACCT)


def test_a_completing_job_takes_the_end_accounting_recorded_and_only_an_end() -> None:
    queued = parse_squeue("7|COMPLETING|NodeDown|n[1-3]\n")["7"]
    accounted = parse_sacct("7|NODE_FAIL|n[1-3]\n8|RUNNING|n4\n")
    ended = with_accounted_end(queued, accounted["7"])
    assert (ended.state, ended.nodes, ended.source) == ("COMPLETING (NODE_FAIL)", "n[1-3]", Source.SQUEUE)
    assert with_accounted_end(queued, None) == queued, "accounting has not heard of it yet"
    assert with_accounted_end(queued, parse_sacct("7|RUNNING|n[1-3]\n")["7"]) == queued, "accounting lags"

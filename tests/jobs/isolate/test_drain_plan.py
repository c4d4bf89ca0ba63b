"""The drain and resume steps a verdict makes against the nodes' states: collbench drains what it named,
resumes only what it drained itself once a pass as wide clears it, and leaves anybody else's drain alone."""

from __future__ import annotations

from jobs.isolate.drain_plan import plan_steps, verdict_drains
from jobs.isolate.reasons import CODES, REASON_CODES, Finding, drain_reason, own_drain
from slurm.evidence import NodeState, parse_node_states

IDLE = NodeState("n1", "idle", "")


def test_every_code_is_documented_and_only_slow_links_and_checks_that_could_not_run_never_drain() -> None:
    assert set(REASON_CODES) == set(CODES)
    assert [code for code in CODES if not REASON_CODES[code].drains] == ["slow_link", "not_run"]


def test_a_reason_of_our_own_reads_back_and_anybody_elses_does_not() -> None:
    reason = drain_reason(("slow_node", "slow_rail"), "check", "20261206-0900-ab", 'busbw 0.42 of "10" GB/s')
    assert reason == "collbench:slow_node,slow_rail by check run=20261206-0900-ab busbw 0.42 of '10' GB/s"
    own = own_drain(reason)
    assert own is not None and own.codes == ("slow_node", "slow_rail") and own.task == "check"
    assert own.run_id == "20261206-0900-ab"
    for other in ("bad dimm", "Not responding", "collbench said so", "collbench:bogus by check run=x", ""):
        assert own_drain(other) is None, other
    assert len(drain_reason(("slow_node",), "isolate", "r", "x" * 500)) == 200


def test_a_named_node_is_drained_and_a_slow_link_drains_nobody() -> None:
    findings = [Finding("n1", "slow_node", "busbw 0.4"), Finding("n2-n3", "slow_link", "busbw 0.5")]
    [step] = plan_steps(findings, ["n2", "n3"], "check", "R", {"n1": IDLE})
    assert step.host == "n1" and step.action == "drain" and step.reason.startswith("collbench:slow_node by check run=R")


def test_someone_elses_drain_is_never_touched_neither_to_drain_nor_to_resume() -> None:
    theirs = NodeState("n1", "drained", "bad dimm")
    [named] = plan_steps([Finding("n1", "slow_node", "x")], [], "check", "R", {"n1": theirs})
    [passed] = plan_steps([], ["n1"], "isolate", "R", {"n1": theirs})
    assert named.action == passed.action == "leave" and "someone else" in named.why and "bad dimm" in passed.why


def test_a_pass_resumes_only_what_collbench_drained_for_what_it_can_clear() -> None:
    by_check = NodeState("n1", "drained", drain_reason(("slow_rail",), "check", "OLD", "rail 1"))
    by_node_check = NodeState("n1", "drained", drain_reason(("node_stopped",), "check-node", "OLD", "hung"))
    [narrow] = plan_steps([], ["n1"], "check-node", "R", {"n1": by_check})
    assert narrow.action == "leave" and "does not clear" in narrow.why, "a node-local pass sees no NIC"
    [wide] = plan_steps([], ["n1"], "check", "R", {"n1": by_check})
    [local] = plan_steps([], ["n1"], "check-node", "R", {"n1": by_node_check})
    assert wide.action == local.action == "resume" and wide.codes == ("slow_rail",)
    assert plan_steps([], ["n1"], "check", "R", {"n1": by_check}, resume=False) == []
    assert plan_steps([], ["n1"], "check", "R", {"n1": IDLE}) == [], "a node in service: nothing to do"


def test_a_node_drained_by_collbench_for_one_code_gets_a_new_code_added_not_a_second_drain() -> None:
    before = NodeState("n1", "drained", drain_reason(("slow_rail",), "check", "OLD", "rail 1"))
    [again] = plan_steps([Finding("n1", "slow_rail", "rail 1")], [], "check", "R", {"n1": before})
    [more] = plan_steps([Finding("n1", "node_stopped", "hung")], [], "isolate", "R", {"n1": before})
    assert again.action == "leave" and more.action == "drain" and more.codes == ("slow_rail", "node_stopped")


def test_a_node_slurm_does_not_know_is_left_and_said() -> None:
    [step] = plan_steps([Finding("ghost", "slow_node", "x")], [], "check", "R", {})
    assert step.action == "leave" and "does not know" in step.why


def test_the_readers_lines_need_no_states_and_quote_the_reason_for_a_shell() -> None:
    lines = verdict_drains([Finding("n1", "slow_node", "busbw 0.4"), Finding("a-b", "slow_link", "x")], "isolate", "R")
    assert lines == ["scontrol update NodeName=n1 State=DRAIN 'Reason=collbench:slow_node by isolate run=R busbw 0.4'"]


def test_sinfo_lines_give_each_node_once_with_its_state_and_reason() -> None:
    text = "n1|idle|none\nn1|idle|none\nn3|drained*|collbench:slow_node by check run=R x|y\nn4|draining|\n"
    states = {state.node: state for state in parse_node_states(text)}
    assert states["n1"] == NodeState("n1", "idle", "") and not states["n1"].out_of_service
    assert states["n3"].out_of_service and states["n3"].words == "drained" and states["n3"].reason.endswith("x|y")
    assert states["n4"].out_of_service and states["n4"].reason == ""

"""Which rank a hang under NCCL waited for, from torch's Flight Recorder dumps.

Under NCCL a collective that times out raises no Python exception: ProcessGroupNCCL's watchdog
(TORCH_NCCL_ASYNC_ERROR_HANDLING) tears the process down, so no rank records that it gave up. With
TORCH_NCCL_TRACE_BUFFER_SIZE > 0 and TORCH_NCCL_DUMP_ON_TIMEOUT=1 the rank that times out first dumps its
trace buffer and signals the others through the store to dump theirs, each to TORCH_NCCL_DEBUG_INFO_TEMP_FILE
+ its rank (jobs.runtime.heartbeat sets the prefix to logs/nccl-trace-rank-). A dump is a pickled dict
(FlightRecorder.cpp, NCCLTraceBuffer::dump): version, pg_config {group name: {name, desc, ranks}},
pg_status, entries [{pg_id, process_group: (name, desc), collective_seq_id, profiling_name, state, ...}].

The missing rank is the member of a group whose last collective is behind the other members': they
entered collective N of the group and are still in it (its entry not completed); it never did. A member with
a dump but no entry of the group has not entered it. A group whose members ahead completed their last
collective is not waiting on anyone: its members' ring buffers (TORCH_NCCL_TRACE_BUFFER_SIZE entries) may
simply have kept different stretches of its past.
A dump is pickle, so it is read by an unpickler that builds plain values only and refuses every class or
function a pickle may name: a run directory is not trusted code.
"""

from __future__ import annotations

import ast
import io
import pickle
from dataclasses import dataclass
from typing import Any

from jobs.rundir.layout import NCCL_TRACE_PREFIX, RunDir

TRACE_PREFIX = NCCL_TRACE_PREFIX
"""The dump's file name before its rank, in the run's logs/ (torch appends the rank)."""
MAX_DUMP_BYTES = 256 << 20


class _PlainValues(pickle.Unpickler):
    """dict, list, tuple, str, bytes, numbers, bool and None: what a Flight Recorder dump holds; any class or
    function the pickle names is refused rather than imported."""

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"refused {module}.{name}: a Flight Recorder dump holds plain values only")


def load_plain(data: bytes) -> Any:
    return _PlainValues(io.BytesIO(data)).load()


@dataclass(frozen=True, slots=True)
class RankTrace:
    rank: int
    last: dict[str, int]
    """Group name -> the last collective sequence number this rank entered in it."""
    names: dict[tuple[str, int], str]
    """(group name, sequence number) -> the collective's name ('nccl:all_reduce')."""
    states: dict[tuple[str, int], str]
    """(group name, sequence number) -> its state in this rank's buffer: scheduled, started, completed."""
    members: dict[str, list[int]]
    """Group name -> its global ranks, as this rank's dump lists them."""
    descs: dict[str, str]


def read_traces(run: RunDir) -> dict[int, RankTrace]:
    """Every rank's dump that reads as one; a dump that does not (cut short, refused) is left out."""
    traces = {}
    for path in sorted(run.logs_dir.glob(f"{TRACE_PREFIX}*")):
        rank_text = path.name[len(TRACE_PREFIX) :]
        if not rank_text.isdigit() or path.stat().st_size > MAX_DUMP_BYTES:
            continue
        try:
            dump = load_plain(path.read_bytes())
        except (pickle.UnpicklingError, EOFError, ValueError, TypeError, IndexError, OSError):
            continue
        if isinstance(dump, dict):
            traces[int(rank_text)] = rank_trace(int(rank_text), dump)
    return traces


def rank_trace(rank: int, dump: dict[str, Any]) -> RankTrace:
    last: dict[str, int] = {}
    names: dict[tuple[str, int], str] = {}
    states: dict[tuple[str, int], str] = {}
    for entry in dump.get("entries") or []:
        if not isinstance(entry, dict) or entry.get("is_p2p"):
            continue
        group, seq = _group_name(entry), int(entry.get("collective_seq_id") or 0)
        last[group] = max(last.get(group, 0), seq)
        names[(group, seq)] = str(entry.get("profiling_name", ""))
        states[(group, seq)] = str(entry.get("state", ""))
    members: dict[str, list[int]] = {}
    descs: dict[str, str] = {}
    for name, config in (dump.get("pg_config") or {}).items():
        if isinstance(config, dict):
            members[str(name)] = _ranks(config.get("ranks", ""))
            descs[str(name)] = str(config.get("desc", ""))
    return RankTrace(rank, last, names, states, members, descs)


def _group_name(entry: dict[str, Any]) -> str:
    group = entry.get("process_group")
    return str(group[0]) if isinstance(group, (tuple, list)) and group else str(entry.get("pg_id", ""))


def _ranks(text: Any) -> list[int]:
    try:
        ranks = ast.literal_eval(str(text))
    except (ValueError, SyntaxError):
        return []
    return [int(rank) for rank in ranks] if isinstance(ranks, (list, tuple)) else []


@dataclass(frozen=True, slots=True)
class Lagging:
    """A group whose members are not all at the same collective."""

    group: str
    desc: str
    collective: int
    """The last collective the members ahead entered, and waited in."""
    what: str
    """Its name ('nccl:all_reduce'), '' when the dumps do not say."""
    behind: dict[int, int]
    """Rank -> the last collective it entered in the group: the missing ones."""
    ahead: list[int]


def lagging_groups(traces: dict[int, RankTrace], world_size: int) -> list[Lagging]:
    """Every group whose members ahead wait in a collective that others never entered, by group name; none
    where the dumps agree, where nobody waits (or there are no dumps)."""
    groups = {
        name: (trace.members[name], trace.descs.get(name, "")) for trace in traces.values() for name in trace.members
    }
    found = []
    for name, (members, desc) in sorted(groups.items()):
        ranks = members or list(range(world_size))
        seqs = {rank: traces[rank].last.get(name, 0) for rank in ranks if rank in traces}
        top = max(seqs.values(), default=0)
        behind = {rank: seq for rank, seq in sorted(seqs.items()) if seq < top}
        if not behind:
            continue
        ahead = sorted(rank for rank, seq in seqs.items() if seq == top)
        if all(traces[rank].states.get((name, top)) == "completed" for rank in ahead):
            continue  # nobody waits in it: the buffers kept different stretches of a finished group's past
        what = next((traces[rank].names[(name, top)] for rank in ahead if (name, top) in traces[rank].names), "")
        found.append(Lagging(name, desc, top, what, behind, ahead))
    return found

"""The history at the fabric's own grain (isolate.json format 3), on SQLite and PostgreSQL alike: each
(node, rail) a row beside the node's, bad for the slow rail the verdict named; a slow switch link a row of its
own, with the hosts behind it; `history node` naming the rail and the switch link a host is behind, `history
switch` a switch's record; an isolate.json of format 2 still recorded; migration 0003 up from a 0002 history
holding rows, and down again."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config as AlembicConfig
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import MetaData, func, insert, inspect, select

from jobs.history import schema
from jobs.history.database import MIGRATIONS, History, make_engine, open_history, parse_url
from jobs.history.gather import RunRecord, gather
from jobs.history.ingest import record_run
from jobs.history.node_record import node_record
from jobs.history.switch_record import switch_record
from jobs.inspect.isolate_verdict import assess_isolate, verdict_record
from jobs.inspect.report import assess
from jobs.rundir.records.isolate import ISOLATE_VERDICT, LinkVerdict, NodeVerdict, SwitchVerdict
from tests.conftest import collbench
from tests.jobs.history.fabric_runs import across, rail_isolate_run
from tests.jobs.rundir import synthetic

HEAD = ScriptDirectory(str(MIGRATIONS)).get_current_head()

Row = dict[str, Any]


def _rows(history: History, table: str, run_id: str) -> list[Row]:
    t = schema.metadata.tables[table]
    query = select(t).join(schema.runs).where(schema.runs.c.run_id == run_id)
    with history.engine.connect() as connection:
        return [dict(r) for r in connection.execute(query).mappings()]


def test_a_bad_rail_and_a_slow_switch_link_are_recorded_at_their_grain(history_url: str, tmp_path: Path) -> None:
    rail = rail_isolate_run(tmp_path / "rail", lambda pair, r: r == 1 and 2 in pair)  # n3's rail 1
    link = rail_isolate_run(tmp_path / "link", lambda pair, r: r == 1 and across(pair))  # s1-s2 on rail 1
    history = open_history(history_url)
    assert record_run(history, rail) and record_run(history, link)

    nodes = _rows(history, "isolate_nodes", rail.run_id)
    assert sorted(n["host"] for n in nodes if n["rail"] is None) == [f"n{i}" for i in range(1, 7)]
    assert not [n for n in nodes if n["rail"] is None and n["bad"]], "the node is not bad: one rail of it is"
    units = {(n["host"], n["rail"]): n for n in nodes if n["rail"] is not None}
    assert len(units) == 12 and {n["nic"] for n in units.values()} == {"mlx5_0", "mlx5_1"}
    assert [key for key, n in units.items() if n["bad"]] == [("n3", 1)]
    assert units[("n3", 1)]["nic"] == "mlx5_1" and units[("n3", 1)]["ratio"] < 0.1
    assert _rows(history, "isolate_switches", rail.run_id) == [] == _rows(history, "isolate_links", rail.run_id)

    (switch,) = _rows(history, "isolate_switches", link.run_id)
    assert {k: switch[k] for k in ("switches", "switch_a", "switch_b", "rail", "side_a", "side_b")} == {
        "switches": "s1-s2", "switch_a": "s1", "switch_b": "s2", "rail": 1, "side_a": "n[1-3]", "side_b": "n[4-6]",
    }  # fmt: skip
    assert switch["slow"] == switch["measurements"] >= 9 and switch["ratio"] < 0.1
    assert not [n for n in _rows(history, "isolate_nodes", link.run_id) if n["bad"]], "no node drained for a link"
    assert [(f["host"], f["code"]) for f in _rows(history, "findings", rail.run_id)] == [("n3", "slow_rail")]
    assert [(f["host"], f["code"]) for f in _rows(history, "findings", link.run_id)] == [("s1-s2", "slow_link")]

    n3 = node_record(history, "n3")
    assert [(e.run_id, e.what, e.rail) for e in n3] == [
        (rail.run_id, "isolate rail", 1), (link.run_id, "behind switch link", 1),
    ]  # fmt: skip
    assert (
        n3[0].detail.startswith("isolate rail 1 (mlx5_1): bad rail, median busbw ")
        and "0.02 of the level" in n3[0].detail
    )
    assert n3[1].detail.startswith("isolate: behind slow switch link s1-s2 on rail 1, busbw ")
    assert n3[1].detail.endswith("not a fault of the node")
    (n5,) = node_record(history, "n5")
    assert (n5.run_id, n5.what) == (link.run_id, "behind switch link")

    for name in ("s1", "s2", "s1-s2"):
        (event,) = switch_record(history, name)
        assert (event.run_id, event.link, event.rail, event.side_a, event.side_b) == (
            link.run_id, "s1-s2", 1, "n[1-3]", "n[4-6]",
        )  # fmt: skip
    assert switch_record(history, "s3") == [] == switch_record(history, "s1 uplink")


def test_history_node_and_switch_as_a_user_reads_them(history_url: str, tmp_path: Path) -> None:
    rail = rail_isolate_run(tmp_path / "rail", lambda pair, r: r == 1 and 2 in pair)
    link = rail_isolate_run(tmp_path / "link", lambda pair, r: r == 1 and across(pair))
    done = collbench("history", "ingest", "--db", history_url, str(tmp_path / "rail"), str(tmp_path / "link"),
                     cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0 and "recorded 2 run(s)" in done.stdout, done

    text = collbench("history", "node", "n3", "--db", history_url, cwd=tmp_path).stdout.splitlines()
    assert text[0].split() == ["run_id", "started", "what", "detail", "rail"]
    assert rail.run_id in text[1] and "isolate rail 1 (mlx5_1): bad rail" in text[1] and text[1].endswith(" 1")
    assert link.run_id in text[2] and "behind slow switch link s1-s2 on rail 1" in text[2]
    plain = json.loads(collbench("history", "node", "n3", "--db", history_url, "--format", "json", cwd=tmp_path).stdout)
    assert plain["view"] == "node" and [(r["what"], r["rail"]) for r in plain["rows"]] == [
        ("isolate rail", 1), ("behind switch link", 1),
    ]  # fmt: skip

    text = collbench("history", "switch", "s2", "--db", history_url, cwd=tmp_path).stdout.splitlines()
    assert text[0].split() == [
        "run_id", "started", "link", "rail", "busbw", "ratio", "slow", "measurements", "side_a", "side_b",
    ]  # fmt: skip
    assert len(text) == 2 and link.run_id in text[1] and text[1].rstrip().endswith("n[1-3]  n[4-6]")
    plain = json.loads(
        collbench("history", "switch", "s1", "--db", history_url, "--format", "json", cwd=tmp_path).stdout
    )
    (row,) = plain["rows"]
    assert plain["view"] == "switch" and (row["link"], row["rail"]) == ("s1-s2", 1) and row["slow"] >= 9
    none = collbench("history", "switch", "s9", "--db", history_url, cwd=tmp_path).stdout
    assert none.strip() == "# no verdict in the history names a slow link at s9"


def test_an_uplink_and_a_cut_on_every_rail_and_a_link_on_one_rail(history_url: str, tmp_path: Path) -> None:
    run = synthetic.isolate_run(tmp_path)  # node grain: its isolate.json is written here, by hand, at three
    record = gather(run)
    assert {n["rail"] for n in record.children["isolate_nodes"]} == {None} and record.children["isolate_switches"] == []
    verdict = verdict_record(assess_isolate(run, assess(run)))
    verdict.rails, verdict.nics = [0, 1], ["ib0", ""]
    verdict.bad_links = [LinkVerdict(["n2", "n3"], 0.5, 0.3, rail=1)]
    verdict.units = [NodeVerdict("n1", 0, 3, 0, 20.0, 1.0, rail=r) for r in (0, 1)]
    verdict.switch_faults = [
        SwitchVerdict(["s1"], -1, [["n1", "n2"], ["n3", "n4"]], 4, 4, 0.4, 0.2, "s1 uplink on every rail: ..."),
        SwitchVerdict([], -1, [["n1", "n2"], ["n3", "n4"]], 4, 4, 0.4, 0.2, "n[1-2] | n[3-4] on every rail: ..."),
    ]
    ISOLATE_VERDICT.write(run.isolate_verdict, verdict)
    history = open_history(history_url)
    assert record_run(history, run)
    switches = sorted(
        (s["switches"], s["switch_a"], s["switch_b"], s["rail"]) for s in _rows(history, "isolate_switches", run.run_id)
    )
    assert switches == [("", "", "", None), ("s1 uplink", "s1", "", None)]
    units = [n for n in _rows(history, "isolate_nodes", run.run_id) if n["rail"] is not None]
    assert sorted((n["rail"], n["nic"]) for n in units) == [(0, "ib0"), (1, "")]
    (uplink,) = switch_record(history, "s1")
    assert (uplink.link, uplink.rail, uplink.side_a) == ("s1 uplink", None, "n[1-2]")
    assert [e.link for e in switch_record(history, "s1 uplink")] == ["s1 uplink"]
    events = {e.detail for e in node_record(history, "n3")}
    assert "isolate: bad link n2-n3 on rail 1, busbw 0.50 GB/s (0.30 of the level)" in events
    assert any(d.startswith("isolate: behind slow switch link s1 uplink on every rail, ") for d in events)
    assert any(d.startswith("isolate: on one side of a cut n[1-2] | n[3-4] on every rail (no topology") for d in events)


FORMAT_3_ONLY = ("rails", "nics", "leaves", "topology", "units", "bad_rails", "switch_faults")


def test_an_isolate_json_of_format_2_is_still_recorded(history_url: str, tmp_path: Path) -> None:
    run = synthetic.isolate_run(tmp_path)  # n2-n3 slow
    plain = msgspec.to_builtins(verdict_record(assess_isolate(run, assess(run))))
    for name in FORMAT_3_ONLY:
        del plain[name]
    for link in plain["bad_links"]:
        del link["rail"]
    for node in plain["nodes"]:
        del node["rail"]
    plain["version"] = 2
    run.isolate_verdict.write_text(json.dumps(plain, indent=1))
    history = open_history(history_url)
    assert record_run(history, run)
    assert {n["rail"] for n in _rows(history, "isolate_nodes", run.run_id)} == {None}
    (link,) = _rows(history, "isolate_links", run.run_id)
    assert (link["host_a"], link["host_b"], link["rail"]) == ("n2", "n3", None)
    assert _rows(history, "isolate_switches", run.run_id) == []
    (event,) = node_record(history, "n2")
    assert event.what == "isolate link" and event.rail is None and event.detail.startswith("isolate: bad link n2-n3, ")


def alembic_to(history_url: str, revision: str, down: bool = False) -> None:
    """The history's schema migrated up (or `down`) to `revision`, as an older collbench left it."""
    engine = make_engine(parse_url(history_url))
    try:
        with engine.begin() as connection:
            config = AlembicConfig()
            config.set_main_option("script_location", str(MIGRATIONS))
            config.attributes["connection"] = connection
            (command.downgrade if down else command.upgrade)(config, revision)
    finally:
        engine.dispose()


def insert_as_of_old(history_url: str, record: RunRecord) -> None:
    """Record a gathered run as a collbench of the history's older revision did: its tables and columns only."""
    engine = make_engine(parse_url(history_url))
    try:
        with engine.begin() as connection:
            tables = MetaData()
            tables.reflect(connection)
            runs = tables.tables["runs"]
            row = {k: v for k, v in record.run.items() if k in runs.c}
            key = connection.execute(insert(runs).returning(runs.c.id), [row]).scalar_one()
            for name, rows in record.children.items():
                if rows and name in tables.tables:
                    table = tables.tables[name]
                    kept = [{k: v for k, v in row.items() if k in table.c} | {"run": key} for row in rows]
                    connection.execute(insert(table), kept)
    finally:
        engine.dispose()


def columns_of(history_url: str, table: str) -> list[str]:
    """The table's columns as the database has them; none when it has no such table."""
    engine = make_engine(parse_url(history_url))
    try:
        with engine.connect() as connection:
            found = inspect(connection)
            return [c["name"] for c in found.get_columns(table)] if found.has_table(table) else []
    finally:
        engine.dispose()


def test_migration_0003_upgrades_a_history_holding_rows_and_downgrades_cleanly(
    history_url: str, tmp_path: Path
) -> None:
    old = synthetic.isolate_run(tmp_path / "old")  # recorded by a collbench of revision 0002
    alembic_to(history_url, "0002")
    assert "rail" not in columns_of(history_url, "isolate_nodes") and columns_of(history_url, "isolate_switches") == []
    insert_as_of_old(history_url, gather(old))

    history = open_history(history_url)  # upgrades to head, in place
    with history.engine.connect() as connection:
        assert MigrationContext.configure(connection).get_current_revision() == HEAD
        assert compare_metadata(MigrationContext.configure(connection), schema.metadata) == []
    nodes = _rows(history, "isolate_nodes", old.run_id)
    assert len(nodes) == 4 and {(n["rail"], n["nic"]) for n in nodes} == {(None, "")}
    (event,) = node_record(history, "n3")
    assert event.what == "isolate link" and event.rail is None
    new = rail_isolate_run(tmp_path / "new", lambda pair, r: r == 1 and 2 in pair)
    assert record_run(history, new)
    history.close()

    alembic_to(history_url, "0002", down=True)
    assert columns_of(history_url, "isolate_switches") == []
    assert not {"rail", "nic"} & set(columns_of(history_url, "isolate_nodes"))
    assert "rail" not in columns_of(history_url, "isolate_links")
    engine = make_engine(parse_url(history_url))
    with engine.connect() as connection:
        tables = MetaData()
        tables.reflect(connection)
        count = select(func.count()).select_from(tables.tables["isolate_nodes"])
        assert connection.execute(count).scalar_one() == 4 + 6, "the node rows of both runs stay, no rail row"
    engine.dispose()

    history = open_history(history_url)  # and up again
    assert [e.what for e in node_record(history, "n3")] == ["isolate link"]
    history.close()

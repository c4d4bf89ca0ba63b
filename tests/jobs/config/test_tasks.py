"""The kind of run in the config (jobs.config.tasks): one name each, task isolate in isolate.mode check read as
check, a plan mode that cannot run the kind refused in one line."""

from __future__ import annotations

import pytest

from jobs.config.model import ConfigError, load_config
from jobs.config.tasks import TASK_NAMES, TASKS, kind_of

SLURM = ["launcher=slurm", "nodes=4"]


def test_the_registry_holds_every_kind_under_its_own_name() -> None:
    assert tuple(TASKS) == TASK_NAMES == ("sweep", "isolate", "check", "check-node")
    assert all(spec.name == name for name, spec in TASKS.items())


def test_task_isolate_in_plan_mode_check_is_a_check() -> None:
    assert load_config("testcluster", ["task=isolate", "isolate.mode=check", *SLURM]).task == "check"
    assert load_config("testcluster", ["task=isolate", "isolate.mode=pairs", *SLURM]).task == "isolate"
    assert [kind_of(name, "check") for name in TASK_NAMES] == ["sweep", "check", "check", "check-node"]


def test_task_check_in_another_plan_mode_is_refused_in_one_line() -> None:
    with pytest.raises(ConfigError, match=r"^isolate.mode: pairs does not plan task check; allowed: check$"):
        load_config("testcluster", ["task=check", "isolate.mode=pairs", *SLURM])


@pytest.mark.parametrize("task", ["isolate", "check"])
def test_a_task_in_rounds_needs_slurm(task: str) -> None:
    with pytest.raises(ConfigError, match=rf"^task: {task} needs launcher=slurm or slurm-step"):
        load_config("local", [f"task={task}"])

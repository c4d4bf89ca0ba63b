"""Every kind of run names rank code that exists (jobs.runtime.rank_tasks), the rank job's one dispatch."""

from __future__ import annotations

import pytest

from jobs.config.tasks import TASK_NAMES, TASKS
from jobs.runtime import rank_tasks


@pytest.mark.parametrize("task", TASK_NAMES)
def test_each_kind_s_rank_entry_is_a_function_of_rank_tasks(task: str) -> None:
    entry = rank_tasks.rank_entry(TASKS[task])
    expected = rank_tasks.rounds if TASKS[task].in_rounds else rank_tasks.sweep
    assert entry is expected

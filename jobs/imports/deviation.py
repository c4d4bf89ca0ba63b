"""The old layout's `error` column (nccl-tests 2.0 to 2.11) read as what it is: the largest deviation of any
element from the expected value, over every rank, printed with one digit (`%5.0le`: `0e+00`, `3e+02`); not
a count of wrong elements. nccl-tests itself judged a row wrong where that deviation exceeds a bound of the
type times (nranks - 1), and counted such rows in `# Out of bounds values`.

From nccl-tests' src/common.cu at v2.11.0: DeltaMaxValue (lines 110-127) gives the bound per type (half
and bfloat16 1e-2, float 1e-5, double 1e-12, every integer type 1e-200, so any deviation at all), and
CheckData (line 464) counts the row: `if (args->reportErrors && maxDelta > DeltaMaxValue(type)*(nranks - 1))
args->errors[0]++;` (the same at v2.10.1, line 436, and, without reportErrors, at v2.0.0, line
310)."""

from __future__ import annotations

from collections.abc import Sequence

from jobs.imports.model import Row

DELTA_MAX = {"half": 1e-2, "bfloat16": 1e-2, "float": 1e-5, "double": 1e-12}
"""nccl-tests' DeltaMaxValue by its type name; every other type (the integers) 1e-200."""
INTEGER_DELTA_MAX = 1e-200


def tolerance(type_name: str, nranks: int) -> float:
    """The largest deviation nccl-tests let pass for a row of this type on nranks ranks."""
    return DELTA_MAX.get(type_name, INTEGER_DELTA_MAX) * (nranks - 1)


def judge(rows: Sequence[Row], nranks: int) -> int:
    """Give each old-layout row its tolerance and its verdict (wrong -1 where beyond: no count was printed,
    0 where within: no element deviated past the bound); the number of rows beyond."""
    beyond = 0
    for row in rows:
        if row.max_delta is None:
            continue
        row.tolerance = tolerance(row.type, nranks)
        row.wrong = -1 if row.beyond_tolerance else 0
        beyond += row.beyond_tolerance
    return beyond


def said(row: Row) -> str:
    """`max deviation 3e+02 > float's tolerance 1e-05 x (nranks - 1) = 1e-05`, in words for a status."""
    bound = DELTA_MAX.get(row.type, INTEGER_DELTA_MAX)
    return (
        f"max deviation {row.max_delta:.0e} > {row.type}'s tolerance {bound:.0e} x (nranks - 1) = {row.tolerance:.0e}"
    )

"""Every Slurm command collbench runs itself (sacct, sinfo, scontrol, squeue, salloc, scancel, sacctmgr) runs
here, with one failure policy, as submitit's watcher has one: an answer, or a typed error.

- the command is missing, or does not answer within its time-out: SlurmUnavailable (the CLI's exit 3);
- it answered with a non-zero exit status: SlurmFailed, with its exit status and its words.

A caller that can go on without the answer catches SlurmFailed and says what it does instead; none of them
reads a return code. submitit's own sbatch (slurm.submission.submit) is submitit's. No torch."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

QUERY_TIMEOUT_S = 20.0
"""How long a query (squeue, sacct, sinfo, scontrol) may take before Slurm counts as not answering."""

_UNREACHABLE = re.compile(r"Unable to contact slurm controller|Socket timed out|Connection refused|Zero Bytes", re.I)


class SlurmError(RuntimeError):
    """A Slurm command gave no answer collbench can use: SlurmUnavailable or SlurmFailed."""


class SlurmUnavailable(SlurmError):
    """Slurm's commands are missing here, or Slurm does not answer (exit 3)."""


class SlurmFailed(SlurmError):
    """A Slurm command answered with a non-zero exit status: what it said (no rights, a bad name, ...)."""

    def __init__(self, argv: Sequence[str], returncode: int, stdout: str, stderr: str) -> None:
        self.argv = list(argv)
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr
        super().__init__(f"{argv[0]} failed: {self.words}")

    @property
    def words(self) -> str:
        """Slurm's last line (stderr, else stdout), or the exit status when it said nothing."""
        lines = (self.stderr or self.stdout).strip().splitlines()
        return lines[-1].strip() if lines else f"exit status {self.returncode}"

    @property
    def unreachable(self) -> bool:
        """It failed because the controller did not answer (not a refusal of what was asked)."""
        return unreachable(self.stderr + "\n" + self.stdout)


@dataclass(frozen=True, slots=True)
class Answer:
    """What a Slurm command said when it succeeded (some say 'nothing to show' on stderr with status 0)."""

    stdout: str
    stderr: str


def run(argv: Sequence[str], timeout_s: float | None = QUERY_TIMEOUT_S, env: Mapping[str, str] | None = None) -> Answer:
    """Run one Slurm command (`env`: its whole environment, default this process's); its answer, or
    SlurmUnavailable (missing, or no answer within `timeout_s`; None waits as long as it runs), or
    SlurmFailed (a non-zero exit status)."""
    argv = list(argv)
    try:
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=timeout_s, check=False, env=None if env is None else dict(env)
        )
    except FileNotFoundError:
        raise SlurmUnavailable(f"Slurm is not installed here: {argv[0]} not found on PATH") from None
    except subprocess.TimeoutExpired:
        raise SlurmUnavailable(f"Slurm did not answer {_named(argv)} within {timeout_s:g} s") from None
    if done.returncode != 0:
        raise SlurmFailed(argv, done.returncode, done.stdout, done.stderr)
    return Answer(done.stdout, done.stderr)


def _named(argv: Sequence[str]) -> str:
    """The command as a person names it: 'scontrol show topology', 'squeue'."""
    words = [argv[0]]
    for word in argv[1:3]:
        if word.startswith("-") or "=" in word:
            break
        words.append(word)
    return " ".join(words)


def attached(argv: Sequence[str]) -> int:
    """Run a command whose words are the user's (salloc of a command, its output on this terminal): its exit
    status, which is the command's own; SlurmUnavailable when it is missing."""
    try:
        return subprocess.run(list(argv), check=False).returncode
    except FileNotFoundError:
        raise SlurmUnavailable(f"Slurm is not installed here: {argv[0]} not found on PATH") from None


def unreachable(said: str) -> bool:
    """Whether Slurm's words say its controller did not answer (sbatch's, scontrol's, ...)."""
    return bool(_UNREACHABLE.search(said))


def output(argv: Sequence[str]) -> str:
    """A query's standard output (see `run` for its errors)."""
    return run(argv).stdout


def require(*commands: str) -> None:
    """SlurmUnavailable unless every command is on PATH (before a command that must not half-start)."""
    missing = [command for command in commands if shutil.which(command) is None]
    if missing:
        raise SlurmUnavailable(f"Slurm is not installed here: {', '.join(missing)} not found on PATH")

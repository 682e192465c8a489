"""What the kernel says about a process: its CPU time and its resident memory (Linux /proc).

The server figures are read from the server process itself, not from the client's clock: CPU
time per call is the least machine-dependent figure on a shared, noisy machine.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

__all__ = ["CpuTimes", "cpu_seconds", "rss_bytes"]

_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


@dataclass(frozen=True, slots=True)
class CpuTimes:
    """User and system CPU seconds of a process (all its threads)."""

    user: float
    system: float

    @property
    def total(self) -> float:
        return self.user + self.system

    def __sub__(self, other: CpuTimes) -> CpuTimes:
        return CpuTimes(self.user - other.user, self.system - other.system)


def cpu_seconds(pid: int) -> CpuTimes:
    """The CPU time a process has used so far (utime and stime of /proc/PID/stat)."""
    with open(f"/proc/{pid}/stat", "rb") as f:
        stat = f.read().decode()
    # The command name (field 2) is in parentheses and may hold spaces: split after it.
    fields = stat[stat.rindex(")") + 2 :].split()
    # fields[0] is field 3 (state); utime and stime are fields 14 and 15.
    return CpuTimes(int(fields[11]) / _TICKS, int(fields[12]) / _TICKS)


def rss_bytes(pid: int) -> int:
    """The resident set size of a process now (/proc/PID/statm), in bytes."""
    with open(f"/proc/{pid}/statm") as f:
        return int(f.read().split()[1]) * _PAGE

"""A set of disjoint spans that answers "is [a, b) free?" in logarithmic time."""

from __future__ import annotations

import bisect


class DisjointSpans:
    def __init__(self) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []

    def is_free(self, start: int, end: int) -> bool:
        i = bisect.bisect_right(self.starts, start)
        if i > 0 and self.ends[i - 1] > start:
            return False  # the span before reaches into [start, end)
        return i == len(self.starts) or self.starts[i] >= end

    def add(self, start: int, end: int) -> bool:
        """Add ``[start, end)`` if it overlaps nothing already held; returns whether it was added."""
        if not self.is_free(start, end):
            return False
        i = bisect.bisect_right(self.starts, start)
        self.starts.insert(i, start)
        self.ends.insert(i, end)
        return True

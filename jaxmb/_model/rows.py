"""Row bookkeeping: which rows of C belong to which pair.

C stacks the rows of the pairs in the order they were added (seed 001, eq. 5); pair k owns
rows start_k ... start_k + num_rows_k - 1. Every part of jaxmb that needs a pair's rows, the
owner of a row, or the holonomic rows reads them from one `RowTable` instead of re-counting.
"""

from typing import NamedTuple

import numpy as np


class RowTable(NamedTuple):
    """The rows of a sequence of pairs (static: computed from the pairs' `num_rows`).

    **Fields:** `slices`: one slice of rows per pair, in pair order; `owner` (rows,): the pair
    index of each row; `holonomic` (rows,): True for the rows of holonomic pairs.
    """

    slices: tuple
    owner: np.ndarray
    holonomic: np.ndarray

    @property
    def starts(self) -> np.ndarray:
        """First row of each pair."""
        return np.asarray([s.start for s in self.slices], dtype=np.int64)

    @property
    def size(self) -> int:
        """Total number of rows."""
        return int(self.owner.shape[0])


def row_table(pairs) -> RowTable:
    """The `RowTable` of `pairs` stacked in order."""
    counts = [p.num_rows for p in pairs]
    ends = np.cumsum(counts, dtype=np.int64)
    slices = tuple(slice(int(e - c), int(e)) for e, c in zip(ends, counts))
    owner = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
    holonomic = np.repeat(np.asarray([p.holonomic for p in pairs], bool), counts)
    return RowTable(slices, owner, holonomic)

"""A vectorised segment tree over slots: sums (prioritized sampling) and minima (importance weights)."""

import numpy as np

__all__ = ['SegmentTree']


class SegmentTree:
  """``capacity`` leaves; `set` updates leaves and their ancestors, `find` descends by prefix sums.

  Args:
    capacity: leaves.
    op: ``'sum'`` or ``'min'`` (empty leaves: 0 or +inf).

  Example:
    >>> tree = SegmentTree(4)
    >>> tree.set(np.array([0, 2]), np.array([1.0, 3.0]))
    >>> tree.total(), tree.find(np.array([0.5, 1.5, 3.9])).tolist()
    (4.0, [0, 2, 2])
  """

  def __init__(self, capacity: int, op: str = 'sum'):
    self.capacity = capacity
    self.size = 1 << max(int(capacity - 1).bit_length(), 0)
    self.op = op
    self.empty = 0.0 if op == 'sum' else np.inf
    self.tree = np.full([2 * self.size], self.empty, np.float64)

  def set(self, leaves: np.ndarray, values: np.ndarray) -> None:
    """Sets ``leaves`` to ``values`` (the last wins for repeated leaves).

    Each level recomputes the parents of the nodes below it (repeats only
    recompute the same value, so no ``np.unique``), or the whole level once it
    is narrower than the nodes touched.
    """
    if not len(leaves):
      return
    nodes = np.asarray(leaves, np.int64) + self.size
    self.tree[nodes] = values
    combine = np.add if self.op == 'sum' else np.minimum
    tree, width = self.tree, self.size // 2
    while width >= 1:
      if len(nodes) >= width:   # This level and every one above: whole.
        while width >= 1:
          tree[width:2 * width] = combine(tree[2 * width:4 * width:2],
                                          tree[2 * width + 1:4 * width:2])
          width //= 2
        return
      nodes = nodes // 2
      tree[nodes] = combine(tree[2 * nodes], tree[2 * nodes + 1])
      width //= 2

  def leaves(self, leaves: np.ndarray) -> np.ndarray:
    return self.tree[np.asarray(leaves, np.int64) + self.size]

  def total(self) -> float:
    """The sum (or minimum) over every leaf."""
    return float(self.tree[1])

  def find(self, prefix: np.ndarray) -> np.ndarray:
    """For each ``prefix`` in ``[0, total)``, the leaf whose cumulative sum first exceeds it."""
    nodes = np.ones([len(prefix)], np.int64)
    prefix = np.array(prefix, np.float64)
    while nodes[0] < self.size:
      left = self.tree[2 * nodes]
      right = (prefix >= left) & (self.tree[2 * nodes + 1] > 0)
      prefix -= np.where(right, left, 0.0)
      nodes = 2 * nodes + right
    return nodes - self.size

  def state(self) -> np.ndarray:
    return self.tree

  def load_state(self, tree: np.ndarray) -> None:
    self.tree[...] = tree

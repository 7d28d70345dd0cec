"""A vectorised segment tree over slots: sums (prioritized sampling) and minima (importance weights)."""

import numpy as np

__all__ = ['SegmentTree']

_SEARCHED_LEVELS = 12
"""Levels `SegmentTree.find` crosses with one search (over 4096 nodes' running sums)."""


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

    Consecutive leaves (a ring's new or evicted slots) update their ancestors
    as slices; others level by level (repeats only recompute the same value,
    so no ``np.unique``), or a whole level once it is narrower than the nodes.
    """
    leaves = np.asarray(leaves, np.int64)
    if not len(leaves):
      return
    nodes = leaves + self.size
    self.tree[nodes] = values
    if len(leaves) > 1 and leaves[-1] - leaves[0] == len(leaves) - 1 and (
        np.diff(leaves) == 1).all():
      self._refresh(int(nodes[0]), int(nodes[-1]) + 1)
      return
    tree, width = self.tree, self.size // 2
    pairs = tree.reshape(-1, 2)   # pairs[n]: the children of node n.
    while width >= 1:
      if len(nodes) >= width:   # This level and every one above: whole.
        self._refresh(2 * width, 4 * width)
        return
      nodes = nodes // 2
      children = pairs[nodes]
      tree[nodes] = self._combine(children[:, 0], children[:, 1])
      width //= 2

  def _combine(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.add(a, b) if self.op == 'sum' else np.minimum(a, b)

  def _refresh(self, lo: int, hi: int) -> None:
    """Recomputes the ancestors of the nodes ``[lo, hi)`` of one level, as slices."""
    tree = self.tree
    while lo > 1:
      lo, hi = lo // 2, (hi - 1) // 2 + 1
      tree[lo:hi] = self._combine(tree[2 * lo:2 * hi:2], tree[2 * lo + 1:2 * hi:2])

  def leaves(self, leaves: np.ndarray) -> np.ndarray:
    return self.tree[np.asarray(leaves, np.int64) + self.size]

  def total(self) -> float:
    """The sum (or minimum) over every leaf."""
    return float(self.tree[1])

  def find(self, prefix: np.ndarray) -> np.ndarray:
    """For each ``prefix`` in ``[0, total)``, the leaf whose cumulative sum first exceeds it.

    The top `_SEARCHED_LEVELS` levels in one ``np.searchsorted`` over the running
    sums of that level's nodes, then one level at a time; never into an
    empty subtree, should rounding reach past the last positive node.
    """
    prefix = np.array(prefix, np.float64)
    width = 1 << min(self.size.bit_length() - 1, _SEARCHED_LEVELS)
    level = self.tree[width:2 * width]
    sums = np.cumsum(level)
    pick = np.searchsorted(sums, prefix, side='right')
    positive = np.flatnonzero(level > 0)
    pick = np.minimum(pick, positive[-1] if len(positive) else width - 1)
    prefix -= np.where(pick > 0, sums[pick - 1], 0.0)
    nodes = width + pick
    pairs = self.tree.reshape(-1, 2)   # pairs[n]: the children of node n.
    while nodes[0] < self.size:
      children = pairs[nodes]
      left = children[:, 0]
      right = (prefix >= left) & (children[:, 1] > 0)
      prefix -= np.where(right, left, 0.0)
      nodes = 2 * nodes + right
    return nodes - self.size

  def state(self) -> np.ndarray:
    return self.tree

  def load_state(self, tree: np.ndarray) -> None:
    self.tree[...] = tree

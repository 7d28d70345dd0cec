"""rlds_lite.view.memo: each key computed once, even when asked at once."""

import threading
import time

import pytest

from rlds_lite.view import memo


def test_concurrent_callers_share_one_computation():
  cache = memo.Memo()
  calls = []
  def slow():
    calls.append(1)
    time.sleep(0.2)
    return 'value'
  results = []
  threads = [threading.Thread(target=lambda: results.append(
      cache.get('k', slow))) for _ in range(5)]
  for thread in threads:
    thread.start()
  for thread in threads:
    thread.join()
  assert results == ['value'] * 5 and len(calls) == 1


def test_failures_are_not_cached():
  cache = memo.Memo()
  def fail():
    raise OSError('disk')
  with pytest.raises(OSError, match='disk'):
    cache.get('k', fail)
  assert 'k' not in cache
  assert cache.get('k', lambda: 3) == 3


def test_least_recently_used_is_evicted():
  cache = memo.Memo(capacity=2)
  cache.get('a', lambda: 1)
  cache.get('b', lambda: 2)
  cache.get('a', lambda: 0)  # 'a' used last: 'b' goes first.
  cache.get('c', lambda: 3)
  assert ('a' in cache, 'b' in cache, 'c' in cache) == (True, False, True)

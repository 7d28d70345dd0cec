"""Distributed input with tf.data service: send a pipeline to a dispatcher.

``distribute(dataset, service)`` hands the pipeline to a dispatcher whose
workers run it; ``LocalService`` runs one in this process. Processing modes
and shared jobs: docs/distributed.md.

Example:
  >>> import tensorflow as tf
  >>> with LocalService(num_workers=2) as service:
  ...   ds = distribute(tf.data.Dataset.range(6), service)
  ...   sorted(int(x) for x in ds)
  [0, 1, 2, 3, 4, 5]
"""

from typing import Any, List, Optional, Union

import tensorflow as tf

from rlds_lite import op_context
from rlds_lite.pipeline import inputs

_service = tf.data.experimental.service

PROCESSING_MODES = {
    'distributed_epoch': _service.ShardingPolicy.DYNAMIC,
    'parallel_epochs': _service.ShardingPolicy.OFF,
}
"""``processing_mode`` names -> tf.data service sharding policies."""


class LocalService:
  """A tf.data service dispatcher and ``num_workers`` workers in-process.

  Ports are picked free by the system. The servers run until ``close()``
  (or the end of a ``with`` block) stops them.

  Attributes:
    target: the dispatcher's address (``'grpc://localhost:PORT'``), for
      ``distribute`` or ``tf.data.experimental.service``.
    num_workers: how many workers run.

  Example:
    >>> with LocalService(num_workers=1) as service:
    ...   service.target.startswith('grpc://')
    True
  """

  @op_context.named('LocalService')
  def __init__(self, num_workers: int = 2):
    num_workers = inputs.check_positive_int(num_workers, 'num_workers')
    self._dispatcher = _service.DispatchServer(
        _service.DispatcherConfig(port=0))
    self.target: str = self._dispatcher.target
    address = self.target.split('://', 1)[-1]
    self._workers: List[Any] = [
        _service.WorkerServer(
            _service.WorkerConfig(dispatcher_address=address, port=0))
        for _ in range(num_workers)
    ]
    self.num_workers = num_workers

  def close(self) -> None:
    """Stops the workers, then the dispatcher (a second call does nothing)."""
    for worker in self._workers:
      worker.stop()
    if self._dispatcher is not None:
      self._dispatcher.stop()
    self._workers = []
    self._dispatcher = None

  def __enter__(self) -> 'LocalService':
    return self

  def __exit__(self, exc_type, exc_value, traceback) -> None:
    self.close()


def _target(service: Union[str, LocalService, Any]) -> str:
  target = getattr(service, 'target', service)
  if not isinstance(target, str) or not target:
    raise TypeError(
        'distribute: service must be a dispatcher address such as '
        "'grpc://host:port' or an object with a .target (LocalService), "
        f'got {service!r}.')
  return target


def distribute(dataset: tf.data.Dataset,
               service: Union[str, LocalService, Any],
               *,
               job_name: Optional[str] = None,
               processing_mode: str = 'distributed_epoch',
               **kwargs: Any) -> tf.data.Dataset:
  """``dataset`` run by the tf.data service workers of ``service``.

  Args:
    dataset: the pipeline (its ops are serialised and run by the workers).
    service: the dispatcher: an address ``'grpc://host:port'`` or an
      object with ``.target`` (``LocalService``).
    job_name: consumers with the same name share one job (and split its
      elements); None: this consumer has its own job.
    processing_mode: ``'distributed_epoch'`` (each element once in all) or
      ``'parallel_epochs'`` (each worker runs the whole dataset).
    **kwargs: more arguments of ``tf.data.experimental.service.distribute``
      (``consumer_index``, ``num_consumers``, ``compression``, ...).

  Returns:
    The distributed dataset (iterate it on the trainer).

  Raises:
    ValueError: for an unknown processing mode.
    TypeError: for a dataset or service of the wrong type.

  Example:
    >>> distribute(tf.data.Dataset.range(3), 'grpc://localhost:1',
    ...            processing_mode='round_robin')  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: distribute: processing_mode must be one of ['distributed_epoch', 'parallel_epochs'], got 'round_robin'.
  """
  if not isinstance(dataset, tf.data.Dataset):
    raise TypeError('distribute: dataset must be a tf.data.Dataset, got '
                    f'{type(dataset).__name__}.')
  if processing_mode not in PROCESSING_MODES:
    raise ValueError(f'distribute: processing_mode must be one of '
                     f'{sorted(PROCESSING_MODES)}, got {processing_mode!r}.')
  target = _target(service)
  return dataset.apply(
      _service.distribute(PROCESSING_MODES[processing_mode], target,
                          job_name=job_name, **kwargs))

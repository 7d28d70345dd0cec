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

from typing import Any, List, Optional, Set, Tuple, Union

import tensorflow as tf

from rlds_lite import op_context
from rlds_lite.pipeline import inputs
from rlds_lite.pipeline import servers

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


_PYTHON_OPS = {
    'PyFunc': 'tf.numpy_function', 'PyFuncStateless': 'tf.numpy_function',
    'EagerPyFunc': 'tf.py_function', 'GeneratorDataset': 'from_generator',
}
"""Ops that call back into this Python process, and what makes them."""


def python_calls(dataset: tf.data.Dataset) -> List[str]:
  """What in ``dataset`` calls Python (`_PYTHON_OPS`), sorted; [] if nothing.

  Such a pipeline runs only on workers in the process that built it: the
  tf.data service sends graphs, not Python functions.

  Example:
    >>> ds = tf.data.Dataset.range(3)
    >>> python_calls(ds.map(lambda x: x + 1))
    []
    >>> python_calls(ds.map(lambda x: tf.numpy_function(abs, [x], tf.int64)))
    ['tf.numpy_function']
  """
  top, inner = _graph_ops(dataset)
  return sorted({_PYTHON_OPS[op] for op in (top | inner) & set(_PYTHON_OPS)})


def _graph_ops(dataset: tf.data.Dataset) -> Tuple[Set[str], Set[str]]:
  """The op types of ``dataset``'s graph: ``(top level, in functions)``."""
  graph = tf.compat.v1.GraphDef.FromString(tf.raw_ops.DatasetToGraphV2(
      input_dataset=tf.data.experimental.to_variant(dataset)).numpy())
  inner = {node.op for function in graph.library.function
           for node in function.node_def}
  return {node.op for node in graph.node}, inner


def _check_splittable(top: Set[str], mode: str) -> None:
  """Refuses a pipeline whose top level fails on a worker's share of it."""
  if mode == 'distributed_epoch' and 'AssertCardinalityDataset' in top:
    raise ValueError(
        "distribute: processing_mode='distributed_epoch' splits the pipeline's "
        'source between workers, but the pipeline asserts its cardinality '
        '(TFDS and rlds_lite.load do so by default), which fails on each '
        "worker's share. Read with read_config=tfds.ReadConfig("
        "assert_cardinality=False), or use processing_mode='parallel_epochs'.")


def _check_remote(ops: Set[str], target: str, timeout: float) -> None:
  """Refuses a pipeline that calls Python, then a dispatcher that does not answer."""
  calls = sorted({_PYTHON_OPS[op] for op in ops & set(_PYTHON_OPS)})
  if calls:
    raise ValueError(
        f'distribute: the pipeline calls Python ({", ".join(calls)}), which '
        'tf.data service workers in other processes cannot run (they get '
        'graphs, not Python functions; random_access pipelines read with '
        'tf.numpy_function). Run it in the trainer and split the data per '
        'host instead (pipeline.shard, or random_access.Sharding(index, '
        'count)), or serve it from this process with LocalService.')
  try:
    servers.check_answers(target, timeout)
  except ConnectionError as error:
    raise ConnectionError(f'distribute: {error}') from None


def distribute(dataset: tf.data.Dataset,
               service: Union[str, LocalService, Any],
               *,
               job_name: Optional[str] = None,
               processing_mode: str = 'distributed_epoch',
               timeout: float = servers.CONNECT_TIMEOUT,
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
    timeout: seconds to wait for a dispatcher given by address to answer.
    **kwargs: more arguments of ``tf.data.experimental.service.distribute``
      (``consumer_index``, ``num_consumers``, ``compression``, ...).

  Returns:
    The distributed dataset (iterate it on the trainer).

  Raises:
    ValueError: for an unknown processing mode, a ``'distributed_epoch'``
      pipeline that asserts its cardinality, or (a service given by
      address) a pipeline that calls Python (`python_calls`).
    TypeError: for a dataset or service of the wrong type.
    ConnectionError: for an address where no dispatcher answers within
      ``timeout`` seconds.

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
  top, inner = _graph_ops(dataset)
  _check_splittable(top, processing_mode)
  if not isinstance(service, LocalService):  # In-process: Python runs.
    _check_remote(top | inner, target, timeout)
  return dataset.apply(
      _service.distribute(PROCESSING_MODES[processing_mode], target,
                          job_name=job_name, **kwargs))

"""Feed training frameworks from rlds_lite batches: Keras and JAX (docs/keras_jax.md).

Example:
  >>> import rlds_lite as rlds
  >>> from rlds_lite import frameworks
  >>> episodes = rlds.synthetic.episodes(num_episodes=4, seed=0, dense=True)
  >>> batches = rlds.pipeline.transitions_dataset(
  ...     episodes, rlds.Transitions(), 8, seed=0)
  >>> x, y = next(iter(frameworks.as_keras_dataset(batches, 'observation',
  ...                                                  'action')))
  >>> x.shape.as_list(), y.shape.as_list()
  ([8, 4], [8, 2])
  >>> batch = next(frameworks.as_jax_iterator(batches))
  >>> batch['observation'].shape
  (8, 4)
"""

from rlds_lite.frameworks.jax import as_jax_iterator
from rlds_lite.frameworks.keras import as_keras_dataset
from rlds_lite.nest_paths import get_path

__all__ = ['as_jax_iterator', 'as_keras_dataset', 'get_path']

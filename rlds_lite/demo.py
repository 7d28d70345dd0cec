"""``make demo`` / ``rlds-lite demo``: from recorded episodes to a trained policy.

Everything happens under one work directory (``out_dir``):

1. Record: Catch (``rlds_lite.envs``) played by its scripted expert with
   epsilon-random actions, recorded with EnvLogger
   (``rlds_lite.envlogger.record``) into ``out_dir/recording``.
2. Build: the recording becomes the TFDS dataset ``catch_demo``
   (``rlds_lite.tfds.build_from_envlogger``) in
   ``out_dir/tensorflow_datasets``.
3. Load: ``tfds.load('catch_demo', data_dir=...)`` gives RLDS episodes with
   nested steps; their returns and lengths are computed with
   ``rlds_lite.transformations.sum_dataset`` inside a ``tf.data`` map.
4. Pipeline: ``rlds_lite.load(..., dense=True)`` and
   ``rlds_lite.pipeline.transitions_dataset`` give shuffled batches of
   (observation, action) pairs, episodes split 90/10 for validation (the
   dense episodes are checked with ``rlds_lite.validate_episodes`` first).
5. Train: a small Keras MLP imitates the recorded actions (behaviour
   cloning, cross-entropy).
6. Evaluate: the cloned policy, a uniformly random policy and the expert
   play the same seeded episodes.
7. Report: a table (printed), ``demo.png`` (episode returns of the dataset,
   BC and random policies; the training curve), ``summary.json`` and the
   model ``bc_policy.keras``.

Example:
  >>> import io, tempfile
  >>> figures = run(tempfile.mkdtemp(), num_episodes=20, epochs=1,
  ...               eval_episodes=2, progress=False, out=io.StringIO())
  >>> figures['episodes'], figures['steps'], figures['transitions']
  (20, 200, 180)
"""

import contextlib
import io
import json
import os
import shutil
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, TextIO, Tuple

import dm_env
import keras
import numpy as np
import tensorflow as tf
import tensorflow_datasets as tfds
import tqdm

import rlds_lite as rlds
from rlds_lite import envlogger
from rlds_lite import envs
from rlds_lite import pipeline
from rlds_lite import tfds as rlds_tfds

__all__ = ['DATASET_NAME', 'ENVIRONMENTS', 'EpsilonGreedy', 'ModelPolicy',
           'behaviour_cloning_model', 'evaluate', 'format_table',
           'plot_results', 'run']

DATASET_NAME = 'catch_demo'
"""The name of the TFDS dataset the demo builds."""
ENVIRONMENTS = ('catch', 'catch_pixels')
"""Built-in environments the demo supports (discrete actions)."""

Policy = Callable[[dm_env.TimeStep], Any]


class EpsilonGreedy:
  """``policy``'s action, or a uniformly random one with probability epsilon.

  ``seed(int)`` re-seeds it (``rlds_lite.envlogger.record`` calls it).

  Example:
    >>> noisy = EpsilonGreedy(lambda timestep: np.int64(1), 3, epsilon=0.5,
    ...                       seed=0)
    >>> [noisy(None).item() for _ in range(8)]
    [1, 0, 0, 1, 1, 1, 1, 1]
  """

  def __init__(self, policy: Policy, num_actions: int, epsilon: float,
               seed: Optional[int] = None):
    """Creates the policy.

    Args:
      policy: the greedy policy, ``policy(timestep) -> int action``.
      num_actions: actions are ``0 .. num_actions - 1``.
      epsilon: probability of a random action, in ``[0, 1]``.
      seed: seed of the random choices.

    Raises:
      ValueError: if ``epsilon`` is not in ``[0, 1]`` or ``num_actions < 1``.
    """
    if not 0.0 <= epsilon <= 1.0:
      raise ValueError(f'epsilon must be in [0, 1], got {epsilon!r}.')
    if num_actions < 1:
      raise ValueError(f'num_actions must be >= 1, got {num_actions!r}.')
    self._policy = policy
    self._num_actions = int(num_actions)
    self._epsilon = float(epsilon)
    self._rng = np.random.default_rng(seed)

  def seed(self, seed: Optional[int]) -> None:
    """Re-seeds the random choices."""
    self._rng = np.random.default_rng(seed)

  def __call__(self, timestep: dm_env.TimeStep) -> np.int64:
    greedy = self._policy(timestep)
    if self._rng.random() < self._epsilon:
      return np.int64(self._rng.integers(self._num_actions))
    return np.int64(greedy)


def behaviour_cloning_model(observation_shape: Sequence[int],
                            num_actions: int,
                            hidden: Sequence[int] = (64, 64),
                            scale: float = 1.0,
                            seed: int = 0) -> keras.Model:
  """A small MLP mapping an observation to action logits.

  Args:
    observation_shape: shape of one observation.
    num_actions: number of discrete actions (logits).
    hidden: sizes of the hidden ReLU layers.
    scale: observations are multiplied by it first (``1 / 255`` for images).
    seed: seed of the weight initialisers (no global seed is set).

  Returns:
    An uncompiled ``keras.Model``.

  Example:
    >>> model = behaviour_cloning_model((10, 5), 3)
    >>> model(np.zeros((2, 10, 5), np.float32)).shape
    TensorShape([2, 3])
  """
  inputs = keras.Input(tuple(observation_shape), name='observation')
  x = keras.layers.Flatten()(keras.layers.Rescaling(scale)(inputs))
  for i, units in enumerate(hidden):
    x = keras.layers.Dense(
        units, activation='relu',
        kernel_initializer=keras.initializers.GlorotUniform(seed + i))(x)
  logits = keras.layers.Dense(
      num_actions,
      kernel_initializer=keras.initializers.GlorotUniform(seed + len(hidden)),
      name='logits')(x)
  return keras.Model(inputs, logits, name='behaviour_cloning')


class ModelPolicy:
  """The greedy policy of a model mapping observations to action logits.

  Example:
    >>> policy = ModelPolicy(behaviour_cloning_model((10, 5), 3))
    >>> timestep = envs.make('catch', seed=0).reset()
    >>> policy(timestep).dtype
    dtype('int64')
  """

  def __init__(self, model: keras.Model):
    """Wraps ``model`` (one observation is run as a batch of one)."""
    self._model = model
    self._logits = tf.function(lambda obs: model(obs, training=False))

  def __call__(self, timestep: dm_env.TimeStep) -> np.int64:
    observation = np.asarray(timestep.observation, np.float32)[None]
    return np.int64(np.argmax(self._logits(observation)[0]))


def evaluate(env: dm_env.Environment, policy: Policy, num_episodes: int,
             seed: int, progress: Optional[tqdm.tqdm] = None) -> np.ndarray:
  """Undiscounted returns of ``num_episodes`` episodes of ``policy`` in ``env``.

  The environment is re-seeded with ``seed`` first, so policies evaluated with
  the same seed face the same episodes.

  Args:
    env: an environment with a ``seed(int)`` method.
    policy: ``policy(timestep) -> action``.
    num_episodes: number of episodes (>= 1).
    seed: the environment's seed.
    progress: an optional tqdm bar advanced by one per episode.

  Returns:
    float64 ``[num_episodes]`` returns.

  Example:
    >>> env = envs.make('catch')
    >>> evaluate(env, env.expert_policy, 3, seed=0).tolist()
    [1.0, 1.0, 1.0]
  """
  if num_episodes < 1:
    raise ValueError(f'num_episodes must be >= 1, got {num_episodes!r}.')
  env.seed(seed)
  returns = np.zeros(num_episodes)
  for i in range(num_episodes):
    timestep = env.reset()
    while not timestep.last():
      timestep = env.step(policy(timestep))
      returns[i] += float(timestep.reward)
    if progress is not None:
      progress.update(1)
  return returns


def format_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
  """A plain-text table; floats get 3 decimals, columns are aligned.

  Args:
    header: column names.
    rows: rows of values (same length as ``header``).

  Returns:
    The table as lines joined by newlines.

  Example:
    >>> print(format_table(['policy', 'mean'], [['BC', 0.5], ['random', -1]]))
    policy   mean
    ------  -----
    BC      0.500
    random     -1
  """
  cells = [[f'{v:.3f}' if isinstance(v, float) else str(v) for v in row]
           for row in rows]
  widths = [max([len(str(h))] + [len(r[c]) for r in cells])
            for c, h in enumerate(header)]

  def line(values):
    first = values[0].ljust(widths[0])
    rest = [v.rjust(w) for v, w in zip(values[1:], widths[1:])]
    return '  '.join([first, *rest]).rstrip()

  return '\n'.join([line([str(h) for h in header]),
                    '  '.join('-' * w for w in widths)] +
                   [line(r) for r in cells])


def _return_bins(returns: Dict[str, np.ndarray]) -> Tuple[np.ndarray, bool]:
  """Distinct values if there are few (Catch's +-1), else 10 histogram edges."""
  values = np.unique(np.concatenate(list(returns.values())))
  if values.size <= 10:
    return values, True
  return np.histogram_bin_edges(values, bins=10), False


def plot_results(path: str, returns: Dict[str, np.ndarray],
                 history: Dict[str, List[float]], title: str = '') -> str:
  """Writes a PNG: episode return distributions and the training curve.

  Args:
    path: the PNG file to write.
    returns: ``{label: per-episode returns}`` (e.g. dataset, BC, random).
    history: ``{curve: per-epoch values}`` (e.g. ``loss``, ``val_loss``,
      ``val_accuracy``): losses solid, ``*accuracy`` curves dashed on a
      second axis; ``val_*`` curves orange, the others blue.
    title: the figure title.

  Returns:
    ``path``.

  Example:
    >>> import tempfile
    >>> png = plot_results(os.path.join(tempfile.mkdtemp(), 'p.png'),
    ...                    {'a': np.array([1.0, -1.0])}, {'loss': [1.0, 0.5]})
    >>> open(png, 'rb').read(4)
    b'\\x89PNG'
  """
  from matplotlib import figure  # pylint: disable=g-import-not-at-top
  fig = figure.Figure(figsize=(11, 4.2), layout='constrained')
  returns_ax, loss_ax = fig.subplots(1, 2)
  bins, discrete = _return_bins(returns)
  width = 0.8 / max(len(returns), 1)
  for i, (label, values) in enumerate(returns.items()):
    if discrete:
      fractions = [np.mean(values == v) for v in bins]
      positions = np.arange(len(bins)) + (i - (len(returns) - 1) / 2) * width
      returns_ax.bar(positions, fractions, width,
                     label=f'{label} (mean {np.mean(values):+.2f})')
    else:
      returns_ax.hist(values, bins=bins, alpha=0.5, density=True,
                      label=f'{label} (mean {np.mean(values):+.2f})')
  if discrete:
    returns_ax.set_xticks(np.arange(len(bins)), [f'{v:g}' for v in bins])
    returns_ax.set_ylabel('fraction of episodes')
    returns_ax.set_ylim(0, 1.4)  # Room for the legend above the bars.
    returns_ax.set_yticks(np.linspace(0.0, 1.0, 6))
  else:
    returns_ax.set_ylabel('density')
  returns_ax.set_xlabel('episode return')
  returns_ax.set_title('Episode returns')
  returns_ax.legend(loc='upper left', fontsize='small')

  accuracy_ax = None
  for name, values in history.items():
    epochs = np.arange(1, len(values) + 1)
    color = 'tab:orange' if name.startswith('val_') else 'tab:blue'
    if name.endswith('accuracy'):
      accuracy_ax = accuracy_ax or loss_ax.twinx()
      accuracy_ax.plot(epochs, values, '--', marker='.', color=color,
                       label=name)
    else:
      loss_ax.plot(epochs, values, '-', marker='.', color=color, label=name)
  loss_ax.set_xlabel('epoch')
  loss_ax.set_ylabel('cross-entropy loss')
  loss_ax.set_title('Behaviour cloning training')
  handles, labels = loss_ax.get_legend_handles_labels()
  if accuracy_ax is not None:
    accuracy_ax.set_ylabel('accuracy')
    more = accuracy_ax.get_legend_handles_labels()
    handles, labels = handles + more[0], labels + more[1]
  loss_ax.legend(handles, labels, loc='center right', fontsize='small')
  if title:
    fig.suptitle(title)
  fig.savefig(path, dpi=100)
  return path


# ----------------------------------------------------------------------------
# The stages of `run`.


def _check_args(env_name: str, num_episodes: int, eval_episodes: int,
                epochs: int, epsilon: float, batch_size: int) -> None:
  if env_name not in ENVIRONMENTS:
    raise ValueError(
        f'env_name must be one of {list(ENVIRONMENTS)}, got {env_name!r}.')
  for name, value, minimum in (('num_episodes', num_episodes, 2),
                               ('eval_episodes', eval_episodes, 1),
                               ('epochs', epochs, 1),
                               ('batch_size', batch_size, 1)):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
      raise TypeError(f'{name} must be an int, got {value!r}.')
    if value < minimum:
      raise ValueError(f'{name} must be at least {minimum}, got {value}.')
  if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float)):
    raise TypeError(f'epsilon must be a number, got {epsilon!r}.')
  if not 0.0 <= epsilon <= 1.0:
    raise ValueError(f'epsilon must be in [0, 1], got {epsilon!r}.')


def _dataset_statistics(episodes: tf.data.Dataset) -> Dict[str, np.ndarray]:
  """Per-episode return, length and terminal flag of RLDS episodes."""
  def statistics(episode):
    return rlds.transformations.sum_dataset(
        episode[rlds.STEPS], lambda step: {
            'return': step[rlds.REWARD],
            'length': tf.constant(1, tf.int64),
            'terminal': tf.cast(step[rlds.IS_LAST] & step[rlds.IS_TERMINAL],
                                tf.int64),
        })
  rows = list(episodes.map(statistics, num_parallel_calls=tf.data.AUTOTUNE,
                           deterministic=True).as_numpy_iterator())
  return {key: np.array([row[key] for row in rows]) for key in rows[0]}


def _bc_batches(dense_episodes: tf.data.Dataset, batch_size: int,
                seed: int) -> Tuple[tf.data.Dataset, int]:
  """Shuffled (observation, action) batches of every non-last step.

  Every pass (epoch) reshuffles, reproducibly under ``seed``. Returns the
  batches, with their cardinality set (counted in one pass) so that Keras
  knows the epoch length, and the number of pairs.
  """
  transitions = pipeline.transitions_dataset(
      dense_episodes, batch_size, n=1, seed=seed)
  batches = transitions.map(
      lambda batch: (tf.cast(batch[rlds.OBSERVATION], tf.float32),
                     batch[rlds.ACTION]))
  sizes = [len(actions) for _, actions in batches.as_numpy_iterator()]
  return (batches.apply(tf.data.experimental.assert_cardinality(len(sizes))),
          sum(sizes))


class _EpochBar(keras.callbacks.Callback):
  """A tqdm bar over epochs showing the latest losses."""

  def __init__(self, epochs: int, enabled: bool):
    super().__init__()
    self._bar = tqdm.tqdm(total=epochs, desc='Training BC', unit='epoch',
                          disable=not enabled)

  def on_epoch_end(self, epoch, logs=None):
    self._bar.set_postfix({k: f'{v:.3f}' for k, v in (logs or {}).items()
                           if 'loss' in k or 'acc' in k})
    self._bar.update(1)

  def on_train_end(self, logs=None):
    self._bar.close()


def run(out_dir: str = 'demo_output',
        *,
        env_name: str = 'catch',
        num_episodes: int = 500,
        epsilon: float = 0.2,
        epochs: int = 10,
        batch_size: int = 64,
        eval_episodes: int = 200,
        seed: int = 0,
        progress: bool = True,
        out: TextIO = sys.stdout) -> Dict[str, Any]:
  """Runs the demo (record, build, load, train, evaluate, report).

  Re-running with the same ``out_dir`` replaces the demo's own outputs there
  (the recording, the ``catch_demo`` dataset, the plot, summary and model);
  nothing else in ``out_dir`` is touched. Seeds are passed explicitly (no
  global seed is set): the recording, dataset and evaluation episodes are
  identical run to run; training results may differ slightly (threaded
  tf.data and math).

  Args:
    out_dir: the work directory (created if missing).
    env_name: one of `ENVIRONMENTS`: ``'catch'`` (10x5 board) or
      ``'catch_pixels'`` (32x32 RGB images of it).
    num_episodes: episodes to record (>= 2; a tenth, at least one, is held
      out for validation).
    epsilon: probability of a random action of the recording policy.
    epochs: training epochs.
    batch_size: training batch size.
    eval_episodes: evaluation episodes per policy.
    seed: seed of the recording (environment ``seed``, policy ``seed + 1``),
      of the shuffling and the weights; evaluation uses ``seed + 1000``.
    progress: show tqdm progress bars (on stderr).
    out: where the summary is printed.

  Returns:
    The figures: ``episodes``, ``steps`` (RLDS steps), ``transitions``
    (training pairs), ``terminal_episodes``, ``mean_return`` (``{'dataset',
    'bc', 'random', 'expert'}``), ``returns`` (per-episode lists),
    ``history`` (per-epoch ``loss``, ``accuracy``, ``val_loss``,
    ``val_accuracy``), ``paths`` (``out_dir``, ``recording``, ``dataset``,
    ``plot``, ``summary``, ``model``), ``seconds`` (per stage and
    ``total``) and the arguments. The same dict is saved as
    ``summary.json``.

  Raises:
    ValueError, TypeError: for a bad argument (named).

  Example (the module's example runs the whole demo; here, a bad argument is
  refused before anything is written):
    >>> import os, tempfile
    >>> out_dir = os.path.join(tempfile.mkdtemp(), 'demo')
    >>> run(out_dir, num_episodes=1)
    Traceback (most recent call last):
    ...
    ValueError: num_episodes must be at least 2, got 1.
    >>> os.path.exists(out_dir)
    False
  """
  _check_args(env_name, num_episodes, eval_episodes, epochs, epsilon,
              batch_size)
  start = time.perf_counter()
  seconds = {}
  say = lambda text: print(text, file=out, flush=True)

  def stage(name, began):
    seconds[name] = round(time.perf_counter() - began, 2)
    return time.perf_counter()

  out_dir = os.path.abspath(os.path.expanduser(out_dir))
  paths = {
      'out_dir': out_dir,
      'recording': os.path.join(out_dir, 'recording'),
      'data_dir': os.path.join(out_dir, 'tensorflow_datasets'),
      'plot': os.path.join(out_dir, 'demo.png'),
      'summary': os.path.join(out_dir, 'summary.json'),
      'model': os.path.join(out_dir, 'bc_policy.keras'),
  }
  os.makedirs(out_dir, exist_ok=True)
  say(f'rlds_lite {rlds.__version__} demo: {env_name}, {num_episodes} '
      f'episodes, epsilon {epsilon}, seed {seed}; work directory {out_dir}')

  # 1. Record with EnvLogger.
  t = time.perf_counter()
  env = envs.make(env_name)
  num_actions = int(env.action_spec().num_values)
  behaviour = EpsilonGreedy(env.expert_policy, num_actions, epsilon)
  recording = envlogger.record(
      env, behaviour, paths['recording'], num_episodes, seed=seed,
      progress=progress, overwrite=True,
      metadata={'policy': f'expert, epsilon {epsilon}', 'env': env_name})
  t = stage('record', t)
  say(f'[1/6] recorded {recording.num_episodes} episodes '
      f'({recording.num_steps} EnvLogger timesteps) with EnvLogger in '
      f'{seconds["record"]:.1f}s -> {paths["recording"]}')

  # 2. Build the TFDS dataset (replacing the demo's previous one).
  shutil.rmtree(os.path.join(paths['data_dir'], DATASET_NAME),
                ignore_errors=True)
  with contextlib.redirect_stdout(io.StringIO()):  # TFDS's own messages.
    paths['dataset'] = rlds_tfds.build_from_envlogger(
        paths['recording'], name=DATASET_NAME, data_dir=paths['data_dir'],
        description=f'rlds_lite demo: {env_name}, expert with epsilon '
                    f'{epsilon}, seed {seed}.')
  t = stage('build', t)
  say(f'[2/6] built TFDS dataset {DATASET_NAME!r} in '
      f'{seconds["build"]:.1f}s -> {paths["dataset"]}')

  # 3. Load with tfds.load (nested RLDS steps) and compute statistics.
  episodes = tfds.load(DATASET_NAME, split='train', data_dir=paths['data_dir'])
  statistics = _dataset_statistics(episodes)
  num_steps = int(statistics['length'].sum())
  t = stage('load', t)
  say(f'[3/6] tfds.load: {len(statistics["return"])} episodes, {num_steps} '
      f'RLDS steps, {int(statistics["terminal"].sum())} terminal; mean '
      f'return {statistics["return"].mean():+.3f}')

  # 4. Pipeline: dense episodes -> shuffled (observation, action) batches.
  num_val = max(1, num_episodes // 10)
  num_train = num_episodes - num_val
  load = lambda split: rlds.load(DATASET_NAME, split,
                                 data_dir=paths['data_dir'], dense=True)
  rlds.validate_episodes(load('train'))
  train, num_train_pairs = _bc_batches(load(f'train[:{num_train}]'),
                                       batch_size, seed)
  validation, num_val_pairs = _bc_batches(load(f'train[{num_train}:]'),
                                          batch_size, seed)
  num_transitions = num_train_pairs + num_val_pairs
  t = stage('pipeline', t)
  say(f'[4/6] pipeline: rlds_lite.load(dense=True), validate_episodes, '
      f'pipeline.transitions_dataset -> {num_transitions} (observation, '
      f'action) pairs; {num_train} training / {num_val} validation episodes')

  # 5. Train a behaviour-cloning MLP.
  observation_spec = env.observation_spec()
  model = behaviour_cloning_model(
      observation_spec.shape, num_actions, seed=seed,
      scale=1.0 / 255 if observation_spec.dtype == np.uint8 else 1.0)
  model.compile(
      optimizer=keras.optimizers.Adam(3e-3),
      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
      metrics=['accuracy'])
  fitted = model.fit(train, validation_data=validation, epochs=epochs,
                     shuffle=False, verbose=0,
                     callbacks=[_EpochBar(epochs, progress)])
  history = {k: [round(float(v), 5) for v in values]
             for k, values in fitted.history.items()}
  model.save(paths['model'])
  t = stage('train', t)
  say(f'[5/6] trained a Keras MLP ({model.count_params()} parameters) for '
      f'{epochs} epochs in {seconds["train"]:.1f}s: loss '
      f'{history["loss"][-1]:.3f}, validation accuracy '
      f'{history["val_accuracy"][-1]:.3f}')

  # 6. Evaluate BC, random and expert policies on the same episodes.
  eval_seed = seed + 1000
  policies = {
      'BC (Keras MLP)': ModelPolicy(model),
      'random': envs.random_policy(env.action_spec(), seed=eval_seed),
      'expert': env.expert_policy,
  }
  with tqdm.tqdm(total=eval_episodes * len(policies), desc='Evaluating',
                 unit='episode', disable=not progress) as bar:
    evaluated = {label: evaluate(env, policy, eval_episodes, eval_seed, bar)
                 for label, policy in policies.items()}
  t = stage('evaluate', t)
  say(f'[6/6] evaluated each policy on the same {eval_episodes} episodes in '
      f'{seconds["evaluate"]:.1f}s')

  returns = {f'dataset (epsilon {epsilon})': statistics['return'],
             **evaluated}
  rows = [[label, len(values), float(np.mean(values)), float(np.std(values)),
           float(np.mean(values > 0))] for label, values in returns.items()]
  table = format_table(
      ['policy', 'episodes', 'mean return', 'std', 'return > 0'], rows)
  plot_results(paths['plot'],
               {k: v for k, v in returns.items() if k != 'expert'},
               history, title=f'rlds_lite demo: behaviour cloning on '
               f'{env_name} ({num_episodes} recorded episodes)')
  seconds['report'] = round(time.perf_counter() - t, 2)
  seconds['total'] = round(time.perf_counter() - start, 2)

  keys = {f'dataset (epsilon {epsilon})': 'dataset', 'BC (Keras MLP)': 'bc',
          'random': 'random', 'expert': 'expert'}
  figures = {
      'env': env_name,
      'seed': seed,
      'epsilon': epsilon,
      'epochs': epochs,
      'episodes': int(len(statistics['return'])),
      'steps': num_steps,
      'transitions': int(num_transitions),
      'terminal_episodes': int(statistics['terminal'].sum()),
      'mean_return': {keys[k]: float(np.mean(v)) for k, v in returns.items()},
      'returns': {keys[k]: [float(x) for x in v] for k, v in returns.items()},
      'history': history,
      'paths': paths,
      'seconds': seconds,
  }
  with open(paths['summary'], 'w') as f:
    json.dump(figures, f, indent=1)
  say('')
  say(table)
  say('')
  say(f'plot: {paths["plot"]}')
  say(f'summary: {paths["summary"]}; model: {paths["model"]}')
  say(f'done in {seconds["total"]:.1f}s (' + ', '.join(
      f'{k} {v:.1f}s' for k, v in seconds.items() if k != 'total') + ')')
  return figures

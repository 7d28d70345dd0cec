"""``make demo`` / ``rlds-lite demo``: record Catch, build a TFDS dataset, train and evaluate BC.

Example:
  >>> import io, tempfile
  >>> config = DemoConfig(num_episodes=20, epochs=1, eval_episodes=2)
  >>> figures = run(tempfile.mkdtemp(), config, progress=False,
  ...               out=io.StringIO())
  >>> figures['episodes'], figures['steps'], figures['transitions']
  (20, 200, 180)
"""

import contextlib
import dataclasses
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

from rlds_lite import option_objects
import rlds_lite as rlds
from rlds_lite import envlogger
from rlds_lite import envs
from rlds_lite import pipeline
from rlds_lite import tfds as rlds_tfds

__all__ = ['DATASET_NAME', 'DemoConfig', 'ENVIRONMENTS', 'EpsilonGreedy',
           'ModelPolicy', 'behaviour_cloning_model', 'evaluate',
           'format_table', 'plot_results', 'run']

DATASET_NAME = 'catch_demo'
"""The name of the TFDS dataset the demo builds."""
ENVIRONMENTS = ('catch', 'catch_pixels')
"""Built-in environments the demo supports (discrete actions)."""

Policy = Callable[[dm_env.TimeStep], Any]


class EpsilonGreedy:
  """``policy``'s action, or a random one of ``num_actions`` with probability ``epsilon``.

  Example:
    >>> noisy = EpsilonGreedy(lambda timestep: np.int64(1), 3, epsilon=0.5,
    ...                       seed=0)
    >>> [noisy(None).item() for _ in range(8)]
    [1, 0, 0, 1, 1, 1, 1, 1]
  """

  def __init__(self, policy: Policy, num_actions: int, epsilon: float,
               seed: Optional[int] = None):
    """Creates the policy; ``epsilon`` in ``[0, 1]``, ``num_actions >= 1``."""
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
  """An uncompiled Keras MLP mapping an observation to action logits.

  Args:
    hidden: sizes of the hidden ReLU layers.
    scale: observations are multiplied by it first (``1 / 255`` for images).
    seed: seed of the weight initialisers.

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
  """Returns of ``num_episodes`` episodes of ``policy`` in ``env``, re-seeded with ``seed`` first.

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
  """A plain-text table of ``rows`` under ``header``; floats get 3 decimals.

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
  """Writes a PNG of return distributions (``{label: returns}``) and training curves; ``path``.

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


def _check_number(name: str, value: Any, minimum: int) -> None:
  if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
    raise TypeError(f'{name} must be an int, got {value!r}.')
  if value < minimum:
    raise ValueError(f'{name} must be at least {minimum}, got {value}.')


@dataclasses.dataclass(frozen=True)
class DemoConfig:
  """What the demo records, trains and evaluates.

  Attributes:
    env_name: ``'catch'`` (10x5 board) or ``'catch_pixels'`` (32x32 RGB images).
    num_episodes: episodes to record (>= 2; a tenth is held out for validation).
    epsilon: probability of a random action of the recording policy.
    seed: seed of the recording, shuffling and weights (evaluation: ``seed + 1000``).

  Example:
    >>> DemoConfig(num_episodes=20, epochs=1)
    DemoConfig(num_episodes=20, epochs=1)
    >>> DemoConfig(num_episodes=1)
    Traceback (most recent call last):
    ...
    ValueError: num_episodes must be at least 2, got 1.
  """
  env_name: str = 'catch'
  num_episodes: int = 500
  epsilon: float = 0.2
  epochs: int = 10
  batch_size: int = 64
  eval_episodes: int = 200
  seed: int = 0

  def __post_init__(self):
    if self.env_name not in ENVIRONMENTS:
      raise ValueError(f'env_name must be one of {list(ENVIRONMENTS)}, got '
                       f'{self.env_name!r}.')
    _check_number('num_episodes', self.num_episodes, 2)
    _check_number('eval_episodes', self.eval_episodes, 1)
    _check_number('epochs', self.epochs, 1)
    _check_number('batch_size', self.batch_size, 1)
    epsilon = self.epsilon
    if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float)):
      raise TypeError(f'epsilon must be a number, got {epsilon!r}.')
    if not 0.0 <= epsilon <= 1.0:
      raise ValueError(f'epsilon must be in [0, 1], got {epsilon!r}.')

  def __repr__(self) -> str:
    return option_objects.short_repr(self)


_CONFIG_FIELDS = frozenset(f.name for f in dataclasses.fields(DemoConfig))


def _config(config: Optional[DemoConfig], legacy: Dict[str, Any]
            ) -> DemoConfig:
  """The `DemoConfig` of a call, from the flat keywords of before it too."""
  option_objects.check_keywords('run', legacy, _CONFIG_FIELDS)
  return option_objects.knobs_object(DemoConfig, config, legacy, 'demo.run',
                                       'run(out_dir, DemoConfig(...))')


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
  """Shuffled (observation, action) batches of every non-last step, counted; and the count."""
  transitions = pipeline.transitions_dataset(
      dense_episodes, pipeline.Transitions(n=1), batch_size, seed=seed)
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


class _Run:
  """One run of the demo: its settings, paths, timings and printed lines."""

  def __init__(self, out_dir: str, config: DemoConfig, progress: bool,
               out: TextIO):
    self.config, self.progress, self._out = config, progress, out
    self.start = self._began = time.perf_counter()
    self.seconds: Dict[str, float] = {}
    out_dir = os.path.abspath(os.path.expanduser(out_dir))
    self.paths = {
        'out_dir': out_dir,
        'recording': os.path.join(out_dir, 'recording'),
        'data_dir': os.path.join(out_dir, 'tensorflow_datasets'),
        'plot': os.path.join(out_dir, 'demo.png'),
        'summary': os.path.join(out_dir, 'summary.json'),
        'model': os.path.join(out_dir, 'bc_policy.keras'),
    }

  def say(self, text: str) -> None:
    print(text, file=self._out, flush=True)

  def stage(self, name: str) -> float:
    """Ends stage ``name`` (timed from the previous one); its seconds."""
    now = time.perf_counter()
    self.seconds[name] = round(now - self._began, 2)
    self._began = now
    return self.seconds[name]


def _record(job: _Run, env: dm_env.Environment) -> None:
  """1. Record the epsilon-greedy expert with EnvLogger."""
  config = job.config
  behaviour = EpsilonGreedy(env.expert_policy,
                            int(env.action_spec().num_values), config.epsilon)
  recording = envlogger.record(
      env, behaviour, job.paths['recording'], config.num_episodes,
      seed=config.seed, progress=job.progress, if_exists='overwrite',
      metadata={'policy': f'expert, epsilon {config.epsilon}',
                'env': config.env_name})
  seconds = job.stage('record')
  job.say(f'[1/6] recorded {recording.num_episodes} episodes '
           f'({recording.num_steps} EnvLogger timesteps) with EnvLogger in '
           f'{seconds:.1f}s -> {job.paths["recording"]}')


def _build(job: _Run) -> None:
  """2. Build the TFDS dataset (replacing the demo's previous one)."""
  config, paths = job.config, job.paths
  shutil.rmtree(os.path.join(paths['data_dir'], DATASET_NAME),
                ignore_errors=True)
  with contextlib.redirect_stdout(io.StringIO()):  # TFDS's own messages.
    paths['dataset'] = rlds_tfds.build_from_envlogger(
        paths['recording'], name=DATASET_NAME, data_dir=paths['data_dir'],
        card=rlds_tfds.DatasetCard(description=(
            f'rlds_lite demo: {config.env_name}, expert with epsilon '
            f'{config.epsilon}, seed {config.seed}.')))
  seconds = job.stage('build')
  job.say(f'[2/6] built TFDS dataset {DATASET_NAME!r} in {seconds:.1f}s -> '
           f'{paths["dataset"]}')


def _load(job: _Run) -> Dict[str, np.ndarray]:
  """3. Load with tfds.load (nested RLDS steps) and compute statistics."""
  episodes = tfds.load(DATASET_NAME, split='train',
                       data_dir=job.paths['data_dir'])
  statistics = _dataset_statistics(episodes)
  job.stage('load')
  job.say(f'[3/6] tfds.load: {len(statistics["return"])} episodes, '
           f'{int(statistics["length"].sum())} RLDS steps, '
           f'{int(statistics["terminal"].sum())} terminal; mean return '
           f'{statistics["return"].mean():+.3f}')
  return statistics


def _pipeline(job: _Run) -> Tuple[tf.data.Dataset, tf.data.Dataset, int]:
  """4. Dense episodes -> shuffled (observation, action) batches."""
  config = job.config
  num_val = max(1, config.num_episodes // 10)
  num_train = config.num_episodes - num_val
  load = lambda split: rlds.load(DATASET_NAME, split,
                                 data_dir=job.paths['data_dir'], dense=True)
  rlds.validate_episodes(load('train'))
  train, num_train_pairs = _bc_batches(load(f'train[:{num_train}]'),
                                       config.batch_size, config.seed)
  validation, num_val_pairs = _bc_batches(load(f'train[{num_train}:]'),
                                          config.batch_size, config.seed)
  num_transitions = num_train_pairs + num_val_pairs
  job.stage('pipeline')
  job.say(f'[4/6] pipeline: rlds_lite.load(dense=True), validate_episodes, '
           f'pipeline.transitions_dataset -> {num_transitions} (observation, '
           f'action) pairs; {num_train} training / {num_val} validation '
           'episodes')
  return train, validation, num_transitions


def _train(job: _Run, env: dm_env.Environment, train: tf.data.Dataset,
           validation: tf.data.Dataset
           ) -> Tuple[keras.Model, Dict[str, List[float]]]:
  """5. Train a behaviour-cloning MLP; save it."""
  config = job.config
  observation_spec = env.observation_spec()
  model = behaviour_cloning_model(
      observation_spec.shape, int(env.action_spec().num_values),
      seed=config.seed,
      scale=1.0 / 255 if observation_spec.dtype == np.uint8 else 1.0)
  model.compile(
      optimizer=keras.optimizers.Adam(3e-3),
      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
      metrics=['accuracy'])
  fitted = model.fit(train, validation_data=validation, epochs=config.epochs,
                     shuffle=False, verbose=0,
                     callbacks=[_EpochBar(config.epochs, job.progress)])
  history = {k: [round(float(v), 5) for v in values]
             for k, values in fitted.history.items()}
  model.save(job.paths['model'])
  seconds = job.stage('train')
  job.say(f'[5/6] trained a Keras MLP ({model.count_params()} parameters) '
           f'for {config.epochs} epochs in {seconds:.1f}s: loss '
           f'{history["loss"][-1]:.3f}, validation accuracy '
           f'{history["val_accuracy"][-1]:.3f}')
  return model, history


def _evaluate(job: _Run, env: dm_env.Environment,
              model: keras.Model) -> Dict[str, np.ndarray]:
  """6. Evaluate BC, random and expert policies on the same episodes."""
  eval_episodes, eval_seed = job.config.eval_episodes, job.config.seed + 1000
  policies = {
      'BC (Keras MLP)': ModelPolicy(model),
      'random': envs.random_policy(env.action_spec(), seed=eval_seed),
      'expert': env.expert_policy,
  }
  with tqdm.tqdm(total=eval_episodes * len(policies), desc='Evaluating',
                 unit='episode', disable=not job.progress) as bar:
    evaluated = {label: evaluate(env, policy, eval_episodes, eval_seed, bar)
                 for label, policy in policies.items()}
  seconds = job.stage('evaluate')
  job.say(f'[6/6] evaluated each policy on the same {eval_episodes} '
           f'episodes in {seconds:.1f}s')
  return evaluated


def _report(job: _Run, statistics: Dict[str, np.ndarray],
            evaluated: Dict[str, np.ndarray], history: Dict[str, List[float]],
            num_transitions: int) -> Dict[str, Any]:
  """7. The table, plot and summary.json; returns the figures."""
  config, paths, seconds = job.config, job.paths, job.seconds
  dataset_label = f'dataset (epsilon {config.epsilon})'
  returns = {dataset_label: statistics['return'], **evaluated}
  rows = [[label, len(values), float(np.mean(values)), float(np.std(values)),
           float(np.mean(values > 0))] for label, values in returns.items()]
  table = format_table(
      ['policy', 'episodes', 'mean return', 'std', 'return > 0'], rows)
  plot_results(paths['plot'],
               {k: v for k, v in returns.items() if k != 'expert'},
               history, title=f'rlds_lite demo: behaviour cloning on '
               f'{config.env_name} ({config.num_episodes} recorded episodes)')
  job.stage('report')
  seconds['total'] = round(time.perf_counter() - job.start, 2)
  keys = {dataset_label: 'dataset', 'BC (Keras MLP)': 'bc',
          'random': 'random', 'expert': 'expert'}
  figures = {
      'env': config.env_name,
      'seed': config.seed,
      'epsilon': config.epsilon,
      'epochs': config.epochs,
      'episodes': int(len(statistics['return'])),
      'steps': int(statistics['length'].sum()),
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
  for line in ('', table, '', f'plot: {paths["plot"]}',
               f'summary: {paths["summary"]}; model: {paths["model"]}'):
    job.say(line)
  job.say(f'done in {seconds["total"]:.1f}s (' + ', '.join(
      f'{k} {v:.1f}s' for k, v in seconds.items() if k != 'total') + ')')
  return figures


def run(out_dir: str = 'demo_output', config: Optional[DemoConfig] = None,
        *, progress: bool = True, out: TextIO = sys.stdout,
        **legacy: Any) -> Dict[str, Any]:
  """Runs the demo under ``out_dir`` (record, build, load, train, evaluate, report).

  Re-running replaces only the demo's own outputs; the figures are saved as ``summary.json``.

  Args:
    config: a `DemoConfig`.
    progress: show tqdm progress bars (on stderr).
    out: where the summary is printed.
    **legacy: `DemoConfig`'s fields as keywords (warns once).

  Example:
    >>> import os, tempfile
    >>> out_dir = os.path.join(tempfile.mkdtemp(), 'demo')
    >>> run(out_dir, DemoConfig(num_episodes=1))
    Traceback (most recent call last):
    ...
    ValueError: num_episodes must be at least 2, got 1.
    >>> os.path.exists(out_dir)
    False
  """
  config = _config(config, legacy)
  job = _Run(out_dir, config, progress, out)
  os.makedirs(job.paths['out_dir'], exist_ok=True)
  job.say(f'rlds_lite {rlds.__version__} demo: {config.env_name}, '
           f'{config.num_episodes} episodes, epsilon {config.epsilon}, seed '
           f'{config.seed}; work directory {job.paths["out_dir"]}')
  env = envs.make(config.env_name)
  _record(job, env)
  _build(job)
  statistics = _load(job)
  train, validation, num_transitions = _pipeline(job)
  model, history = _train(job, env, train, validation)
  evaluated = _evaluate(job, env, model)
  return _report(job, statistics, evaluated, history, num_transitions)

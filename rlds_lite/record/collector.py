"""`DataCollector`: a Gymnasium wrapper that records every episode it steps as RLDS.

Like Minari's ``DataCollector``, but episodes go to an RLDS TFDS dataset (`DatasetOutput`),
published atomically every ``publish_every`` episodes and at `close`.
"""

import secrets
from typing import Any, Dict, Optional, Tuple

import gymnasium

from rlds_lite.record import episodes as episodes_lib
from rlds_lite.record import output as output_lib
from rlds_lite.record import spaces
from rlds_lite.tfds import episode_writer

__all__ = ['DataCollector', 'Recorder']


def random_seed() -> int:
  """A fresh reset seed that fits the int64 ``seed`` metadata (63 bits)."""
  return secrets.randbits(63)


class Recorder:
  """What a recording shares across sub-envs: fields, infos, ids, the output.

  Args:
    observation_space, action_space: the (single) env's spaces.
    out_dir, if_exists, options, card: see `DatasetOutput`.
    record_infos: False, True (every ``info`` entry) or the keys to keep.
    publish_every: publish after this many episodes (None: only at `close`).
    vector: episodes carry ``env_index``.
  """

  def __init__(self, observation_space: Any, action_space: Any, out_dir: Any,
               *, record_infos: episodes_lib.InfosLike = False,
               if_exists: str = 'error',
               options: Optional[episode_writer.FileOptions] = None,
               card: Optional[episode_writer.DatasetCard] = None,
               publish_every: Optional[int] = 100, vector: bool = False):
    if publish_every is not None and (
        isinstance(publish_every, bool) or not isinstance(publish_every, int)
        or publish_every < 1):
      raise ValueError('record: publish_every must be a positive int or None, '
                       f'got {publish_every!r}.')
    self.observations = spaces.SpaceFields(observation_space,
                                           'observation_space')
    self.actions = spaces.SpaceFields(action_space, 'action_space')
    if isinstance(record_infos, str):
      record_infos = [record_infos]
    self.infos = (episodes_lib.InfoFields(record_infos)
                  if record_infos else None)
    self._vector = vector
    self._publish_every = publish_every
    self._output_args = (out_dir, if_exists, options, card)
    self.output = output_lib.DatasetOutput(*self._output_args)
    self._unpublished = 0
    self.next_id = 0
    self.lengths = []
    self.returns = []

  def start(self, observation: Any, info: Dict[str, Any], *,
            seed: Optional[int], options: Optional[Dict[str, Any]],
            env_index: Optional[int] = None
            ) -> Tuple[int, episodes_lib.EpisodeBuffer]:
    """A new episode's id and buffer."""
    buffer = episodes_lib.EpisodeBuffer(
        self.observations, self.actions, self.infos, observation, info,
        seed=seed, options=options,
        env_index=env_index if self._vector else None)
    self.next_id += 1
    return self.next_id - 1, buffer

  def finish(self, buffer: episodes_lib.EpisodeBuffer, episode_id: int,
             terminated: bool) -> None:
    """Writes a finished episode (publishing every ``publish_every``)."""
    episode = buffer.finish(terminated, episode_id)
    spec = lambda: episodes_lib.episode_spec(
        self.observations, self.actions, self.infos, self._vector)
    self.output.add(episode, spec)
    self.lengths.append(len(buffer) + 1)
    self.returns.append(float(episode['steps']['reward'].sum()))
    self._unpublished += 1
    if self._publish_every and self._unpublished >= self._publish_every:
      self.output.close()
      out_dir, _, options, card = self._output_args
      self.output = output_lib.DatasetOutput(out_dir, 'append', options, card)
      self._unpublished = 0

  def close(self) -> Optional[str]:
    """Publishes what is unpublished; the dataset version directory (None if empty)."""
    if self._unpublished:
      self._unpublished = 0
      return self.output.close()
    return self.output.path if self.lengths else None

  def abort(self) -> None:
    """Discards the episodes since the last publish."""
    self.output.abort()
    self._unpublished = 0


class DataCollector(gymnasium.Wrapper):
  """Wraps a Gymnasium env; each episode it runs is written to ``out_dir`` as RLDS.

  ``step`` ending with ``terminated`` writes a terminal episode, with ``truncated`` a
  truncated one; ``reset`` (or `close`) during an episode writes it truncated. A reset
  without a seed draws one (63 bits), kept with the options in the episode metadata.

  Args:
    env: a Gymnasium env (not a vector env: see `rlds_lite.record.record`).
    out_dir: the dataset directory (``rlds_lite.load(out_dir)`` reads it).
    record_infos: False, True (every ``info`` entry, fixed by the first) or the keys.
    if_exists: ``'error'``, ``'append'`` or ``'overwrite'``.
    publish_every: episodes between atomic publishes (a crash loses at most these).
    options, card: `EpisodeWriter`'s `FileOptions` and `DatasetCard`.

  Example:
    >>> import os, tempfile, gymnasium, rlds_lite
    >>> out = os.path.join(tempfile.mkdtemp(), 'cartpole')
    >>> with DataCollector(gymnasium.make('CartPole-v1'), out) as env:
    ...   obs, _ = env.reset(seed=0)
    ...   for _ in range(30):
    ...     obs, reward, terminated, truncated, _ = env.step(int(obs[2] > 0))
    ...     if terminated or truncated:
    ...       obs, _ = env.reset()
    >>> [(len(e['steps']['reward']), bool(e['steps']['is_terminal'][-1]))
    ...  for e in rlds_lite.load(out, dense=True)]
    [(31, False)]
  """

  def __init__(self, env: gymnasium.Env, out_dir: Any, *,
               record_infos: episodes_lib.InfosLike = False,
               if_exists: str = 'error', publish_every: Optional[int] = 100,
               options: Optional[episode_writer.FileOptions] = None,
               card: Optional[episode_writer.DatasetCard] = None):
    if isinstance(env, gymnasium.vector.VectorEnv):
      raise TypeError('DataCollector wraps one env; record a vector env with '
                      'rlds_lite.record.record(env, policy, out_dir, ...).')
    super().__init__(env)
    self._recorder = Recorder(
        env.observation_space, env.action_space, out_dir,
        record_infos=record_infos, if_exists=if_exists, options=options,
        card=card, publish_every=publish_every)
    self._episode: Optional[Tuple[int, episodes_lib.EpisodeBuffer]] = None
    self._closed = False

  @property
  def num_episodes(self) -> int:
    """Episodes written so far."""
    return len(self._recorder.lengths)

  def _flush(self) -> None:
    """Writes the open episode as truncated (an episode of no action is dropped)."""
    if self._episode is not None and len(self._episode[1]):
      self._recorder.finish(self._episode[1], self._episode[0],
                            terminated=False)
    self._episode = None

  def reset(self, *, seed: Optional[int] = None,
            options: Optional[Dict[str, Any]] = None) -> Tuple[Any, Dict]:
    """Resets (a seed drawn if none is given) and starts an episode."""
    self._flush()
    if seed is None:
      seed = random_seed()
    observation, info = self.env.reset(seed=seed, options=options)
    self._episode = self._recorder.start(observation, info, seed=seed,
                                         options=options)
    return observation, info

  def step(self, action: Any) -> Tuple[Any, Any, bool, bool, Dict]:
    """Steps and records; an episode that ends is written."""
    if self._episode is None:
      raise ValueError('DataCollector: step() without an episode: call '
                       'reset() first (also after an episode ends).')
    observation, reward, terminated, truncated, info = self.env.step(action)
    episode_id, buffer = self._episode
    buffer.add(action, observation, reward, info)
    if terminated or truncated:
      self._episode = None
      self._recorder.finish(buffer, episode_id, terminated=bool(terminated))
    return observation, reward, terminated, truncated, info

  def close(self) -> Optional[str]:
    """Writes the open episode (truncated), publishes, closes the env; the dataset's path."""
    if self._closed:
      return self._recorder.output.path if self.num_episodes else None
    self._closed = True
    try:
      self._flush()
      path = self._recorder.close()
    except BaseException:
      self._recorder.abort()
      raise
    finally:
      self.env.close()
    return path

  def abort(self) -> None:
    """Discards the unpublished episodes and closes the env."""
    self._closed = True
    self._episode = None
    self._recorder.abort()
    self.env.close()

  def __enter__(self) -> 'DataCollector':
    return self

  def __exit__(self, exc_type, exc_value, traceback) -> None:
    if exc_type is None:
      self.close()
    elif not self._closed:
      self.abort()

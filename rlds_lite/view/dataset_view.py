"""What the viewer shows of one dataset, read on demand and cached (thread-safe).

Example:
  >>> from rlds_lite import synthetic
  >>> path = synthetic.dataset(3, seed=0)
  >>> view = DatasetView(path)
  >>> view.default_split, view.num_episodes('train')
  ('train', 3)
  >>> view.episode_data('train', 1)['length']
  46
"""

import os
import re
from typing import Any, Dict, List, Optional, Union
import warnings

import numpy as np

from rlds_lite import dataset_files
from rlds_lite import op_context
from rlds_lite import rlds_types
from rlds_lite import source as source_lib
from rlds_lite import stats as stats_lib
from rlds_lite import video as video_lib
from rlds_lite.catalog import build as catalog_build
from rlds_lite.catalog import table as catalog_table
from rlds_lite.dense import last_step as last_step_lib
from rlds_lite.view import dataset_info
from rlds_lite.view import episode_payload
from rlds_lite.view import episode_reader
from rlds_lite.view import fields
from rlds_lite.view import memo
from rlds_lite.view import table_query
from rlds_lite.view import video_encoding

DEFAULT_FPS = 10.0


class DatasetView:
  """A dataset as the viewer sees it: info, statistics, table, episodes and videos.

  Args:
    name_or_dir: a prepared dataset directory or a registered TFDS name.
    split: the split shown first (default ``'train'`` or the first split).
    fps: the frame rate of the camera videos (steps per second).
    last_step: ``'invalid'`` (default, RLDS) or ``'valid'``: whether statistics, returns and
      plots count the last step's action, reward and discount.
    cache: read/write statistics and episode catalogs next to the dataset.
    episodes_kept, videos_kept: how many decoded episodes and videos to keep in memory.
  """

  def __init__(self, name_or_dir: Any, *, data_dir: Optional[str] = None,
               split: Optional[str] = None, fps: float = DEFAULT_FPS,
               last_step: Union[last_step_lib.LastStep, str] = 'invalid',
               cache: bool = True, episodes_kept: int = 4,
               videos_kept: int = 32):
    with op_context.named('view'):
      self.last_step = last_step_lib.as_last_step(last_step).value
    # The pages show what last_step='invalid' leaves out, and the fields
    # holding NaN/inf; the statistics' own warnings (attributed to this
    # module, which calls stats.compute) would only reach the server's
    # console. (filterwarnings replaces an equal filter: views made again
    # do not pile them up.)
    for shown in (last_step_lib.LastStepValuesWarning,
                  stats_lib.NonFiniteValuesWarning):
      warnings.filterwarnings('ignore', category=shown,
                              module=re.escape(__name__))
    builder = source_lib.open_builder(name_or_dir, data_dir)
    label = os.fspath(name_or_dir)
    if not builder.info.splits:
      raise ValueError(f'dataset {label!r} has no splits: is it prepared? '
                       '(a registered name needs its data_dir)')
    if not fps > 0:
      raise ValueError(f'fps must be > 0, got {fps}.')
    file_format = builder.info.file_format
    if file_format is not None and file_format.value == 'array_record':
      # TFDS reads array_record only by random access (tfds.data_source),
      # not with as_dataset, which the viewer's passes and reads use.
      raise ValueError(f'dataset {label!r} is stored as array_record; the '
                       'viewer reads tfrecord datasets.')
    self.builder = builder
    self.label = label
    self.dataset_dir = os.fspath(builder.data_dir)
    self.fps = float(fps)
    self.default_split = split or source_lib.default_split(builder)
    self.check_split(self.default_split)
    # Every split can be browsed: its shards are checked now (one directory
    # listing, as rlds_lite.load does), so a missing, empty or truncated file
    # is refused by name instead of failing page by page.
    dataset_files.check_open(builder, None)
    self.step_spec = builder.info.features[
        rlds_types.STEPS].feature.get_tensor_spec()
    self.cameras = fields.camera_fields(self.step_spec)
    self._cache = cache
    self._reader = episode_reader.EpisodeReader(builder)
    self._tables = memo.Memo()
    self._stats = memo.Memo()
    self._episodes = memo.Memo(episodes_kept)
    self._videos = memo.Memo(videos_kept)

  @property
  def splits(self) -> List[str]:
    return sorted(self.builder.info.splits.keys())

  def check_split(self, split: str) -> None:
    """A KeyError naming the splits if ``split`` is not one of them."""
    if split not in self.builder.info.splits:
      raise KeyError(f'no split {split!r} (splits: {self.splits}).')

  def num_episodes(self, split: str) -> int:
    self.check_split(split)
    return self._reader.num_episodes(split)

  def info(self) -> Dict[str, Any]:
    """Features, splits and cameras (`dataset_info`), split, fps, last_step."""
    return {**dataset_info.dataset_info(self.builder, self.label),
            'default_split': self.default_split, 'fps': self.fps,
            'last_step': self.last_step}

  def catalog(self, split: str) -> catalog_table.Catalog:
    """The split's episode catalog (one pass the first time, then cached)."""
    return self.table(split).catalog

  def table(self, split: str) -> table_query.TableView:
    """The split's episode table: its catalog as the table shows it."""
    self.check_split(split)
    return self._tables.get(split, lambda: table_query.TableView(
        catalog_build.catalog_of_builder(
            self.builder, split, last_step=self.last_step, cache=self._cache,
            progress=False)))

  def stats(self, split: str) -> Dict[str, Any]:
    """``rlds_lite.stats.compute(...).summary()`` of the split (cached)."""
    self.check_split(split)
    return self._stats.get(split, lambda: stats_lib.compute(
        self.dataset_dir, split=split, last_step=self.last_step,
        cache=self._cache, progress=False).summary())

  def episode(self, split: str, index: int) -> Dict[str, Any]:
    """Episode ``index`` of ``split``, dense NumPy steps (IndexError if none)."""
    self.check_split(split)
    return self._episodes.get((split, index),
                              lambda: self._reader.read(split, index))

  def episode_data(self, split: str, index: int) -> Dict[str, Any]:
    """The episode page's JSON (`episode_payload`), its return and ending."""
    episode = self.episode(split, index)
    payload = episode_payload.episode_payload(episode, self.step_spec,
                                              self.last_step)
    return {'split': split, 'index': index, 'fps': self.fps,
            'num_episodes': self.num_episodes(split), **payload,
            **_ending(episode[rlds_types.STEPS], self.last_step)}

  def video(self, split: str, index: int, camera: str) -> bytes:
    """The MP4 of camera ``camera`` of an episode (KeyError if no camera)."""
    if camera not in self.cameras:
      raise KeyError(f'no camera {camera!r} (cameras: {self.cameras}).')
    def encode():
      episode = self.episode(split, index)
      frames = video_lib.episode_frames(episode, camera)
      return video_encoding.encode_mp4(frames, self.fps)
    return self._videos.get((split, index, camera), encode)


def _ending(steps: Dict[str, Any], last_step: str) -> Dict[str, Any]:
  """The episode's return and ending (``terminated``/``truncated``), as its catalog row has them."""
  reward = steps.get(rlds_types.REWARD)
  is_terminal = steps.get(rlds_types.IS_TERMINAL)
  result = {'return': None, 'last_reward': None, 'terminated': None,
            'truncated': None}
  if reward is not None:
    reward = np.asarray(reward, np.float64).reshape(len(reward), -1)
    counted = len(reward) if last_step == 'valid' else max(len(reward) - 1, 0)
    total = float(reward[:counted].sum())
    result['return'] = total if np.isfinite(total) else None
    if len(reward):
      last = float(reward[-1].sum())
      result['last_reward'] = last if np.isfinite(last) else None
  if is_terminal is not None:
    terminated = bool(len(is_terminal)) and bool(np.asarray(is_terminal)[-1])
    result['terminated'] = terminated
    result['truncated'] = bool(len(is_terminal)) and not terminated
  return result

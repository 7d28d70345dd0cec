"""`build`: a browser recording's kept episodes as a TFDS dataset (``build_from_envlogger``).

Only ``OUT/kept/`` is read, so discarded (deleted) and unfinished (``pending/``) episodes
never reach the dataset. A rebuild is made beside the old dataset and swapped in.
"""

import json
import os
import re
import shutil
import tempfile
from typing import Optional

from rlds_lite.record import session
from rlds_lite.tfds import envlogger_build

__all__ = ['build', 'dataset_name', 'DATA_DIR']

DATA_DIR = 'tfds'
"""``OUT/tfds``: the TFDS data directory of the built dataset."""


def dataset_name(env_label: str) -> str:
  """The default dataset name of an env: snake_case, ``_human``.

  Example:
    >>> dataset_name('CartPole-v1'), dataset_name('catch')
    ('cartpole_v1_human', 'catch_human')
  """
  name = re.sub(r'[^a-z0-9]+', '_', env_label.lower()).strip('_')
  if not name or not name[0].isalpha():
    name = 'env_' + name
  return f'{name}_human'


def build(out_dir: str, name: Optional[str] = None) -> str:
  """Builds ``OUT/tfds/<name>/1.0.0`` from the kept episodes; returns its path.

  Args:
    out_dir: a browser recording (``rlds-lite record ... --out``).
    name: the dataset name (default: `dataset_name` of the recorded env).

  Example (not run: it needs a recording)::

    path = build('/tmp/catch_rec')  # .../tfds/catch_human/1.0.0
  """
  marker = os.path.join(out_dir, session.MARKER)
  if not os.path.exists(marker):
    raise ValueError(f'record: {out_dir} is not a browser recording (no '
                     f'{session.MARKER}).')
  kept = session.kept_episodes(out_dir)
  if not kept:
    raise ValueError(f'record: {out_dir} has no kept episode to build.')
  if name is None:
    with open(marker, encoding='utf-8') as f:
      name = dataset_name(json.load(f)['env'])
  recordings = [os.path.join(out_dir, session.KEPT,
                             f'episode_{row["episode_id"]:06d}') for row in kept]
  final = os.path.join(out_dir, DATA_DIR)
  # Unique names: a build from the page and one from --build never share one.
  fresh = tempfile.mkdtemp(prefix='.tfds-new-', dir=out_dir)
  try:
    path = envlogger_build.build_from_envlogger(recordings, name=name,
                                                data_dir=fresh)
  except BaseException:
    shutil.rmtree(fresh, ignore_errors=True)
    raise
  old = tempfile.mkdtemp(prefix='.tfds-old-', dir=out_dir)
  if os.path.exists(final):
    os.rename(final, os.path.join(old, DATA_DIR))
  os.rename(fresh, final)
  shutil.rmtree(old, ignore_errors=True)
  return os.path.join(final, os.path.relpath(path, fresh))

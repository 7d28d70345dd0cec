"""Catch (bsuite's), on a board or rendered as RGB pixels; deterministic under a seed.

Example:
  >>> from rlds_lite.envs import catch
  >>> env = catch.Catch(seed=0)
  >>> timestep = env.reset()
  >>> timestep.observation.shape, timestep.observation.dtype
  ((10, 5), dtype('float32'))
  >>> while not timestep.last():
  ...   timestep = env.step(env.expert_policy(timestep))
  >>> timestep.reward.item(), timestep.discount.item()
  (1.0, 0.0)
"""

from typing import Optional

import dm_env
from dm_env import specs
import numpy as np

__all__ = ['Catch', 'CatchPixels', 'LEFT', 'STAY', 'RIGHT']

LEFT, STAY, RIGHT = 0, 1, 2
"""The three actions of Catch: the paddle moves by `action - 1` columns."""

BALL_RGB = (255, 64, 0)
"""Colour of the ball in `CatchPixels` images."""
PADDLE_RGB = (0, 160, 255)
"""Colour of the paddle in `CatchPixels` images."""


def _check_size(name: str, value: int, minimum: int) -> int:
  if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
    raise TypeError(f'`{name}` must be an int, got {value!r}.')
  if value < minimum:
    raise ValueError(f'`{name}` must be >= {minimum}, got {value}.')
  return int(value)


def _step_toward(source: float, target: float, tolerance: float) -> np.int64:
  """The Catch action that moves `source` toward `target`."""
  if target < source - tolerance:
    return np.int64(LEFT)
  if target > source + tolerance:
    return np.int64(RIGHT)
  return np.int64(STAY)


class Catch(dm_env.Environment):
  """Catch with a float32 `[rows, columns]` board; actions {0: left, 1: stay, 2: right}.

  Args:
    rows: Board height (>= 2); an episode lasts `rows - 1` steps.
    columns: Board width (>= 1).
    seed: Seed of the ball's starting column; `None` for a random seed.

  Example:
    >>> env = Catch(rows=4, columns=3, seed=0)
    >>> env.reset().observation.tolist()
    [[0.0, 0.0, 1.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 1.0, 0.0]]
    >>> env.step(RIGHT).observation.tolist()
    [[0.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, 0.0, 0.0], [0.0, 0.0, 1.0]]
  """

  def __init__(self, rows: int = 10, columns: int = 5,
               seed: Optional[int] = None):
    """Creates the environment (see the class for the arguments)."""
    self._rows = _check_size('rows', rows, 2)
    self._columns = _check_size('columns', columns, 1)
    self._rng = np.random.default_rng(seed)
    self._ball = (0, 0)
    self._paddle = 0
    self._reset_next_step = True

  @property
  def rows(self) -> int:
    """Board height."""
    return self._rows

  @property
  def columns(self) -> int:
    """Board width."""
    return self._columns

  def seed(self, seed: Optional[int]) -> None:
    """Re-seeds the environment (`None`: random); the next `reset()` starts afresh.

    Example:
      >>> env = Catch(seed=3)
      >>> first = env.reset().observation
      >>> env.seed(3)
      >>> bool((env.reset().observation == first).all())
      True
    """
    self._rng = np.random.default_rng(seed)
    self._reset_next_step = True

  def reset(self) -> dm_env.TimeStep:
    """Starts an episode: ball on a random top column, paddle centred."""
    self._ball = (0, int(self._rng.integers(self._columns)))
    self._paddle = self._columns // 2
    self._reset_next_step = False
    return dm_env.restart(self._observation())

  def step(self, action) -> dm_env.TimeStep:
    """Moves the paddle by `action - 1` columns and the ball one row down."""
    if self._reset_next_step:
      return self.reset()
    move = self._parse_action(action) - 1
    self._paddle = min(max(self._paddle + move, 0), self._columns - 1)
    self._ball = (self._ball[0] + 1, self._ball[1])
    observation = self._observation()
    if self._ball[0] == self._rows - 1:
      self._reset_next_step = True
      reward = 1.0 if self._ball[1] == self._paddle else -1.0
      return dm_env.TimeStep(dm_env.StepType.LAST, np.float64(reward),
                             np.float64(0.0), observation)
    return dm_env.transition(np.float64(0.0), observation, np.float64(1.0))

  def _parse_action(self, action) -> int:
    value = np.asarray(action)
    if (value.shape or value.dtype.kind not in 'iu' or
        int(value) not in (LEFT, STAY, RIGHT)):
      raise ValueError(
          f'Catch `action` must be an integer 0 (left), 1 (stay) or 2 (right); '
          f'got {action!r}.')
    return int(value)

  def _observation(self) -> np.ndarray:
    board = np.zeros((self._rows, self._columns), np.float32)
    board[self._ball] = 1.0
    board[self._rows - 1, self._paddle] = 1.0
    return board

  def observation_spec(self) -> specs.Array:
    """float32 `[rows, columns]` board named `board`."""
    return specs.BoundedArray((self._rows, self._columns), np.float32,
                              minimum=0.0, maximum=1.0, name='board')

  def action_spec(self) -> specs.DiscreteArray:
    """int64 action in {0, 1, 2} named `action`."""
    return specs.DiscreteArray(3, dtype=np.int64, name='action')

  def expert_policy(self, timestep: dm_env.TimeStep) -> np.int64:
    """Scripted expert reading the observation: moves the paddle toward the ball.

    Example:
      >>> env = Catch(rows=4, columns=3, seed=0)
      >>> env.expert_policy(env.reset()).item()
      2
    """
    board = np.asarray(timestep.observation)
    ball_rows, ball_columns = np.nonzero(board[:-1])
    paddle = float(np.argmax(board[-1]))
    if ball_rows.size == 0:  # The ball reached the paddle's row.
      return np.int64(STAY)
    return _step_toward(paddle, float(ball_columns[0]), 0.5)


class CatchPixels(Catch):
  """Catch rendered as a uint8 `[height, width, 3]` RGB image (nearest-neighbour cells).

  Args:
    rows, columns, seed: As for `Catch`.
    height, width: Image size in pixels (>= rows, >= columns).

  Example:
    >>> env = CatchPixels(height=32, width=32, seed=0)
    >>> image = env.reset().observation
    >>> image.shape, image.dtype
    ((32, 32, 3), dtype('uint8'))
    >>> sorted({tuple(pixel) for pixel in image.reshape(-1, 3).tolist()})
    [(0, 0, 0), (0, 160, 255), (255, 64, 0)]
  """

  def __init__(self, rows: int = 10, columns: int = 5, height: int = 32,
               width: int = 32, seed: Optional[int] = None):
    """Creates the environment (see the class for the arguments)."""
    super().__init__(rows=rows, columns=columns, seed=seed)
    self._height = _check_size('height', height, self.rows)
    self._width = _check_size('width', width, self.columns)
    self._cell_rows = np.arange(self._height) * self.rows // self._height
    self._cell_columns = np.arange(self._width) * self.columns // self._width

  def _observation(self) -> np.ndarray:
    image = np.zeros((self.rows, self.columns, 3), np.uint8)
    image[self._ball] = BALL_RGB
    image[self.rows - 1, self._paddle] = PADDLE_RGB
    return image[self._cell_rows][:, self._cell_columns]

  def observation_spec(self) -> specs.BoundedArray:
    """uint8 `[height, width, 3]` RGB image named `pixels`."""
    return specs.BoundedArray((self._height, self._width, 3), np.uint8,
                              minimum=0, maximum=255, name='pixels')

  def expert_policy(self, timestep: dm_env.TimeStep) -> np.int64:
    """Scripted expert reading the ball and paddle off the image.

    Example:
      >>> env = CatchPixels(rows=4, columns=3, seed=0)
      >>> env.expert_policy(env.reset()).item()
      2
    """
    image = np.asarray(timestep.observation)
    ball = np.all(image == BALL_RGB, axis=-1)
    paddle = np.all(image == PADDLE_RGB, axis=-1)
    if not ball.any() or not paddle.any():
      return np.int64(STAY)
    ball_x = float(np.nonzero(ball)[1].mean())
    paddle_x = float(np.nonzero(paddle)[1].mean())
    return _step_toward(paddle_x, ball_x, self._width / self.columns / 2)

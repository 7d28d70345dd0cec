"""docs/replay.md's DQN-style loop runs (with fewer episodes) and learns nothing wrong."""

import contextlib
import io
import pathlib
import re

DOCS = pathlib.Path(__file__).parent.parent.parent / 'docs' / 'replay.md'


def _block(heading: str) -> str:
  text = DOCS.read_text()
  section = text[text.index(heading):]
  return re.search(r'```python\n(.*?)```', section, flags=re.S).group(1)


def test_the_dqn_loop_runs():
  code = _block('## A DQN-style loop')
  assert 'EPISODES, EPSILON, BATCH = 300,' in code
  code = code.replace('EPISODES, EPSILON, BATCH = 300,', 'EPISODES, EPSILON, BATCH = 12,')
  printed = io.StringIO()
  scope = {}
  with contextlib.redirect_stdout(printed):
    exec(compile(code, str(DOCS), 'exec'), scope)  # pylint: disable=exec-used
  buffer = scope['buffer']
  # Catch episodes have 10 steps: 12 episodes, 9 three-step transitions each.
  assert (len(buffer), buffer.num_episodes(), buffer.num_samples) == (120, 12, 108)
  assert printed.getvalue().startswith('return over the last 50 episodes: ')
  assert buffer.storage.header[3] > 0   # The learner sampled.

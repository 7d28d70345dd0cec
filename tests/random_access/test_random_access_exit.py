"""A script that leaves a reader running exits (no hang at interpreter exit)."""

import os
import subprocess
import sys
import textwrap

from rlds_lite import exit_guard

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))


def test_a_script_leaving_its_iterator_alive_exits(vector_chunks, tmp_path):
  # Large reads keep calls in flight when the script ends: without the exit
  # wait, the interpreter ends the TF thread waiting for the GIL and the
  # iterator's destruction hangs or aborts ('terminate called without an
  # active exception').
  script = tmp_path / 'train.py'
  script.write_text(textwrap.dedent(f"""
      from rlds_lite import random_access as ra
      ds = ra.sample_batches({str(vector_chunks)!r}, ra.Windows(4), 4096,
                             seed=0)
      it = iter(ds)
      print(next(it)['reward'].shape, flush=True)
  """))
  env = dict(os.environ, PYTHONPATH=REPO, TF_CPP_MIN_LOG_LEVEL='3')
  run = subprocess.run([sys.executable, str(script)], capture_output=True,
                       text=True, timeout=120, env=env, check=False)
  assert run.returncode == 0, run.stderr[-2000:]
  assert run.stdout.strip() == '(4096, 4)'


def test_tracked_counts_calls_in_flight():
  seen = []
  probe = exit_guard.tracked(lambda: seen.append(exit_guard.in_flight()))
  probe()
  assert seen == [1] and exit_guard.in_flight() == 0
  assert exit_guard.wait_until_idle(idle_seconds=0.0, max_seconds=1.0)

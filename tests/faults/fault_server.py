"""A server process that imports rlds_lite (and TensorFlow) once and forks jobs.

Importing TensorFlow costs ~6 s of CPU; the fault tests run dozens of writer
processes that must really die (SIGKILL) mid-write. This server pays the
import once, then forks one child per job: the child is a real, separate
process (its own pid, files, locks) that costs milliseconds to start. The
server itself never runs a TensorFlow op, so each child starts from an
untouched runtime.

Protocol (JSON lines; requests on stdin, replies on stdout):
  {"start": "module:function", "kwargs": {...}, "env": {...}, "log": path}
      -> {"pid": pid}   (the child runs function(**kwargs) with env set,
                         stdout/stderr to log; exit 0 on return, 1 on error)
  {"wait": pid, "timeout": seconds}
      -> {"pid": pid, "exit": code or null, "signal": number or null}
         (a child still running after timeout is SIGKILLed and reported
         with "timed_out": true)

`ForkServer` is the client the tests use.
"""

import importlib
import json
import os
import signal
import subprocess
import sys
import time
import traceback
from typing import Any, Dict, Optional

_HERE = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.dirname(os.path.dirname(_HERE))
_PRELOAD = ('tensorflow', 'tensorflow_datasets', 'rlds_lite', 'rlds_lite.tfds',
            'writer_jobs', 'output_jobs')


def _run_child(request: Dict[str, Any]) -> None:
  """In the forked child: runs the job, never returns."""
  code = 1
  try:
    log = os.open(request['log'], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.environ.update(request.get('env') or {})
    module_name, function_name = request['start'].split(':')
    function = getattr(importlib.import_module(module_name), function_name)
    function(**(request.get('kwargs') or {}))
    code = 0
  except BaseException:  # pylint: disable=broad-except
    traceback.print_exc()
  finally:
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # pylint: disable=protected-access


def _wait(pid: int, timeout: Optional[float]) -> Dict[str, Any]:
  deadline = None if timeout is None else time.monotonic() + timeout
  timed_out = False
  while True:
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
      break
    if deadline is not None and time.monotonic() > deadline:
      os.kill(pid, signal.SIGKILL)
      timed_out = True
      _, status = os.waitpid(pid, 0)
      break
    time.sleep(0.005)
  return {'pid': pid,
          'exit': os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
          'signal': os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
          'timed_out': timed_out}


def serve() -> None:
  os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '3')
  # rlds_lite imports TensorFlow lazily, so the server imports it (and the
  # jobs' modules) itself: otherwise each child would pay the ~6 s import.
  for module in _PRELOAD:
    importlib.import_module(module)
  print(json.dumps({'ready': os.getpid()}), flush=True)
  for line in sys.stdin:
    request = json.loads(line)
    if 'start' in request:
      pid = os.fork()
      if pid == 0:
        _run_child(request)
      reply = {'pid': pid}
    else:
      reply = _wait(request['wait'], request.get('timeout'))
    print(json.dumps(reply), flush=True)


class ForkServer:
  """Client of a fault server subprocess (see the module docstring).

  Args:
    log_dir: where each job's output goes (``job-<n>.log``).
  """

  def __init__(self, log_dir: str):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='3',
               PYTHONPATH=os.pathsep.join([_ROOT, _HERE]))
    env.pop('RLDS_LITE_FAULT_KILL_AT', None)
    self._log_dir = log_dir
    self._count = 0
    self._logs: Dict[int, str] = {}
    self._process = subprocess.Popen(
        [sys.executable, '-u', os.path.abspath(__file__)], cwd=_ROOT, env=env,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    ready = self._read()
    assert 'ready' in ready, ready

  def _read(self) -> Dict[str, Any]:
    line = self._process.stdout.readline()
    if not line:
      raise RuntimeError('the fault server died')
    return json.loads(line)

  def _ask(self, request: Dict[str, Any]) -> Dict[str, Any]:
    self._process.stdin.write(json.dumps(request) + '\n')
    self._process.stdin.flush()
    return self._read()

  def start(self, job: str, env: Optional[Dict[str, str]] = None,
            **kwargs: Any) -> int:
    """Forks a child running ``job`` (``'module:function'``); its pid."""
    self._count += 1
    log = os.path.join(self._log_dir, f'job-{self._count}.log')
    pid = self._ask({'start': job, 'kwargs': kwargs, 'env': env or {},
                     'log': log})['pid']
    self._logs[pid] = log
    return pid

  def wait(self, pid: int, timeout: float = 60) -> Dict[str, Any]:
    """Waits for a child: ``{'exit', 'signal', 'timed_out', 'log'}``."""
    reply = self._ask({'wait': pid, 'timeout': timeout})
    with open(self._logs.pop(pid)) as f:
      reply['log'] = f.read()
    return reply

  def run(self, job: str, env: Optional[Dict[str, str]] = None,
          timeout: float = 60, **kwargs: Any) -> Dict[str, Any]:
    """`start` then `wait`."""
    return self.wait(self.start(job, env, **kwargs), timeout)

  def close(self) -> None:
    """Stops the server (killed: it holds nothing, and exiting TF is slow)."""
    self._process.kill()
    self._process.wait(timeout=30)
    self._process.stdin.close()
    self._process.stdout.close()


if __name__ == '__main__':
  serve()

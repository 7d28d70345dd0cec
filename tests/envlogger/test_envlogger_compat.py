"""Tests of the EnvLogger compatibility layer: NumPy 2 aliases, import errors."""

import importlib.abc
import sys

import numpy as np
import pytest

from rlds_lite import envlogger as rlds_envlogger
from rlds_lite.envlogger import compat as envlogger_compat

GLIBC_ERROR = ("/lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_2.38' not found "
               '(required by .../envlogger/backends/python/'
               'riegeli_dataset_writer.so)')


class _FailingFinder(importlib.abc.MetaPathFinder):
  """Makes `import envlogger` raise a given error, like a broken install."""

  def __init__(self, error):
    self.error = error

  def find_spec(self, name, path=None, target=None):
    del path, target
    if name == 'envlogger':
      raise self.error
    return None


@pytest.fixture
def broken_import(monkeypatch):
  """Returns a function that makes `import envlogger` fail with an error."""

  def install(error, version):
    monkeypatch.delitem(sys.modules, 'envlogger', raising=False)
    monkeypatch.setattr(sys, 'meta_path', [_FailingFinder(error)] + sys.meta_path)
    monkeypatch.setattr(envlogger_compat, '_installed_version', lambda: version)

  return install


def test_patch_adds_only_missing_aliases(monkeypatch):
  monkeypatch.delattr(np, 'unicode_', raising=False)
  monkeypatch.delattr(np, 'string_', raising=False)
  assert rlds_envlogger.patch_numpy_for_envlogger() == ('unicode_', 'string_')
  assert np.unicode_ is np.str_ and np.string_ is np.bytes_
  assert rlds_envlogger.patch_numpy_for_envlogger() == ()


def test_patch_never_replaces_an_existing_attribute(monkeypatch):
  sentinel = object()
  monkeypatch.setattr(np, 'unicode_', sentinel, raising=False)
  monkeypatch.delattr(np, 'string_', raising=False)
  assert rlds_envlogger.patch_numpy_for_envlogger() == ('string_',)
  assert np.unicode_ is sentinel


def test_import_envlogger_works_here_and_patches_numpy(monkeypatch):
  monkeypatch.delattr(np, 'unicode_', raising=False)
  module = rlds_envlogger.import_envlogger()
  assert module.__name__ == 'envlogger'
  assert hasattr(module, 'EnvLogger') and hasattr(module, 'Reader')
  assert np.unicode_ is np.str_


def test_envlogger_codec_needs_the_patch_on_numpy2(monkeypatch):
  """The reason the compat layer exists: encoding a uint8 array uses np.unicode_."""
  rlds_envlogger.import_envlogger()
  from envlogger.converters import codec  # pylint: disable=g-import-not-at-top
  monkeypatch.delattr(np, 'unicode_', raising=False)
  if np.lib.NumpyVersion(np.__version__) >= '2.0.0':
    with pytest.raises(AttributeError, match='unicode_'):
      codec.encode(np.zeros(3, np.uint8))
  rlds_envlogger.patch_numpy_for_envlogger()
  assert codec.decode(codec.encode(np.arange(3, dtype=np.uint8))).tolist() == [
      0, 1, 2]


@pytest.mark.parametrize(
    'error,version,match',
    [
        (ModuleNotFoundError("No module named 'envlogger'", name='envlogger'),
         None,
         r"EnvLogger is not installed\. rlds_lite records with EnvLogger 1\.2: "
         r"pip install 'envlogger==1\.2'"),
        (ImportError(GLIBC_ERROR), '1.3',
         r'EnvLogger 1\.3 is installed but its native modules need a newer C '
         r'library than this system has \(glibc .*\); EnvLogger 1\.3 wheels need '
         r"glibc >= 2\.38\. Install EnvLogger 1\.2.*pip install 'envlogger==1\.2'"
         r'.*GLIBC_2\.38'),
        (ModuleNotFoundError("No module named 'absl'", name='absl'), '1.2',
         r"EnvLogger 1\.2 cannot be imported: its dependency 'absl' is missing"),
        (ImportError('undefined symbol: _ZN6riegeli'), '1.2',
         r'EnvLogger 1\.2 failed to import: undefined symbol: _ZN6riegeli\. '
         r"rlds_lite supports EnvLogger 1\.2: pip install 'envlogger==1\.2'"),
    ],
    ids=['not_installed', 'glibc_too_old_1_3', 'missing_dependency', 'other'])
def test_import_errors_name_the_cause(broken_import, error, version, match):
  broken_import(error, version)
  with pytest.raises(rlds_envlogger.EnvLoggerUnavailableError,
                     match=match) as info:
    rlds_envlogger.import_envlogger()
  assert isinstance(info.value, ImportError)
  assert info.value.__cause__ is error


def test_none_in_sys_modules_reads_as_not_installed(monkeypatch):
  monkeypatch.setitem(sys.modules, 'envlogger', None)
  monkeypatch.setattr(envlogger_compat, '_installed_version', lambda: None)
  with pytest.raises(ImportError, match='EnvLogger is not installed'):
    rlds_envlogger.import_envlogger()


def test_record_and_read_raise_the_import_error(broken_import, tmp_path):
  from rlds_lite import envs  # pylint: disable=g-import-not-at-top
  broken_import(ImportError(GLIBC_ERROR), '1.3')
  env = envs.make('catch', seed=0)
  with pytest.raises(rlds_envlogger.EnvLoggerUnavailableError,
                     match='glibc >= 2.38'):
    rlds_envlogger.record(env, env.expert_policy, tmp_path / 'rec', 1,
                          progress=False)
  assert not (tmp_path / 'rec').exists()  # Nothing is created on failure.

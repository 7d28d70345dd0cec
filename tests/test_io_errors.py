"""`rlds_lite.commands.io_errors`: one line for a file system failure, and
what ``rlds-lite`` prints for one a command lets through."""

import errno

import pytest
import tensorflow as tf

from rlds_lite import cli
from rlds_lite.commands import io_errors

FULL = 'no space left on device (the disk is full)'


@pytest.mark.parametrize('error, output, line', [
    (OSError(errno.ENOSPC, 'No space left on device', '/d/out/.tmp-1/x'),
     '/d/out', f'/d/out: {FULL}'),
    (OSError(errno.ENOSPC, 'No space left on device', '/d/out/.tmp-1/x'),
     None, f'/d/out/.tmp-1/x: {FULL}'),
    (OSError(errno.ENOSPC, 'No space left on device'), None, FULL),
    (OSError(errno.EROFS, 'Read-only file system', '/ro/out'), '/ro/out',
     '/ro/out: read-only file system'),
    (PermissionError(errno.EACCES, 'Permission denied', '/d/x'), '/d/out',
     '/d/x: permission denied'),
    (OSError("Unable to synchronously create dataset (file write failed: "
             "time = now\n, filename = '/d/tmp1.h5', file descriptor = 3, "
             "errno = 28, error message = 'No space left on device')"),
     '/d/out.h5', f'/d/out.h5: {FULL}'),
    (tf.errors.ResourceExhaustedError(
        None, None, '/d/out/.1.0.0.incomplete-1/.shard-2-00001; No space '
        'left on device'), '/d/out', f'/d/out: {FULL}'),
    (tf.errors.ResourceExhaustedError(
        None, None, '/d/out/.shard-2; No space left on device'), None,
     f'/d/out/.shard-2: {FULL}'),
    (tf.errors.PermissionDeniedError(
        None, None, '/ro/.out.incomplete-1; Read-only file system'),
     '/ro/out', '/ro/out: read-only file system'),
    (tf.errors.OutOfRangeError(None, None, '/d/x; File too large'), '/d/o',
     '/d/o: file too large'),
    (NotADirectoryError('convert: /f/x: its directory /f is not a '
                        'directory'), '/f/x',
     'convert: /f/x: its directory /f is not a directory'),
], ids=['full-disk-names-the-output', 'full-disk-no-output',
        'full-disk-no-path-at-all', 'read-only',
        'permission-denied-names-its-file', 'hdf5-errno-in-text',
        'tf-full-disk', 'tf-full-disk-no-output', 'tf-read-only',
        'tf-file-too-large', 'own-message'])
def test_file_system_errors_are_one_line(error, output, line):
  assert io_errors.describe(error, output) == line


def test_inside_a_file_names_the_file(tmp_path):
  file = tmp_path / 'notes.txt'
  file.write_text('')
  error = tf.errors.FailedPreconditionError(
      None, None, f'{file} is not a directory')
  assert io_errors.describe(error, f'{file}/out/1.0.0') == (
      f'{file}/out/1.0.0: its directory {file} is not a directory')


@pytest.mark.parametrize('error', [
    TypeError('a bug'), KeyError('x'), RuntimeError('x'),
    tf.errors.ResourceExhaustedError(None, None, 'OOM when allocating tensor'),
    tf.errors.OutOfRangeError(None, None, 'End of sequence'),
    tf.errors.FailedPreconditionError(None, None, 'Table not initialized.'),
], ids=['type-error', 'key-error', 'runtime-error', 'out-of-memory',
        'end-of-sequence', 'not-the-file-system'])
def test_other_errors_are_not_file_system_errors(error):
  assert io_errors.describe(error, '/d/out') is None


def test_the_cli_prints_one_line_and_exits_2(monkeypatch, capsys, tmp_path):
  from rlds_lite.commands import filter as filter_command  # pylint: disable=g-import-not-at-top

  def fail(args):
    raise OSError(errno.ENOSPC, 'No space left on device',
                  f'{args.out}/toy/.1.0.0.incomplete-1/.shard-1')

  monkeypatch.setattr(filter_command, 'run', fail)
  out = str(tmp_path / 'out')
  assert cli.main(['filter', 'src', '--out', out]) == 2
  assert capsys.readouterr() == ('', f'rlds-lite filter: {out}: {FULL}\n')


def test_the_cli_keeps_a_bug_a_traceback(monkeypatch):
  from rlds_lite.commands import filter as filter_command  # pylint: disable=g-import-not-at-top

  def fail(args):
    raise AttributeError('a bug')

  monkeypatch.setattr(filter_command, 'run', fail)
  with pytest.raises(AttributeError, match='a bug'):
    cli.main(['filter', 'src', '--out', '/d/out'])

"""op_context.named: the public function's name put before an escaping error, once."""

import threading
import warnings

import pytest
import tensorflow as tf

from rlds_lite import op_context


def _raise(error):
  raise error


@op_context.named('outer')
def _outer(error):
  return _inner(error)


@op_context.named('inner')
def _inner(error):
  raise error


def _generator(error):
  yield 1
  raise error


@pytest.mark.parametrize('run, error, expected', [
    # Prefixed once, in place.
    (lambda e: _inner(e), ValueError('size must be a positive int, got 0.'),
     ('inner: size must be a positive int, got 0.',)),
    (lambda e: _inner(e), TypeError('seed must be an int, got str.'),
     ('inner: seed must be an int, got str.',)),
    (lambda e: _inner(e), FileNotFoundError('dataset directory x does not exist.'),
     ('inner: dataset directory x does not exist.',)),
    # Nested: the outermost name, never both.
    (lambda e: _outer(e), ValueError('bad.'), ('outer: bad.',)),
    # Already prefixed (by that name, or Python's own "f()" wording): kept.
    (lambda e: _inner(e), ValueError('inner: bad.'), ('inner: bad.',)),
    (lambda e: _inner(e), TypeError("inner() got an unexpected keyword argument 'x'"),
     ("inner() got an unexpected keyword argument 'x'",)),
    # Only the first argument changes; a non-str one is left as it is.
    (lambda e: _inner(e), ValueError('bad.', 7), ('inner: bad.', 7)),
    (lambda e: _inner(e), ValueError(7), (7,)),
    (lambda e: _inner(e), ValueError(), ()),
    (lambda e: _inner(e), FileNotFoundError(2, 'No such file'), (2, 'No such file')),
    # Other types, and subclasses (which name their own context): untouched.
    (lambda e: _inner(e), KeyError('x'), ('x',)),
    (lambda e: _inner(e), RuntimeError('bad.'), ('bad.',)),
    (lambda e: _inner(e), UnicodeDecodeError('utf-8', b'\xff', 0, 1, 'bad'),
     ('utf-8', b'\xff', 0, 1, 'bad')),
    (lambda e: _inner(e), type('Sub', (ValueError,), {})('bad.'), ('bad.',)),
], ids=['value', 'type', 'file-not-found', 'nested-outer-wins', 'already-prefixed',
        'python-wording', 'more-args', 'non-str', 'no-args', 'errno', 'key-error',
        'runtime-error', 'unicode-error', 'subclass'])
def test_the_prefix(run, error, expected):
  with pytest.raises(type(error)) as caught:
    run(error)
  assert caught.value is error   # The same object, re-raised.
  assert caught.value.args == expected


def test_a_tf_error_is_untouched():
  error = tf.errors.InvalidArgumentError(None, None, 'bad.')
  with pytest.raises(tf.errors.InvalidArgumentError) as caught:
    _inner(error)
  assert caught.value is error and caught.value.message == 'bad.'
  assert str(caught.value) == str(tf.errors.InvalidArgumentError(None, None, 'bad.'))


def test_a_block_and_a_generator_consumed_inside_it():
  with pytest.raises(ValueError) as caught:
    with op_context.named('block'):
      list(_generator(ValueError('late.')))
  assert str(caught.value) == 'block: late.'


def test_an_error_in_a_tf_function_trace_is_prefixed():

  @op_context.named('vector_op')
  def vector_op(x):
    if x.shape.rank != 1:
      raise ValueError(f'x must be a vector, got rank {x.shape.rank}.')
    return x

  @tf.function
  def traced(x):
    return vector_op(x)

  # The public function inside the trace: autograph re-raises its message.
  with pytest.raises(ValueError) as caught:
    traced(tf.zeros([2, 2]))
  assert 'ValueError: vector_op: x must be a vector, got rank 2.' in str(
      caught.value)
  # A block around the traced call: its name starts the message, once.
  with pytest.raises(ValueError) as caught:
    with op_context.named('outer'):
      traced(tf.zeros([3, 3]))
  assert str(caught.value).startswith('outer: ')
  assert str(caught.value).count('outer: ') == 1


def test_an_error_in_a_dataset_map_trace_is_prefixed_once():

  @op_context.named('windows')
  def windows(steps):
    raise ValueError('size must be a positive int, got 0.')

  with pytest.raises(ValueError) as caught:
    tf.data.Dataset.range(3).map(lambda x: windows({'x': x}))
  message = str(caught.value)
  assert 'windows: size must be a positive int, got 0.' in message
  assert message.count('windows: size') == 1


def test_the_traceback_and_cause_are_kept():
  cause = KeyError('inner')
  error = ValueError('bad.')
  try:
    try:
      raise cause
    except KeyError as e:
      with op_context.named('op'):
        raise error from e
  except ValueError as e:
    caught = e
  assert caught is error and caught.__cause__ is cause
  assert caught.args == ('op: bad.',)
  frames = []
  tb = caught.__traceback__
  while tb is not None:
    frames.append(tb.tb_frame.f_code.co_name)
    tb = tb.tb_next
  assert frames[-1] == 'test_the_traceback_and_cause_are_kept'


def test_the_active_name_is_reset_after_an_error():
  assert op_context.current() is None
  with pytest.raises(ValueError, match='^first: bad.$'):
    with op_context.named('first'):
      _raise(ValueError('bad.'))
  assert op_context.current() is None
  with pytest.raises(ValueError, match='^second: bad.$'):   # Not 'first: '.
    with op_context.named('second'):
      _raise(ValueError('bad.'))
  assert op_context.current() is None


def test_threads_do_not_share_the_active_name():
  seen = {}
  started, release = threading.Event(), threading.Event()

  def other():
    started.set()
    release.wait(10)
    seen['other'] = op_context.current()

  thread = threading.Thread(target=other)
  thread.start()
  started.wait(10)
  with op_context.named('main'):
    release.set()
    thread.join(10)
    seen['main'] = op_context.current()
  assert seen == {'other': None, 'main': 'main'}


def test_repr():
  assert repr(op_context.named('frame_stack')) == "named('frame_stack')"


def _steps():
  return tf.data.Dataset.from_tensors({'steps': {'x': tf.range(5)}})


def _sampler():
  from rlds_lite.pipeline import pools  # pylint: disable=g-import-not-at-top
  return pools.Sampler(
      samples=lambda e: e['steps'], plan=lambda e: (e['steps'], tf.range(5), {}),
      assemble=lambda steps, index, values: {'x': tf.gather(steps['x'], index)})


def _old_op_calls():
  from rlds_lite import byte_sizes  # pylint: disable=g-import-not-at-top
  from rlds_lite import images  # pylint: disable=g-import-not-at-top
  from rlds_lite import source  # pylint: disable=g-import-not-at-top
  from rlds_lite.pipeline import pools  # pylint: disable=g-import-not-at-top
  from rlds_lite.pipeline import sliding  # pylint: disable=g-import-not-at-top
  missing = '/no/such/dir'
  gone = f"mine: dataset directory '{missing}' does not exist"
  positive = 'mine: batch_size must be a positive int, got 0.'
  return {
      'open': (lambda: source.open(missing, op='mine'), FileNotFoundError, gone),
      'as_source': (lambda: source.as_source(missing, op='mine'),
                    FileNotFoundError, gone),
      'open_builder': (lambda: source.open_builder(missing, op='mine'),
                       FileNotFoundError, gone),
      'load_encoded': (lambda: images.load_encoded(missing, op='mine'),
                       FileNotFoundError, gone),
      'pooled_batches': (lambda: pools.pooled_batches(
          _steps(), _sampler(), 0, op='mine'), ValueError, positive),
      'sliding_step_batches': (lambda: sliding.sliding_step_batches(
          _steps().map(lambda e: e['steps']), 0, block_episodes=1, op='mine'),
                               ValueError, positive),
      'parse_bytes': (lambda: byte_sizes.parse_bytes('lots', op='mine'),
                      ValueError, 'mine: memory_budget must be a positive '
                      "number of bytes or a string like '512MB', got 'lots'."),
  }


@pytest.mark.parametrize('function', sorted(_old_op_calls()))
def test_the_old_op_keyword_still_names_the_errors_and_warns_once(function):
  from rlds_lite import option_objects  # pylint: disable=g-import-not-at-top
  call, kind, message = _old_op_calls()[function]
  option_objects._WARNED.discard((function, 'op'))  # pylint: disable=protected-access
  with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter('always')
    for _ in range(2):
      with pytest.raises(kind) as error:
        call()
      assert str(error.value).startswith(message)
  assert [str(w.message) for w in caught
          if issubclass(w.category, DeprecationWarning)] == [
              f'{function}: op= is now `with rlds_lite.op_context.named(op): '
              '...` around the call; the old keyword will go in a later '
              'release.']

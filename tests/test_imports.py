"""The package's import graph: no cycles and no upward imports (docs/architecture.md's floors)."""

import ast
import functools
import pathlib
from typing import Dict, List, Set

PACKAGE = pathlib.Path(__file__).parent.parent / 'rlds_lite'


def _module_names() -> Dict[str, pathlib.Path]:
  names = {}
  for path in PACKAGE.rglob('*.py'):
    parts = path.relative_to(PACKAGE.parent).with_suffix('').parts
    if parts[-1] == '__init__':
      parts = parts[:-1]
    names['.'.join(parts)] = path
  return names


def _is_type_checking(node: ast.AST) -> bool:
  return isinstance(node, ast.If) and 'TYPE_CHECKING' in ast.unparse(node.test)


def _imports(tree: ast.AST, modules: Set[str]) -> Set[str]:
  """The package's modules a module imports (anywhere, but under TYPE_CHECKING)."""
  found = set()
  skipped = {id(n) for top in ast.walk(tree) if _is_type_checking(top)
             for n in ast.walk(top)}
  for node in ast.walk(tree):
    if id(node) in skipped:
      continue
    if isinstance(node, ast.Import):
      found.update(a.name for a in node.names if a.name in modules)
    elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
      for alias in node.names:
        name = f'{node.module}.{alias.name}'
        found.add(name if name in modules else node.module)
  return {m for m in found if m in modules and m != 'rlds_lite'}


def _with_packages(imported: Set[str], importer: str,
                   modules: Set[str]) -> Set[str]:
  """Also the packages Python initialises first: ``a.b.c`` runs ``a.b``'s
  ``__init__`` (unless the importer is inside ``a.b``)."""
  found = set(imported)
  for name in imported:
    parts = name.split('.')
    for end in range(2, len(parts)):
      package = '.'.join(parts[:end])
      if package in modules and not importer.startswith(package + '.'):
        found.add(package)
  return found


@functools.lru_cache(maxsize=1)
def import_graph() -> Dict[str, Set[str]]:
  """Module -> the package's modules importing it runs (but ``rlds_lite``'s lazy one)."""
  modules = _module_names()
  graph = {}
  for name, path in modules.items():
    if name == 'rlds_lite':  # Its names are imported on first use (PEP 562).
      continue
    imported = _imports(ast.parse(path.read_text()), set(modules))
    graph[name] = _with_packages(imported, name, set(modules)) - {name}
  return graph


def cycles(graph: Dict[str, Set[str]]) -> List[List[str]]:
  """The strongly connected components of more than one module (Tarjan)."""
  index, low, stack, on_stack, found = {}, {}, [], set(), []

  def visit(node: str) -> None:
    index[node] = low[node] = len(index)
    stack.append(node)
    on_stack.add(node)
    for nxt in sorted(graph[node]):
      if nxt not in index:
        visit(nxt)
        low[node] = min(low[node], low[nxt])
      elif nxt in on_stack:
        low[node] = min(low[node], index[nxt])
    if low[node] == index[node]:
      component = []
      while True:
        member = stack.pop()
        on_stack.discard(member)
        component.append(member)
        if member == node:
          break
      if len(component) > 1:
        found.append(sorted(component))

  for node in sorted(graph):
    if node not in index:
      visit(node)
  return found


def test_the_cycle_finder_finds_a_cycle():
  graph = {'a': {'b'}, 'b': {'c'}, 'c': {'a'}, 'd': {'a'}}
  assert cycles(graph) == [['a', 'b', 'c']]
  assert cycles({'a': {'b'}, 'b': set()}) == []


def test_the_graph_reads_imports_inside_functions():
  graph = import_graph()
  assert 'rlds_lite.source' in graph['rlds_lite.loading']
  assert 'rlds_lite.decoding' in graph['rlds_lite.source']


def test_a_package_is_initialised_before_its_modules():
  graph = import_graph()
  assert 'rlds_lite.catalog' in graph['rlds_lite.loading']
  assert 'rlds_lite.pipeline' not in graph['rlds_lite.pipeline.shuffling']


def test_no_import_cycles():
  assert cycles(import_graph()) == []


FLOORS = {
    # 0 ground: names, paths, bounds, per-episode ops, bars.
    'lazy_names': 0, 'rlds_names': 0, 'rlds_types': 0, 'validation': 0, 'metadata': 0,
    'nest_paths': 0, 'nesting': 0, 'byte_sizes': 0, 'progress': 0, 'gif': 0, 'exit_guard': 0,
    'overwriting': 0, 'option_objects': 0, 'beam_runs': 0, 'op_context': 0, 'dense': 0, 'transformations': 0, 'video': 0,
    'frameworks': 0, 'envs': 0, 'tfrecord_frames': 0,
    # 1 files: the TFDS file protocol, publishing, a dataset's files.
    'tfds.__init__': 1, 'tfds.publish': 1, 'tfds.locking': 1,
    'tfds.example_wire': 1, 'tfds.example_fields': 1, 'tfds.png': 1,
    'tfds.encoding': 1,
    'tfds.config_generator': 1, 'tfds.features': 1, 'tfds.shards': 1,
    'tfds.leftovers': 1, 'tfds.episode_writer': 1, 'atomic_output': 1,
    'dataset_files': 1,
    # 2 decoding: stored examples to steps, frames, read errors named.
    'decoding': 2, 'images.__init__': 2, 'images.decode': 2,
    'images.augment': 2, 'diagnosis': 2,
    # 3 the opened dataset.
    'source': 3,
    # 4 readers and tools.
    'loading': 4, 'images.fields': 4, 'stats': 4, 'checks': 4, 'catalog': 4,
    'sample_kinds': 4,
    # 5 training batches.
    'pipeline': 5, 'random_access': 5,
    # 6 formats, viewer, builders, recording.
    'convert': 6, 'view': 6, 'tfds': 6, 'envlogger': 6, 'synthetic': 6,
    'replay': 6, 'record': 6, 'octo': 6,
    # 7 the command line.
    'commands': 7, 'cli': 7, 'demo': 7,
}
"""Each module's floor (the longest matching prefix; ``pkg.__init__`` for a
package's own ``__init__``): a module imports only from its floor or below."""


def floor(module: str) -> int:
  parts = module.split('.')[1:]
  if (PACKAGE / '/'.join(parts) / '__init__.py').exists():
    own = '.'.join(parts) + '.__init__'
    if own in FLOORS:
      return FLOORS[own]
  for end in range(len(parts), 0, -1):
    if '.'.join(parts[:end]) in FLOORS:
      return FLOORS['.'.join(parts[:end])]
  raise KeyError(f'{module} has no floor: add it to FLOORS (and to '
                 'docs/architecture.md)')


def test_every_module_has_a_floor():
  assert {m: floor(m) for m in import_graph()}  # Raises for a missing one.


def test_no_upward_imports():
  upward = sorted((a, b) for a, imported in import_graph().items()
                  for b in imported if floor(b) > floor(a))
  assert upward == []


def test_a_package_init_has_its_own_floor():
  assert (floor('rlds_lite.tfds'), floor('rlds_lite.tfds.publish'),
          floor('rlds_lite.tfds.builder')) == (1, 1, 6)
  assert floor('rlds_lite.images.fields') == 4 > floor('rlds_lite.images') == 2


def _function_imports(tree: ast.AST) -> Set[str]:
  """The package's modules a module imports inside its functions."""
  found = set()
  for function in ast.walk(tree):
    if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
      for node in ast.walk(function):
        if isinstance(node, ast.ImportFrom) and (node.module or '').startswith(
            'rlds_lite'):
          found.update(f'{node.module}.{a.name}' for a in node.names)
        elif isinstance(node, ast.Import):
          found.update(a.name for a in node.names
                       if a.name.startswith('rlds_lite'))
  return found


LAZY_BY_DESIGN = ('rlds_lite.commands', 'rlds_lite.cli')
"""The command line imports what it runs when it runs it: ``--help`` and bad
input answer before TensorFlow loads."""
OPTIONAL = {'rlds_lite.tfds.beam'}
"""Modules that need an optional dependency (apache_beam)."""


def test_imports_inside_functions_only_where_the_design_needs_them():
  found = {}
  for name, path in _module_names().items():
    if name.startswith(LAZY_BY_DESIGN):
      continue
    lazy = _function_imports(ast.parse(path.read_text())) - OPTIONAL
    if lazy:
      found[name] = sorted(lazy)
  assert found == {}


def test_function_imports_are_found():
  tree = ast.parse('import os\ndef f():\n  from rlds_lite import source\n'
                   '  import rlds_lite.decoding\n')
  assert _function_imports(tree) == {'rlds_lite.source', 'rlds_lite.decoding'}

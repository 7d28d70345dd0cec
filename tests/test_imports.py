"""The package's import graph: no cycles, counting imports inside functions too."""

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

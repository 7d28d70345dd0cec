"""`rlds_lite.convert.registry`: every format resolves; an unknown one is one line."""

import inspect

import pytest

from rlds_lite import cli
from rlds_lite.commands import convert as convert_command
from rlds_lite.convert import files
from rlds_lite.convert import registry

RESOLVED = {
    # name: (module, reader, writer, layout)
    'rlds': ('rlds_dirs', 'from_rlds', 'to_rlds', 'own'),
    'minari': ('minari', 'from_minari', 'to_minari_root', 'own'),
    'd4rl': ('d4rl', 'from_d4rl', 'to_d4rl', 'file'),
    'il': ('il_representations', 'from_il_dict', 'to_il_dict', 'npz'),
    'webdataset': ('il_representations', 'from_webdataset', 'to_webdataset',
                   'directory'),
    'ted': ('ted', 'from_ted', 'to_ted_h5', 'file'),
    'alf': ('alf', 'from_alf', 'to_alf', 'npz'),
    'lerobot': ('lerobot', 'from_lerobot', 'to_lerobot_dir', 'own'),
}

UNKNOWN = ("unknown format 'parquet'; known: rlds, minari, d4rl, il, "
           'webdataset, ted, alf, lerobot')


def test_the_registry_lists_every_format_once_in_order():
  assert list(registry.FORMATS) == list(RESOLVED)
  assert files.FORMATS is registry.FORMATS
  assert all(name == fmt.name for name, fmt in registry.FORMATS.items())


@pytest.mark.parametrize('name', list(RESOLVED))
def test_every_format_resolves_to_functions_taking_its_options(name):
  fmt = registry.get(name)
  reader, writer = fmt.functions()
  module, reader_name, writer_name, layout = RESOLVED[name]
  assert (reader.__module__, writer.__module__) == (
      f'rlds_lite.convert.{module}',) * 2
  assert (reader.__name__, writer.__name__, fmt.layout) == (
      reader_name, writer_name, layout)
  for function, options in ((reader, fmt.read_options),
                            (writer, fmt.write_options)):
    assert options <= set(inspect.signature(function).parameters), function
  assert convert_command.FLAGS[f'{reader_name}()'] == f'--from {name}'


@pytest.mark.parametrize('call', [
    lambda tmp: registry.get('parquet'),
    lambda tmp: files.read_episodes('parquet', tmp),
    lambda tmp: files.write_episodes('parquet', [], tmp / 'x'),
    lambda tmp: files.convert(tmp, tmp / 'x', from_format='parquet',
                              to_format='ted'),
    lambda tmp: files.convert(tmp, tmp / 'x', from_format='ted',
                              to_format='parquet'),
], ids=['get', 'read_episodes', 'write_episodes', 'convert-from',
        'convert-to'])
def test_an_unknown_format_is_one_line(tmp_path, call):
  with pytest.raises(ValueError) as error:
    call(tmp_path)
  assert str(error.value) == UNKNOWN
  assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize('flag', ['--from', '--to'])
def test_the_command_refuses_an_unknown_format_in_one_line(capsys, flag):
  other = '--to' if flag == '--from' else '--from'
  with pytest.raises(SystemExit) as exit_info:
    cli.main(['convert', flag, 'parquet', other, 'ted', 'a', 'b'])
  assert exit_info.value.code == 2
  assert capsys.readouterr().err == (
      f"rlds-lite convert: argument {flag}: invalid choice: 'parquet' (choose "
      "from 'alf', 'd4rl', 'il', 'lerobot', 'minari', 'rlds', 'ted', "
      "'webdataset') (see rlds-lite convert --help)\n")


def test_the_command_help_lists_every_format_with_its_extra(capsys):
  with pytest.raises(SystemExit):
    cli.main(['convert', '--help'])
  text = ''.join(capsys.readouterr().out.split())  # Wrapped anywhere.
  assert [name for name, fmt in registry.FORMATS.items()
          if ''.join(fmt.help().split()) not in text] == []
  assert ("lerobot:aLeRobotDatasetdirectory(v3.0;readsv2.xtoo)"
          "(pipinstall'rlds_lite[lerobot]')") in text

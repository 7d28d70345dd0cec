"""A headless chromium page (Debian's, driven by Playwright) that may reach only a local server."""

import contextlib
import os
from typing import Iterator, Tuple

from playwright import sync_api

CHROMIUM = '/usr/bin/chromium'
FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic',
         '--no-first-run', '--disable-background-networking',
         '--disable-component-update', '--disable-sync']
TIMEOUT_MS = 20_000


@contextlib.contextmanager
def local_page(host: str, viewport: Tuple[int, int]) -> Iterator[sync_api.Page]:
  """A page whose requests outside ``http://host:`` are refused; at the end, none was made and no JavaScript failed."""
  assert os.access(CHROMIUM, os.X_OK), (
      f'{CHROMIUM} is missing: apt-get install chromium (make test does).')
  outside, errors = [], []
  def only_local(route):
    if route.request.url.startswith(f'http://{host}:'):
      route.continue_()
    else:
      outside.append(route.request.url)
      route.abort()
  with sync_api.sync_playwright() as playwright:
    chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
    width, height = viewport
    page = chromium.new_page(viewport={'width': width, 'height': height})
    page.set_default_timeout(TIMEOUT_MS)
    page.on('pageerror', lambda error: errors.append(str(error)))
    page.route('**/*', only_local)
    yield page
    chromium.close()
  assert not outside, f'requests left 127.0.0.1: {outside}'
  assert not errors, f'JavaScript errors: {errors}'

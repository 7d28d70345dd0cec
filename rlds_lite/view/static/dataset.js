// The dataset page: overview, statistics and the episode table.
'use strict';

const config = window.VIEWER;
const split = config.split;
const MAX_ELEMENTS = 8;  // Statistics rows shown per field.
const table = { sort: 'index', order: 'asc', offset: 0, limit: 100, request: 0 };

function episodeUrl(index) {
  return `/episode/${encodeURIComponent(split)}/${index}`;
}

async function loadOverview() {
  const info = await fetchJSON('/api/dataset');
  document.getElementById('dataset-meta').textContent =
      `version ${info.version} · ${info.file_format || ''} · ${info.path}`;
  document.getElementById('dataset-description').textContent = info.description;
  const splits = document.querySelector('#splits tbody');
  for (const s of info.splits) {
    splits.append(el('tr', {}, el('td', {}, el('a', { href: `/?split=${encodeURIComponent(s.name)}` }, s.name)),
                     el('td', {}, s.episodes), el('td', {}, s.shards), el('td', {}, bytes(s.bytes))));
  }
  const features = document.querySelector('#features tbody');
  for (const f of info.features) {
    const camera = info.cameras.includes(f.path) ? ' (camera)' : '';
    features.append(el('tr', {}, el('td', {}, f.path), el('td', {}, f.level),
                       el('td', {}, f.type + (f.encoding ? ` ${f.encoding}` : '') + camera),
                       el('td', {}, `[${f.shape.map((d) => (d === null ? '?' : d)).join(', ')}]`),
                       el('td', {}, f.dtype)));
  }
  const select = document.getElementById('split-select');
  for (const name of config.splits) select.append(el('option', { value: name, selected: name === split }, name));
  select.addEventListener('change', () => { window.location.search = `?split=${encodeURIComponent(select.value)}`; });
}

function flatten(values) {
  return Array.isArray(values) ? values.flat(Infinity) : [values];
}

function statsRows(name, field) {
  const columns = ['mean', 'std', 'min', 'p01', 'p50', 'p99', 'max'].map((c) => flatten(field[c]));
  const size = columns[0].length;
  const scalar = field.shape.length === 0;
  const rows = [];
  for (let i = 0; i < Math.min(size, MAX_ELEMENTS); i += 1) {
    rows.push(el('tr', {}, el('td', {}, scalar ? name : `${name}[${i}]`), el('td', {}, field.count),
                 columns.map((c) => el('td', {}, fmt(c[i])))));
  }
  if (size > MAX_ELEMENTS) rows.push(el('tr', {}, el('td', { colspan: 9, class: 'muted' }, `${name}: ${size - MAX_ELEMENTS} more elements`)));
  return rows;
}

function sum(values) {
  return flatten(values).reduce((total, value) => total + value, 0);
}

// "observation (3 NaN, 1 inf)" per field holding non-finite values.
function nonFinite(fields) {
  const parts = [];
  for (const [path, field] of Object.entries(fields)) {
    const counts = [[sum(field.nan_count || 0), 'NaN'], [sum(field.inf_count || 0), 'inf']]
        .filter(([n]) => n > 0).map(([n, what]) => `${n} ${what}`);
    if (counts.length) parts.push(`${path} (${counts.join(', ')})`);
  }
  return parts;
}

async function loadStats() {
  const status = document.getElementById('stats-status');
  try {
    const stats = await fetchJSON(`/api/stats/${encodeURIComponent(split)}`);
    status.hidden = true;
    document.getElementById('stats-counts').textContent =
        `${stats.num_episodes} episodes, ${stats.num_steps} steps: ` +
        `${stats.num_terminated} terminated, ${stats.num_truncated} truncated`;
    const body = document.querySelector('#stats tbody');
    body.append(...statsRows('episode length', stats.episode_length));
    if (stats.episode_return) body.append(...statsRows('episode return', stats.episode_return));
    for (const [path, field] of Object.entries(stats.fields)) body.append(...statsRows(path, field));
    const skipped = Object.entries(stats.skipped).map(([path, why]) => `${path} (${why})`);
    if (skipped.length) document.getElementById('stats-skipped').textContent = `No statistics for: ${skipped.join(', ')}.`;
    const leftOut = Object.entries(stats.last_step_values || {}).map(
        ([path, n]) => `${path} (${n} episode${n === 1 ? '' : 's'})`);
    if (leftOut.length && stats.source.last_step === 'invalid') {
      const note = document.getElementById('stats-last-step');
      note.textContent = `Left out: non-zero last-step values of ${leftOut.join(', ')}. RLDS says a last ` +
          "step's action, reward and discount are invalid; rlds-lite view --last-step valid counts them.";
      note.hidden = false;
    }
    const notFinite = nonFinite(stats.fields);
    if (notFinite.length) {
      const note = document.getElementById('stats-nonfinite');
      note.textContent = `Not finite: ${notFinite.join(', ')}. The statistics above are those ` +
          'of the finite values (count counts them all).';
      note.hidden = false;
    }
  } catch (error) {
    showError(status, error);
  }
}

function tableQuery() {
  const params = new URLSearchParams({ sort: table.sort, order: table.order,
                                       offset: table.offset, limit: table.limit });
  for (const input of document.querySelectorAll('#filters input, #filters select')) {
    if (input.value.trim() !== '') params.set(input.name, input.value.trim());
  }
  return params.toString();
}

const COLUMN_TITLES = { index: '#', length: 'length', return: 'return', last_reward: 'last reward',
                        status: 'ending', instruction: 'instruction' };

function renderHeader(columns) {
  const head = document.querySelector('#episodes thead');
  head.replaceChildren(el('tr', {}, columns.map((column) => {
    const sorted = column === table.sort;
    const arrow = sorted ? (table.order === 'asc' ? ' ▲' : ' ▼') : '';
    return el('th', { 'data-sort': column, class: sorted ? 'sorted' : '',
                      onclick: () => sortBy(column) }, (COLUMN_TITLES[column] || column) + arrow);
  })));
}

function cell(row, column) {
  switch (column) {
    case 'index': return el('a', { href: episodeUrl(row.index) }, row.index);
    case 'length': return row.length;
    case 'return': return fmt(row.return);
    case 'last_reward': return fmt(row.last_reward);
    case 'status': {
      if (row.terminated === null) return fmt(null);
      const status = row.terminated ? 'terminated' : (row.truncated ? 'truncated' : 'empty');
      return el('span', { class: `badge ${status}` }, status);
    }
    case 'instruction': return row.instructions.join(' | ');
    default: return fmt(row.metadata[column]);
  }
}

async function loadTable() {
  const query = tableQuery();
  const request = ++table.request;
  const status = document.getElementById('episodes-status');
  const node = document.getElementById('episodes');
  node.dataset.state = 'loading';
  try {
    const page = await fetchJSON(`/api/episodes/${encodeURIComponent(split)}?${query}`);
    if (request !== table.request) return;  // A newer query is on its way.
    status.hidden = true;
    status.classList.remove('error');
    const note = document.getElementById('episodes-last-step');
    note.hidden = !page.left_out_last_rewards;
    const n = page.left_out_last_rewards;
    note.textContent = `${n} episode${n === 1 ? ' has' : 's have'} a non-zero last reward, which return ` +
        "leaves out (RLDS says a last step's reward is invalid): see the last reward column; " +
        'rlds-lite view --last-step valid counts it.';
    renderHeader(page.columns);
    const body = node.querySelector('tbody');
    body.replaceChildren(...page.rows.map((row) => el(
        'tr', { 'data-index': row.index, onclick: () => { window.location.href = episodeUrl(row.index); } },
        page.columns.map((column) => el('td', { class: `col-${column}` }, cell(row, column))))));
    const last = Math.min(page.offset + page.rows.length, page.matched);
    document.getElementById('page-info').textContent = page.matched
      ? `${page.offset + 1}–${last} of ${page.matched} matching (${page.total} episodes)`
      : `none of ${page.total} episodes match`;
    document.getElementById('page-prev').disabled = page.offset === 0;
    document.getElementById('page-next').disabled = last >= page.matched;
    node.dataset.query = query;
    node.dataset.state = 'ready';
  } catch (error) {
    if (request !== table.request) return;
    showError(status, error);
    node.dataset.state = 'error';
  }
}

function sortBy(column) {
  table.order = table.sort === column && table.order === 'asc' ? 'desc' : 'asc';
  table.sort = column;
  table.offset = 0;
  loadTable();
}

let filterTimer = null;
function onFilter() {
  clearTimeout(filterTimer);
  table.offset = 0;
  filterTimer = setTimeout(loadTable, 200);
}

document.getElementById('filters').addEventListener('input', onFilter);
document.getElementById('filters').addEventListener('reset', () => setTimeout(onFilter, 0));
document.getElementById('filters').addEventListener('submit', (event) => event.preventDefault());
document.getElementById('page-prev').addEventListener('click', () => {
  table.offset = Math.max(0, table.offset - table.limit); loadTable();
});
document.getElementById('page-next').addEventListener('click', () => {
  table.offset += table.limit; loadTable();
});

loadOverview().catch((error) => showError(document.getElementById('dataset-description'), error));
loadTable();
loadStats();

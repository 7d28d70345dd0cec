// The episode page: camera videos, plots with a cursor that follows them.
'use strict';

const config = window.VIEWER;
const FLAG_STYLE = {
  is_first: { symbol: 'triangle-right', color: '#1a7f37' },
  is_last: { symbol: 'square', color: '#67707c' },
  is_terminal: { symbol: 'x', color: '#d1242f' },
};
const PANEL_TITLES = { action: 'action', state: 'state (observation)', reward: 'reward',
                       discount: 'discount', other: 'other' };

let episode = null;
let fps = config.fps;
let length = 0;
let videos = [];
let master = null;  // The first camera drives the others and the cursor.
let step = -1;
let cursorFrame = null;

// --- The clock: the master video, or a timer when there is no camera. ---
const timer = { playing: false, time: 0, last: 0, rate: 1 };

function stepAt(seconds) {
  return Math.max(0, Math.min(length - 1, Math.floor(seconds * fps + 1e-3)));
}

function isPlaying() {
  return master ? !master.paused && !master.ended : timer.playing;
}

function play() {
  if (master) {
    if (master.ended || stepAt(master.currentTime) >= length - 1) master.currentTime = 0;
    master.play();
  } else {
    if (step >= length - 1) timer.time = 0;
    timer.playing = true;
    timer.last = performance.now();
    requestAnimationFrame(tick);
    updateButton();
  }
}

function pause() {
  if (master) master.pause();
  else { timer.playing = false; updateButton(); }
}

function seekStep(target) {
  const s = Math.max(0, Math.min(length - 1, Math.round(target)));
  if (master) {
    master.currentTime = (s + 0.5) / fps;  // The middle of the step's frame.
  } else {
    timer.time = (s + 0.5) / fps;
  }
  showStep(s);
}

function setRate(rate) {
  timer.rate = rate;
  for (const v of videos) v.playbackRate = rate;
}

function tick(now) {
  if (!timer.playing) return;
  timer.time += ((now - timer.last) / 1000) * timer.rate;
  timer.last = now;
  if (timer.time >= length / fps) {
    timer.time = length / fps;
    timer.playing = false;
    updateButton();
  }
  showStep(stepAt(timer.time));
  if (timer.playing) requestAnimationFrame(tick);
}

function followers() {
  return videos.filter((v) => v !== master);
}

function syncFollowers(force) {
  for (const v of followers()) {
    if (force || Math.abs(v.currentTime - master.currentTime) > 0.6 / fps) v.currentTime = master.currentTime;
  }
}

function onVideoFrame(now, metadata) {
  if (!isPlaying()) {  // A frame presented as the video paused: its time rules.
    showStep(stepAt(master.currentTime));
    return;
  }
  showStep(Math.max(0, Math.min(length - 1, Math.round(metadata.mediaTime * fps))));
  syncFollowers(false);
  master.requestVideoFrameCallback(onVideoFrame);
}

function onAnimationFrame() {
  showStep(stepAt(master.currentTime));
  syncFollowers(false);
  if (isPlaying()) requestAnimationFrame(onAnimationFrame);
}

function attachMaster() {
  master.addEventListener('play', () => {
    syncFollowers(true);
    for (const v of followers()) v.play();
    updateButton();
    if ('requestVideoFrameCallback' in master) master.requestVideoFrameCallback(onVideoFrame);
    else requestAnimationFrame(onAnimationFrame);
  });
  for (const event of ['pause', 'ended']) {
    master.addEventListener(event, () => {
      for (const v of followers()) v.pause();
      const s = stepAt(master.currentTime);
      // Rest in the middle of the step's frame: the frame shown is then the
      // step's, whatever the time the pause landed on.
      if (!master.ended) master.currentTime = (s + 0.5) / fps;
      syncFollowers(true);
      updateButton();
      showStep(s);
    });
  }
  for (const event of ['seeked', 'timeupdate']) {
    master.addEventListener(event, () => {
      if (!isPlaying()) { syncFollowers(false); showStep(stepAt(master.currentTime)); }
    });
  }
  master.addEventListener('ratechange', () => {
    for (const v of followers()) v.playbackRate = master.playbackRate;
  });
}

function updateButton() {
  document.getElementById('play').textContent = isPlaying() ? '❚❚ pause' : '▶ play';
}

// --- What follows the clock: the label, the scrubber, the plot cursor. ---
function showStep(s) {
  if (s === step || length === 0) return;
  step = s;
  document.getElementById('scrubber').value = s;
  document.getElementById('step-label').textContent = `step ${s} / ${length - 1}`;
  document.body.dataset.step = s;
  if (cursorFrame === null) {
    cursorFrame = requestAnimationFrame(() => {
      cursorFrame = null;
      const plot = document.getElementById('plot');
      if (plot.layout) Plotly.relayout(plot, { 'shapes[0].x0': step, 'shapes[0].x1': step });
    });
  }
}

// --- Rendering. ---
// Plotly draws a subset of HTML (<a href>, <b>, <br>, ...) in trace names
// and titles: a dataset's strings reach it escaped, so they show as text.
function plotText(text) {
  return String(text).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

function renderHead() {
  const instruction = document.getElementById('instruction');
  if (episode.instructions.length) {
    instruction.textContent = episode.instructions.map((t) => `“${t}”`).join('  ·  ');
    instruction.hidden = false;
  }
  const ending = episode.terminated ? 'terminated' : (episode.truncated ? 'truncated' : null);
  document.getElementById('episode-summary').replaceChildren(
    `${episode.length} steps · return ${fmt(episode.return)} · `,
    ending ? el('span', { class: `badge ${ending}` }, ending) : (episode.length ? 'ending unknown' : 'no steps'),
    ` · ${fmt(fps)} steps per second`);
  const metadata = document.querySelector('#metadata tbody');
  for (const [key, value] of Object.entries(episode.metadata)) {
    metadata.append(el('tr', {}, el('td', {}, key), el('td', {}, fmt(value))));
  }
}

function renderCameras() {
  const box = document.getElementById('cameras');
  videos = episode.cameras.map((camera, i) => el('video', {
    src: camera.url, muted: '', playsinline: '', preload: 'auto', controls: i === 0 ? '' : false,
    'data-camera': camera.key, title: `${camera.key} (${camera.height}×${camera.width})`,
  }));
  for (const v of videos) v.muted = true;
  box.replaceChildren(...episode.cameras.map((camera, i) => el(
    'figure', {}, videos[i], el('figcaption', {}, `${camera.key} · ${camera.height}×${camera.width}`))));
  master = videos.length ? videos[0] : null;
  if (master) {
    attachMaster();
    for (const v of followers()) v.addEventListener('click', () => (isPlaying() ? pause() : play()));
  }
}

function renderPlot() {
  const panels = episode.panels;
  const steps = Array.from({ length }, (_, i) => i);
  const flagsHeight = 0.12;
  const gap = 0.05;
  const panelHeight = panels.length ? (1 - flagsHeight - gap * panels.length) / panels.length : 0;
  const layout = {
    height: 160 * panels.length + 120,
    margin: { l: 70, r: 10, t: 10, b: 40 },
    hovermode: 'x unified',
    showlegend: true,
    legend: { x: 1.01, y: 1, yanchor: 'top', tracegroupgap: 12, font: { size: 11 } },
    xaxis: { range: [-0.5, length - 0.5], title: { text: 'step' },
             anchor: `y${panels.length + 1}`, zeroline: false },
    shapes: [{ type: 'line', xref: 'x', yref: 'paper', x0: 0, x1: 0, y0: 0, y1: 1,
               line: { color: '#e4572e', width: 2 } }],
    annotations: [],
  };
  const traces = [];
  panels.forEach((panel, k) => {
    const axis = k === 0 ? 'y' : `y${k + 1}`;
    const top = 1 - k * (panelHeight + gap);
    layout[`yaxis${k === 0 ? '' : k + 1}`] = {
      domain: [top - panelHeight, top], anchor: 'x', zeroline: false,
      title: { text: plotText(PANEL_TITLES[panel.name] || panel.name), font: { size: 12 } },
    };
    for (const series of panel.series) {
      // The hover label takes the (escaped) name as data, not as template
      // text: a name holding %{...} is not filled in either.
      traces.push({ x: steps, y: series.values, name: plotText(series.name), xaxis: 'x',
                    yaxis: axis, mode: length > 200 ? 'lines' : 'lines+markers',
                    marker: { size: 4 }, legendgroup: panel.name, type: 'scatter',
                    hovertemplate: '%{y:.4g}<extra>%{fullData.name}</extra>' });
    }
  });
  const flagsAxis = `yaxis${panels.length + 1}`;
  layout[flagsAxis] = { domain: [0, flagsHeight], anchor: 'x', type: 'category', fixedrange: true,
                        categoryorder: 'array', categoryarray: ['is_terminal', 'is_last', 'is_first'],
                        range: [-0.6, 2.6], tickfont: { size: 11 } };
  for (const [flag, where] of Object.entries(episode.flags)) {
    const style = FLAG_STYLE[flag];
    traces.push({ x: where, y: where.map(() => flag), name: flag, xaxis: 'x',
                  yaxis: `y${panels.length + 1}`, mode: 'markers', type: 'scatter',
                  marker: { symbol: style.symbol, color: style.color, size: 11 },
                  hovertemplate: `${flag}<extra></extra>` });
    if (flag === 'is_terminal') {
      for (const t of where) {
        layout.shapes.push({ type: 'line', xref: 'x', yref: 'paper', x0: t, x1: t, y0: 0, y1: 1,
                             line: { color: style.color, width: 1, dash: 'dot' } });
      }
    }
  }
  const plot = document.getElementById('plot');
  return Plotly.newPlot(plot, traces, layout, { displaylogo: false, responsive: true }).then(() => {
    plot.on('plotly_click', (data) => {
      if (data.points && data.points.length) seekStep(data.points[0].x);
    });
  });
}

function renderNotes() {
  const notes = [];
  const invalid = episode.panels.flatMap((p) => p.series).some(
    (s) => episode.invalid_on_last.includes(s.path.split('/')[0]));
  if (invalid) notes.push(`The ${episode.invalid_on_last.join(', ')} of a last step are invalid in RLDS: not drawn.`);
  const left = Object.entries(episode.not_plotted).map(([path, why]) => `${path} (${why})`);
  if (left.length) notes.push(`Not plotted: ${left.join(', ')}.`);
  document.getElementById('plot-note').textContent = notes.join(' ');
}

function setupTransport() {
  const scrubber = document.getElementById('scrubber');
  scrubber.max = Math.max(0, length - 1);
  scrubber.addEventListener('input', () => { pause(); seekStep(Number(scrubber.value)); });
  document.getElementById('play').addEventListener('click', () => (isPlaying() ? pause() : play()));
  document.getElementById('speed').addEventListener('change', (e) => setRate(Number(e.target.value)));
  document.addEventListener('keydown', (event) => {
    if (event.target.closest('input, select, textarea') && event.target.type !== 'range') return;
    if (event.key === ' ') { event.preventDefault(); if (isPlaying()) pause(); else play(); }
    else if (event.key === 'ArrowLeft' || event.key === 'ArrowRight') {
      event.preventDefault();
      pause();
      seekStep(step + (event.key === 'ArrowLeft' ? -1 : 1) * (event.shiftKey ? 10 : 1));
    }
  });
}

async function main() {
  const summary = document.getElementById('episode-summary');
  try {
    episode = await fetchJSON(`/api/episode/${encodeURIComponent(config.split)}/${config.index}`);
  } catch (error) {
    showError(summary, error);
    return;
  }
  fps = episode.fps;
  length = episode.length;
  renderHead();
  if (length === 0) {
    summary.textContent = 'This episode has no steps.';
    document.body.dataset.ready = '1';
    return;
  }
  renderCameras();
  setupTransport();
  renderNotes();
  await renderPlot();
  showStep(0);
  document.body.dataset.ready = '1';
}

main();

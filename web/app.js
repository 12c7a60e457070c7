// cdnlab's live view: one page, fed by the Server-Sent Events of `feed` (see src/web/feed.rs for
// the messages). No build step, no library: the topology is SVG made here, the charts are
// canvas lines. A live lab and a replayed run directory send the same messages.
'use strict';

const SVG = 'http://www.w3.org/2000/svg';
const COLOURS = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#17becf'];
// Points kept per series: a long run is thinned to every other point past this.
const MAX_POINTS = 4000;

let view = fresh();

function fresh() {
  return {
    mode: null, lab: '', picture: null, directions: [], edges: [],
    throughput: new Map(), // direction id -> [[time_unix_s, bps]]
    latest: new Map(),     // direction id -> the last counters
    clients: new Map(),    // name -> {rows: [], state, summary}
    regions: {},           // ICN load generator -> its region
    latency: new Map(),    // ICN load generator -> [latency message per second]
    controller: null,      // {sites, regions, apps, mode, ticks: [], periods: []}
    events: [],            // {time_unix_s, text, received_ms}
    t0: null, now: null, ended: null, selected: null, errors: [],
  };
}

window.addEventListener('error', (e) => view.errors.push(String(e.message)));

function push(series, point) {
  series.push(point);
  if (series.length > MAX_POINTS) {
    const kept = series.filter((_, i) => i % 2 === 0);
    series.length = 0;
    series.push(...kept);
  }
}

function handle(message) {
  switch (message.kind) {
    case 'hello': {
      // A reconnect starts over: the server sends everything again.
      const selected = view.selected;
      view = fresh();
      view.selected = selected;
      view.mode = message.mode;
      view.lab = message.lab;
      view.picture = message.picture;
      view.directions = message.directions;
      view.counters = message.counters;
      view.regions = message.regions || {};
      for (const name of message.clients) {
        view.clients.set(name, { rows: [], deadlines: { n: 0, missed: 0, points: [] }, state: 'running', summary: null });
      }
      drawTopology();
      break;
    }
    case 'links':
      view.now = Math.max(view.now || 0, message.time_unix_s);
      if (view.t0 === null) view.t0 = message.time_unix_s;
      for (const link of message.links) {
        if (!view.throughput.has(link.id)) view.throughput.set(link.id, []);
        push(view.throughput.get(link.id), [message.time_unix_s, link.bps]);
        view.latest.set(link.id, link);
      }
      break;
    case 'event':
      if (message.event.event === 'clients_start') view.t0 = message.time_unix_s;
      if (message.event.event === 'link_set') {
        const d = view.directions.find((d) => d.id === message.event.direction);
        if (d) d.impairments = message.event.impairments;
        if (d && 'rate_bps' in message) d.rate_bps = message.rate_bps;
      }
      if (message.event.event === 'link_reset') {
        for (const d of view.directions) {
          if (d.segment === message.event.segment) { d.impairments = ''; d.rate_bps = null; }
        }
      }
      view.events.push({ time_unix_s: message.time_unix_s, text: message.text, received_ms: Date.now() });
      break;
    case 'segment': {
      const client = view.clients.get(message.client);
      if (client) push(client.rows, message);
      break;
    }
    case 'deadline': {
      const client = view.clients.get(message.client);
      if (!client) break;
      const d = client.deadlines;
      d.n += 1;
      if (message.missed) d.missed += 1;
      push(d.points, [message.time_unix_s, d.missed / d.n]);
      break;
    }
    case 'latency': {
      view.now = Math.max(view.now || 0, message.time_unix_s);
      if (!view.latency.has(message.client)) view.latency.set(message.client, []);
      push(view.latency.get(message.client), { ...message, received_ms: Date.now() });
      break;
    }
    case 'controller':
      view.controller = { ...message, ticks: [], periods: [] };
      break;
    case 'controller_tick':
      view.now = Math.max(view.now || 0, message.time_unix_s);
      if (view.controller) push(view.controller.ticks, { ...message, received_ms: Date.now() });
      break;
    case 'controller_period':
      if (view.controller) push(view.controller.periods, message);
      break;
    case 'client': {
      const client = view.clients.get(message.client);
      if (client) { client.state = message.state; client.summary = message.summary; }
      break;
    }
    case 'end':
      view.ended = message.reason;
      break;
  }
}

function el(name, attributes, parent) {
  const node = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attributes)) node.setAttribute(k, v);
  if (parent) parent.appendChild(node);
  return node;
}

function drawTopology() {
  const svg = document.getElementById('topology');
  svg.replaceChildren();
  const p = view.picture;
  svg.setAttribute('viewBox', `0 0 ${p.width} ${p.height}`);
  document.getElementById('title').textContent = `cdnlab: ${view.lab}`;
  view.edges = p.edges.map((edge, i) => {
    const [a, b] = [p.nodes[edge.a], p.nodes[edge.b]];
    const line = el('line', { x1: a.x, y1: a.y, x2: b.x, y2: b.y, class: 'edge', 'data-edge': i, 'stroke-width': 2 }, svg);
    line.addEventListener('click', () => { view.selected = i; render(); });
    return { line, a, b, labels: new Map() };
  });
  // A label per direction beside its edge, nearer its sender, on the sender's side of the line.
  for (const d of view.directions) {
    const edge = view.edges[d.edge];
    if (!edge) continue;
    const [from, to] = d.forward ? [edge.a, edge.b] : [edge.b, edge.a];
    const t = 0.3;
    const [dx, dy] = [to.x - from.x, to.y - from.y];
    const length = Math.hypot(dx, dy) || 1;
    const side = d.forward ? 1 : -1;
    const x = from.x + t * dx + side * 9 * (-dy / length);
    const y = from.y + t * dy + side * 9 * (dx / length);
    const label = el('text', { x, y, class: 'rate', 'text-anchor': 'middle', 'data-direction': d.id }, svg);
    edge.labels.set(d.id, { label, direction: d });
  }
  p.nodes.forEach((node) => {
    const g = el('g', { class: node.kind, 'data-node': node.name }, svg);
    el('rect', { x: node.x - 70, y: node.y - 19, width: 140, height: 38, rx: 3 }, g);
    el('text', { x: node.x, y: node.y - 3, class: 'name', 'text-anchor': 'middle' }, g).textContent = node.name;
    el('text', { x: node.x, y: node.y + 12, class: 'what', 'text-anchor': 'middle' }, g).textContent = node.what;
  });
}

function mbit(bps) { return (bps / 1e6).toFixed(bps >= 1e7 ? 0 : bps >= 1e6 ? 1 : 2); }

function since(t) { return view.t0 === null ? t : t - view.t0; }

/// The directions charted: the selected edge's, or else the directions from or to a client that
/// have carried traffic, or else the four busiest (a direction without impairments is not
/// shaped, and its counters stay at zero).
function chartedDirections() {
  if (view.selected !== null) return view.directions.filter((d) => d.edge === view.selected);
  const peak = (d) => Math.max(0, ...(view.throughput.get(d.id) || []).map((p) => p[1]));
  const busy = view.directions.filter((d) => peak(d) > 0);
  const clients = new Set(view.picture.nodes.filter((n) => n.kind === 'client').map((n) => n.name));
  const touching = (d) => clients.has(d.from) || d.to.some((t) => clients.has(t));
  const clientsBusy = busy.filter(touching);
  if (clientsBusy.length) return clientsBusy;
  if (busy.length) return busy.sort((a, b) => peak(b) - peak(a)).slice(0, 4);
  const all = view.directions.filter(touching);
  return all.length ? all : view.directions.slice(0, 4);
}

function render() {
  if (!view.picture) return;
  const mode = document.getElementById('mode');
  mode.textContent = view.ended ? (view.mode === 'replay' ? 'replay' : 'ended') : view.mode;
  mode.className = `badge ${view.ended && view.mode === 'live' ? 'ended' : view.mode}`;
  document.getElementById('clock').textContent = view.now && view.t0 !== null ? `${since(view.now).toFixed(1)} s` : '';
  document.getElementById('note').textContent = view.ended && view.mode === 'live' ? view.ended
    : (view.counters ? '' : 'no link counters: they could not be read (see the log)');
  for (const [i, edge] of view.edges.entries()) {
    let widest = 0;
    for (const [id, { label, direction: d }] of edge.labels) {
      const now = view.latest.get(id);
      if (!now || (now.bps < 1000 && !now.queued && !now.drops)) { label.textContent = ''; continue; }
      const share = d.rate_bps ? now.bps / d.rate_bps : Math.log10(1 + now.bps / 1e5) / 4;
      widest = Math.max(widest, Math.min(1, share));
      label.textContent = `${mbit(now.bps)}${now.queued ? ` q${now.queued}` : ''}${now.drops ? ` ✕${now.drops}` : ''}`;
      label.classList.toggle('dropping', now.drops > 0);
    }
    edge.line.setAttribute('stroke-width', (2 + 10 * widest).toFixed(1));
    edge.line.classList.toggle('selected', view.selected === i);
  }
  const charted = chartedDirections();
  document.getElementById('selected-links').textContent = charted.map((d) => d.id).join(', ');
  const eventTimes = view.events.map((e) => since(e.time_unix_s));
  chart('chart-throughput', charted.map((d) => ({
    name: d.id, points: (view.throughput.get(d.id) || []).map(([t, bps]) => [since(t), bps / 1e6]),
  })), eventTimes);
  const clients = [...view.clients.entries()];
  // The HAS charts only where a client plays segments (and while none has yet, to show where
  // they will be); F-FDN viewers and ICN regions have their own.
  const has = clients.some(([, c]) => c.rows.length > 0)
    || !(clients.some(([, c]) => c.deadlines.n > 0) || view.latency.size > 0 || view.controller);
  document.getElementById('figure-buffer').hidden = !has;
  document.getElementById('figure-bitrate').hidden = !has;
  chart('chart-buffer', clients.map(([name, c]) => ({
    name, points: c.rows.map((r) => [since(r.time_unix_s), r.buffer_s]),
  })), eventTimes);
  chart('chart-bitrate', clients.map(([name, c]) => ({
    name, points: c.rows.map((r) => [since(r.time_unix_s), r.bitrate_bps / 1e6]), step: true,
  })), eventTimes);
  const fog = clients.filter(([, c]) => c.deadlines.n > 0);
  document.getElementById('figure-deadlines').hidden = fog.length === 0;
  if (fog.length) {
    chart('chart-deadlines', fog.map(([name, c]) => ({
      name, points: c.deadlines.points.map(([t, rate]) => [since(t), rate]),
    })), eventTimes);
  }
  renderIcn(eventTimes);
  table('clients', clients.map(([name, c]) => {
    const last = c.rows[c.rows.length - 1];
    const startup = c.summary && c.summary.startup_delay_s;
    const d = c.deadlines;
    return [name, c.state, c.rows.length || d.n, last ? `${last.quality} (${mbit(last.bitrate_bps)} Mbit/s)` : '',
      last ? last.buffer_s.toFixed(1) : '', last ? last.stalls : '', typeof startup === 'number' ? startup.toFixed(3) : '',
      d.n ? `${d.missed} (${(100 * d.missed / d.n).toFixed(1)}%)` : ''];
  }));
  table('links', view.directions.map((d) => {
    const now = view.latest.get(d.id);
    return [d.id, now ? mbit(now.bps) : '', now ? now.queued : '', now ? now.drops : '', d.impairments];
  }));
  const list = document.getElementById('events');
  while (list.children.length < view.events.length) {
    const e = view.events[list.children.length];
    const item = document.createElement('li');
    item.textContent = `${since(e.time_unix_s).toFixed(1)} s  ${e.text}`;
    list.appendChild(item);
  }
}

function regionName(client) { return view.regions[client] ? `${view.regions[client]} (${client})` : client; }

function percent(share) { return `${(100 * share).toFixed(0)}%`; }

/// The ICN scenario: each region's latency per second, the controller's prices and congestion
/// per site, and its mapping (the share of demand sent to each site, over time and per region).
function renderIcn(eventTimes) {
  const regions = [...view.latency.entries()];
  document.getElementById('figure-latency').hidden = regions.length === 0;
  document.getElementById('icn').hidden = regions.length === 0 && !view.controller;
  if (regions.length) {
    chart('chart-latency', regions.map(([client, seconds]) => ({
      name: regionName(client), points: seconds.filter((s) => s.mean_ms !== null).map((s) => [since(s.time_unix_s), s.mean_ms]),
    })), eventTimes);
  }
  table('regions', regions.map(([client, seconds]) => {
    const last = seconds[seconds.length - 1];
    const ms = (v) => (v === null ? '' : v.toFixed(1));
    return [regionName(client), last.requests, last.failed, ms(last.mean_ms), ms(last.p95_ms)];
  }));
  const c = view.controller;
  for (const id of ['figure-prices', 'figure-congestion', 'figure-mapping']) document.getElementById(id).hidden = !c;
  if (!c) return;
  // Each value holds until the next, so the last one is drawn on to now.
  const perSite = (records, field) => c.sites.map((site, m) => {
    const points = records.filter((r) => Array.isArray(r[field]) && typeof r[field][m] === 'number')
      .map((r) => [since(r.time_unix_s), r[field][m]]);
    const last = points[points.length - 1];
    if (last && view.now !== null && since(view.now) > last[0]) points.push([since(view.now), last[1]]);
    return { name: site, step: true, points };
  });
  chart('chart-prices', perSite(c.ticks, 'prices'), eventTimes);
  chart('chart-congestion', perSite(c.ticks, 'theta'), eventTimes);
  const installed = c.periods.filter((p) => p.version !== null);
  chart('chart-mapping', perSite(installed, 'site_share'), eventTimes);
  const head = document.querySelector('#mapping thead tr');
  head.replaceChildren(...['region', ...c.sites].map((text) => {
    const th = document.createElement('th');
    th.textContent = text;
    return th;
  }));
  const latest = installed[installed.length - 1];
  const last = c.periods[c.periods.length - 1];
  document.getElementById('mapping-note').textContent = !last ? `${c.mode}: no PARM period yet`
    : `${c.mode}: rules ${latest ? latest.version : 'none'} from ${latest ? since(latest.time_unix_s).toFixed(1) : '—'} s`
      + (last.error ? `; the last period installed nothing: ${last.error}` : '');
  table('mapping', latest ? c.regions.map((region, l) => [region, ...(latest.region_share[l] || []).map(percent)]) : []);
}

function table(id, rows) {
  const body = document.querySelector(`#${id} tbody`);
  body.replaceChildren(...rows.map((row) => {
    const tr = document.createElement('tr');
    for (const cell of row) {
      const td = document.createElement('td');
      td.textContent = String(cell);
      tr.appendChild(td);
    }
    return tr;
  }));
}

/// A line chart of `series` on `canvas`: x in seconds since the clients started, the y axis
/// from zero to the largest value, a dashed line at each event's time, a legend.
function chart(id, series, eventTimes) {
  const canvas = document.getElementById(id);
  const ctx = canvas.getContext('2d');
  const [w, h] = [canvas.width, canvas.height];
  const pad = { left: 44, right: 8, top: 8, bottom: 20 };
  ctx.clearRect(0, 0, w, h);
  const all = series.flatMap((s) => s.points);
  const xMax = Math.max(10, ...all.map((p) => p[0]), ...eventTimes);
  const xMin = Math.min(0, ...all.map((p) => p[0]));
  const yMax = Math.max(1e-9, ...all.map((p) => p[1])) * 1.1;
  const x = (v) => pad.left + ((v - xMin) / (xMax - xMin)) * (w - pad.left - pad.right);
  const y = (v) => h - pad.bottom - (v / yMax) * (h - pad.top - pad.bottom);
  ctx.font = '10px sans-serif';
  ctx.fillStyle = '#444';
  ctx.strokeStyle = '#ccc';
  ctx.beginPath();
  ctx.moveTo(pad.left, pad.top); ctx.lineTo(pad.left, h - pad.bottom); ctx.lineTo(w - pad.right, h - pad.bottom);
  ctx.stroke();
  for (const v of [0, yMax / 2, yMax / 1.1]) ctx.fillText(v.toPrecision(3), 2, y(v) + 3);
  const step = Math.max(1, Math.ceil((xMax - xMin) / 10 / 5) * 5);
  for (let t = Math.ceil(xMin / step) * step; t <= xMax; t += step) ctx.fillText(`${t}s`, x(t) - 6, h - 6);
  ctx.setLineDash([4, 3]);
  ctx.strokeStyle = '#999';
  for (const t of eventTimes) { ctx.beginPath(); ctx.moveTo(x(t), pad.top); ctx.lineTo(x(t), h - pad.bottom); ctx.stroke(); }
  ctx.setLineDash([]);
  series.forEach((s, i) => {
    ctx.strokeStyle = COLOURS[i % COLOURS.length];
    ctx.lineWidth = 1.5;
    ctx.beginPath();
    s.points.forEach(([px, py], j) => {
      if (j === 0) ctx.moveTo(x(px), y(py));
      else if (s.step) { ctx.lineTo(x(px), y(s.points[j - 1][1])); ctx.lineTo(x(px), y(py)); }
      else ctx.lineTo(x(px), y(py));
    });
    ctx.stroke();
    ctx.fillStyle = COLOURS[i % COLOURS.length];
    ctx.fillText(s.name, w - pad.right - 200, pad.top + 10 + 11 * i);
  });
}

let drawing = false;
function schedule() {
  if (drawing) return;
  drawing = true;
  requestAnimationFrame(() => { drawing = false; render(); });
}

// What the page shows, for the browser test (tests/web.rs) and for anyone at the console.
window.cdnlab = {
  snapshot() {
    return {
      mode: view.mode, ended: view.ended, errors: view.errors,
      // A message handled but not yet drawn: the lists below may lag the view by it.
      renderPending: drawing,
      nodes: [...document.querySelectorAll('#topology [data-node]')].map((g) => g.getAttribute('data-node')),
      throughput: Object.fromEntries([...view.throughput].map(([id, s]) => [id, s.map((p) => p[1])])),
      events: view.events,
      clients: Object.fromEntries([...view.clients].map(([name, c]) => [name, {
        segments: c.rows.length, state: c.state, deadlines: c.deadlines.n, missed: c.deadlines.missed,
      }])),
      eventsShown: document.querySelectorAll('#events li').length,
      // Per region: its seconds' request counts, mean latencies and when each reached the page.
      latency: Object.fromEntries([...view.latency].map(([client, seconds]) => [client, seconds.map((s) => ({
        time_unix_s: s.time_unix_s, requests: s.requests, failed: s.failed, mean_ms: s.mean_ms, received_ms: s.received_ms,
      }))])),
      regionsShown: document.querySelectorAll('#regions tbody tr').length,
      controller: view.controller && {
        sites: view.controller.sites,
        ticks: view.controller.ticks.map((t) => ({ time_unix_s: t.time_unix_s, prices: t.prices, received_ms: t.received_ms })),
        periods: view.controller.periods.map((p) => ({ version: p.version, site_share: p.site_share })),
        mappingShown: [...document.querySelectorAll('#mapping tbody tr')].map((tr) => [...tr.children].map((td) => td.textContent)),
      },
    };
  },
};

const feed = new EventSource('feed');
feed.onmessage = (e) => { handle(JSON.parse(e.data)); schedule(); };
feed.onerror = () => {
  // The server went away (a run ends, and its process with it): keep what is shown.
  if (view.ended || view.mode === 'replay') feed.close();
};

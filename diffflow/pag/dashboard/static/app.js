// The dashboard page: render /api/state and /api/timeline/N; re-render when /events says
// a new version exists (server-sent events: pushed, never polled).
"use strict";
let state = null, shown = null;
const color = kind => (state && state.colors && state.colors[kind]) || "#555";
// durations arrive in ns; a chart shows them in the unit its largest value needs (s, ms, us),
// named in its axis title, as `diffflow pag` does in its tables
function unitFor(maxNs) {
  for (const [unit, scale] of [["s", 1e9], ["ms", 1e6], ["us", 1e3]]) if (maxNs >= scale) return {unit, scale};
  return {unit: "us", scale: 1e3};
}
const fmtDuration = ns => { const u = unitFor(Math.abs(ns)); return `${(ns / u.scale).toFixed(3)} ${u.unit}`; };
// a title on every chart; the legend starts below the top margin, where Plotly's toolbar
// (modebar) sits, so the toolbar never covers its first entries
const layout = (title, extra) => Object.assign({title: {text: title, font: {size: 14}, x: 0, xanchor: "left"},
  margin: {t: 50}, legend: {y: 1, yanchor: "top"}}, extra);
// a report (diffflow pag report) carries its data inline: no server, no updates
const REPORT = window.DASHBOARD_DATA || null;

async function getJSON(url) {
  if (REPORT) {
    const m = url.match(/timeline\/(\d+)$/), k = url.match(/khop\/(\d+)\?k=(\d+)/);
    if (k) return REPORT.khops[`${k[1]}/${k[2]}`] ||
      {rows: [], note: "this report leaves the k-hop charts out (too many snapshots)"};
    return m ? REPORT.timelines[m[1]] : REPORT.state;
  }
  return (await fetch(url)).json();
}

function el(tag, attrs, text) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

async function refresh() {
  state = await getJSON("/api/state");
  const select = document.getElementById("snapshot");
  const ids = state.snapshots.map(s => s.snapshot);
  const keep = shown !== null && ids.includes(shown) ? shown : ids[ids.length - 1];
  select.replaceChildren(...ids.map(id => el("option", {value: id}, String(id))));
  if (keep !== undefined) select.value = String(keep);
  document.getElementById("status").textContent =
    `${ids.length} snapshot(s)` +
    (state.dropped ? ` (the newest ${state.retain}: ${state.dropped} older dropped)` : "") +
    ` · ${state.violations.length} invariant violation(s)` +
    (state.thresholds_text ? ` (${state.thresholds_text})` : "") +
    (REPORT ? " · a report of a finished trace" :
     state.live ? ` · data version ${state.version} (updates as the trace grows)` : "");
  document.getElementById("status").dataset.version = state.version;
  renderCp(); renderViolations(); renderErrors();
  if (keep !== undefined) await showSnapshot(keep);
}

async function showSnapshot(id) {
  shown = Number(id);
  const view = await getJSON(`/api/timeline/${shown}`);
  renderTimeline(view);
  document.getElementById("truncated").textContent = view.truncated ?
    `showing the ${view.activities.length + view.messages.length} longest of ${view.edges} activities` : "";
  renderCpTable(state.snapshots.find(s => s.snapshot === shown));
  renderMetrics(state.metrics.filter(m => m.snapshot === shown));
  await renderKhop();
}

async function renderKhop() {
  if (shown === null) return;   // no snapshot yet
  const k = Number(document.getElementById("khop-k").value);
  const view = await getJSON(`/api/khop/${shown}?k=${k}`);
  const types = [...new Set(view.rows.map(r => r.type))];
  const hops = [...new Set(view.rows.map(r => r.hops))].sort((a, b) => a - b);
  const u = unitFor(Math.max(0, ...view.rows.map(r => r.total_ns)));
  for (const [div, field, scale, title, ytitle] of [
      ["khop-count", "count", 1, `Activities behind the waits of snapshot ${shown}, per hop`, "activities (count)"],
      ["khop-duration", "total_ns", u.scale, `Time behind the waits of snapshot ${shown}, per hop`, `time (${u.unit})`]]) {
    Plotly.react(div, hops.map(h => ({type: "bar", name: `hop ${h}`,
      x: types, y: types.map(t => ((view.rows.find(r => r.hops === h && r.type === t) || {})[field] || 0) / scale)})),
      layout(title, {barmode: "stack", xaxis: {title: {text: "activity type"}}, yaxis: {title: {text: ytitle}}}),
      {responsive: true});
  }
  document.getElementById("khop-duration").dataset.unit = u.unit;
  document.getElementById("khop-count").dataset.rows = view.rows.length;
  document.getElementById("khop-note").textContent = view.note || "";
}

function renderTimeline(view) {
  const traces = {};
  const add = (type, x, y, dash) => {
    const key = type + (dash ? " message" : "");
    const t = traces[key] || (traces[key] = {x: [], y: [], mode: "lines", name: key,
      line: {color: color(type) || "#000", width: dash ? 1 : 8, dash: dash ? "dash" : "solid"}});
    t.x.push(...x, null); t.y.push(...y, null);
  };
  const span = Math.max(0, ...view.activities.map(a => a.t1 - view.origin), ...view.messages.map(m => m.t1 - view.origin));
  const u = unitFor(span);
  const ms = t => (t - view.origin) / u.scale;   // from the snapshot's first event
  for (const a of view.activities) add(a.type, [ms(a.t0), ms(a.t1)], [`worker ${a.w}`, `worker ${a.w}`], false);
  for (const m of view.messages) add(m.type, [ms(m.t0), ms(m.t1)], [`worker ${m.src}`, `worker ${m.dst}`], true);
  Plotly.react("timeline", Object.values(traces), layout(`Timeline of snapshot ${view.snapshot}`, {
    margin: {t: 50, l: 80}, xaxis: {title: {text: `time into the snapshot (${u.unit})`}},
    yaxis: {title: {text: "worker"}, type: "category", categoryarray: view.workers.map(w => `worker ${w}`)},
  }), {responsive: true});
  const lanes = document.getElementById("timeline");
  lanes.dataset.unit = u.unit;
  lanes.dataset.workers = view.workers.join(",");
}

function renderCp() {
  const by = `by_${document.getElementById("cp-kind").value}`;
  const kinds = new Set();
  state.snapshots.forEach(s => Object.keys(s[by]).forEach(k => kinds.add(k)));
  const traces = [...kinds].map(k => ({type: "bar", name: k, marker: {color: color(k)},
    x: state.snapshots.map(s => s.snapshot), y: state.snapshots.map(s => s[by][k] || 0)}));
  Plotly.react("cp-chart", traces, layout(`Critical participation per snapshot, by ${by.slice(3)}`, {
    barmode: "stack", xaxis: {title: {text: state.epochs ? "epoch" : "time window"}, type: "category"},
    yaxis: {title: {text: "critical participation (fraction, 0-1)"}}}), {responsive: true});
}

function renderCpTable(s) {
  const table = document.getElementById("cp-table");
  table.replaceChildren(el("tr", {}, ""));
  table.firstChild.append(el("th", {}, "by"), el("th", {}, "key"), el("th", {}, "CP"));
  if (!s) return;
  for (const kind of ["activity", "worker", "operator"]) {
    const items = Object.entries(s[`by_${kind}`]).sort((a, b) => b[1] - a[1]);
    for (const [key, cp] of items) {
      const tr = el("tr", {"data-summary": kind, "data-key": key, "data-cp": cp});
      tr.append(el("td", {}, kind), el("td", {}, key), el("td", {class: "num"}, cp.toFixed(4)));
      table.append(tr);
    }
  }
}

function renderMetrics(rows) {
  const local = rows.filter(r => r.from_worker === r.to_worker);
  const types = [...new Set(local.map(r => r.activity))];
  const totals = {};
  local.forEach(r => { totals[r.from_worker] = (totals[r.from_worker] || 0) + r.duration_ns; });
  const u = unitFor(Math.max(0, ...Object.values(totals)));
  Plotly.react("activity-chart", types.map(t => ({type: "bar", name: t, marker: {color: color(t)},
    x: local.filter(r => r.activity === t).map(r => `worker ${r.from_worker}`),
    y: local.filter(r => r.activity === t).map(r => r.duration_ns / u.scale)})),
    layout(`Time per activity and worker, snapshot ${shown}`, {barmode: "stack",
      xaxis: {title: {text: "worker"}}, yaxis: {title: {text: `time (${u.unit})`}}}), {responsive: true});
  document.getElementById("activity-chart").dataset.unit = u.unit;
  const table = document.getElementById("pairs");
  table.replaceChildren();
  const head = el("tr"); ["from", "to", "activity", "messages", "records"].forEach(h => head.append(el("th", {}, h)));
  table.append(head);
  for (const r of rows.filter(r => r.from_worker !== r.to_worker)) {
    const tr = el("tr");
    [r.from_worker, r.to_worker, r.activity, r.count, r.records].forEach(v => tr.append(el("td", {}, String(v))));
    table.append(tr);
  }
}

function renderViolations() {
  document.getElementById("violations").replaceChildren(...state.violations.map(v =>
    el("li", {"data-kind": v.kind}, `${v.kind} · snapshot ${v.snapshot}` +
      (v.worker !== null ? ` · worker ${v.worker}` : "") +
      (v.operator_name ? ` · operator ${v.operator_name}` : "") +
      (v.duration_ns ? ` · ${fmtDuration(v.duration_ns)}` : "") + ` · ${v.detail}`)));
}

function renderErrors() {
  document.getElementById("errors").replaceChildren(...state.errors.map(e => el("li", {}, e)));
}

document.getElementById("snapshot").addEventListener("change", e => showSnapshot(e.target.value));
document.getElementById("cp-kind").addEventListener("change", () => renderCp());
document.getElementById("khop-k").addEventListener("change", () => renderKhop());
if (!REPORT) {
  new EventSource("/events").addEventListener("version", e => {
    if (state === null || Number(e.data) !== state.version) refresh();
  });
}
refresh();

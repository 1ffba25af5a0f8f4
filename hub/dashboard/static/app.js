// fleetq dashboard: plain JavaScript, no build step, no third-party code.
// Credentials: a bearer token kept in sessionStorage and sent in the Authorization header
// (or none, behind `fleetq dashboard`, which adds it). Views come live from
// /api/stream (server-sent events read with fetch, so the header can be sent).
"use strict";

const state = { session: null, stream: null, view: null, sort: {}, filter: "", status: "", group: "", detail: null };
const SVG = "http://www.w3.org/2000/svg";
const PALETTE = ["#4f7cd6", "#d98a1c", "#2e7d32", "#8d2a2a", "#7b4fd6", "#1c9bd9", "#b0527a", "#5d6780"];

function token() { return sessionStorage.getItem("fleetq-token") || ""; }

function headers(extra) {
  const h = Object.assign({}, extra || {});
  if (token()) h["Authorization"] = "Bearer " + token();
  return h;
}

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") node.className = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else if (k === "hidden") node.hidden = !!v;
    else node.setAttribute(k, v);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function showError(message, kind) {
  const box = document.getElementById("error");
  box.textContent = message;
  box.dataset.kind = kind || "";
  box.hidden = !message;
}

function setLive(on) {
  const live = document.getElementById("live");
  live.textContent = on ? "live" : "offline";
  live.className = "live " + (on ? "on" : "off");
}

function duration(seconds) {
  if (seconds === null || seconds === undefined) return "";
  const s = Math.round(seconds);
  if (s < 120) return s + "s";
  if (s < 7200) return Math.round(s / 60) + "m";
  return (s / 3600).toFixed(1) + "h";
}

function percent(used, total) {
  return total > 0 ? Math.round((100 * used) / total) + "%" : "-";
}

function bar(used, total, label) {
  const pct = total > 0 ? Math.min(100, (100 * used) / total) : used > 0 ? 100 : 0;
  const fill = el("div", { class: "used" + (used > total ? " over" : "") });
  fill.style.width = pct + "%";
  return el("span", {}, el("div", { class: "bar" }, fill), el("span", { class: "barlabel" }, label));
}

function table(columns, rows, key) {
  const sort = state.sort[key] || null;
  let sorted = rows.slice();
  if (sort) {
    sorted.sort((a, b) => {
      const x = a[sort.col], y = b[sort.col];
      const c = x === y ? 0 : x === null || x === undefined ? 1 : y === null || y === undefined ? -1 : x < y ? -1 : 1;
      return sort.desc ? -c : c;
    });
  }
  const head = el("tr", {}, columns.map(([col, title]) => el("th", {
    onclick: () => {
      const now = state.sort[key];
      state.sort[key] = { col, desc: now && now.col === col ? !now.desc : false };
      render(state.lastBody);
    },
  }, title)));
  const body = sorted.map((row) => el("tr", {}, columns.map(([col, , fmt]) => el("td", {}, fmt ? fmt(row) : row[col] ?? ""))));
  return el("table", { "data-table": key }, el("thead", {}, head), el("tbody", {}, body));
}

async function act(action, target) {
  const response = await fetch("/api/actions/" + action, {
    method: "POST",
    headers: headers({ "Content-Type": "application/json", "X-CSRF-Token": state.session.csrf }),
    body: JSON.stringify(target),
  });
  const body = await response.json();
  showError(response.ok ? "" : body.error, response.ok ? "" : "action");
}

function actionButton(action, label, target) {
  if (!state.session || !state.session.can[action]) return null;
  return el("button", { class: "action", "data-action": action, onclick: () => act(action, target) }, label);
}

function svg(tag, attrs, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, String(v));
  for (const child of children.flat()) if (child) node.append(child);
  return node;
}

function clock(epochSeconds) {
  return new Date(epochSeconds * 1000).toTimeString().slice(0, 5);
}

// A time plot of several series over the same sample times; a null value, or a pause in
// sampling longer than two intervals, is a gap (the line is broken there). With `dots`,
// each sample is a point (latency: one per interval that saw dispatches), not a line.
function plot(id, title, unit, times, interval, series, dots) {
  const width = 720, height = 200, left = 52, right = 12, top = 12, bottom = 24;
  const values = series.flatMap((s) => s.values.filter((v) => v !== null));
  const maxY = Math.max(1, ...values);
  const t0 = times.length ? times[0] : 0, t1 = times.length ? times[times.length - 1] : 1;
  const x = (t) => left + ((t - t0) / Math.max(1, t1 - t0)) * (width - left - right);
  const y = (v) => top + (1 - v / maxY) * (height - top - bottom);
  const chart = svg("svg", { viewBox: `0 0 ${width} ${height}`, class: "plot", "data-plot": id, role: "img" },
    svg("title", {}, document.createTextNode(title)),
    svg("line", { x1: left, y1: y(0), x2: width - right, y2: y(0), class: "axis" }),
    svg("line", { x1: left, y1: top, x2: left, y2: y(0), class: "axis" }),
    svg("text", { x: left - 4, y: top + 8, "text-anchor": "end", class: "tick" }, document.createTextNode(fmtY(maxY, unit))),
    svg("text", { x: left - 4, y: y(0), "text-anchor": "end", class: "tick" }, document.createTextNode("0")),
    times.length ? svg("text", { x: left, y: height - 6, class: "tick" }, document.createTextNode(clock(t0))) : null,
    times.length ? svg("text", { x: width - right, y: height - 6, "text-anchor": "end", class: "tick" }, document.createTextNode(clock(t1))) : null);
  series.forEach((s, i) => {
    const color = PALETTE[i % PALETTE.length];
    if (dots) {
      s.values.forEach((v, j) => {
        if (v === null) return;
        const tip = svg("title", {}, document.createTextNode(s.label + " " + clock(times[j]) + ": " + fmtY(v, unit)));
        chart.append(svg("circle", { cx: x(times[j]), cy: y(v), r: 2.5, fill: color, "data-series": s.label }, tip));
      });
      return;
    }
    let points = [];
    const flush = () => {
      if (points.length) chart.append(svg("polyline", { points: points.join(" "), fill: "none", stroke: color, "stroke-width": 1.5, "data-series": s.label }));
      points = [];
    };
    s.values.forEach((v, j) => {
      if (j > 0 && times[j] - times[j - 1] > 2 * interval) flush();
      if (v === null) flush(); else points.push(x(times[j]).toFixed(1) + "," + y(v).toFixed(1));
    });
    flush();
  });
  const legend = el("div", { class: "legend" }, series.map((s, i) => {
    const swatch = el("span", { class: "swatch" });
    swatch.style.background = PALETTE[i % PALETTE.length];
    return el("span", {}, swatch, s.label);
  }));
  return el("div", { class: "card" }, el("h3", {}, title), chart, legend);
}

function fmtY(v, unit) { return unit === "s" ? duration(v) : String(Math.round(v)); }

function fetchPart(path, view) {
  // One of the workload detail's on-demand parts; a refusal is shown in its place.
  const query = new URLSearchParams({ namespace: view.namespace, name: view.workload });
  return fetch("/api/workload/" + path + "?" + query, { headers: headers() })
    .then(async (r) => ({ ok: r.ok, body: await r.json() }))
    .catch((err) => ({ ok: false, body: { error: "could not be read: " + err.message } }));
}

async function loadDetail(view) {
  const key = view.namespace + "/" + view.workload;
  state.detail = { key, events: null, logs: null, priority: null };
  const [events, logs, priority] = await Promise.all([fetchPart("events", view), fetchPart("logs", view), fetchPart("priority", view)]);
  if (!state.detail || state.detail.key !== key) return;
  state.detail = { key, events, logs, priority };
  if (state.lastBody && state.view.name === "workload") render(state.lastBody);
}

function part(id, title, loaded, draw) {
  const body = loaded === null ? el("p", {}, "loading…")
    : !loaded.ok ? el("p", { class: "refused", "data-refused": id }, loaded.body.error)
    : draw(loaded.body);
  return el("section", { id: "part-" + id }, el("h3", {}, title), body);
}

async function changePriority(s, select) {
  await act("set-workload-priority", { namespace: s.namespace, name: s.name, priorityClass: select.value });
  loadDetail(state.view);
}

function priorityPart(s, loaded) {
  return part("priority", "Priority", loaded, (p) => {
    if (!p.allowed) return el("p", {}, "priority " + s.priority + (p.current ? " (WorkloadPriorityClass " + p.current + ")" : "") + ". " + p.reason);
    // The choice survives the re-renders each pushed change of the Workload makes.
    const chosen = state.detail.chosen || p.current;
    const select = el("select", { id: "priority-class", onchange: (e) => { state.detail.chosen = e.target.value; } },
      p.classes.map((c) => {
        const o = el("option", { value: c.name }, c.name + " (" + c.value + ")"); if (c.name === chosen) o.selected = true; return o; }));
    return el("p", {}, "priority " + s.priority + " from WorkloadPriorityClass " + p.current + ". Change to ", select, " ",
      el("button", { class: "action", "data-action": "set-workload-priority", onclick: () => changePriority(s, select) }, "Set"),
      el("span", { class: "hint" }, " (written to " + p.writes + ")"));
  });
}

const render_views = {
  fleet(body) {
    if (!body.leader) return [el("p", {}, "This hub replica holds no worker connections (it is not the leader, or MultiKueue is off).")];
    if (!body.workers.length) return [el("p", {}, "No workers are connected to this hub.")];
    return body.workers.map((w) => el("div", { class: "card worker", "data-worker": w.name },
      el("h3", {}, w.name, " ", el("span", { class: w.connected ? "ok" : "bad" }, w.connected ? "connected" : "disconnected")),
      el("p", {}, "phase ", w.phase, w.reason ? " — " + w.reason : "", " · report age ",
        w.reportAgeSeconds === null ? "no report" : duration(w.reportAgeSeconds), " · running ", w.running),
      w.flavors.map((f) => el("div", { class: "flavor" },
        el("h4", {}, f.name, " (", f.nodes, " nodes)"),
        f.bars.map((b) => el("div", {}, el("code", {}, b.resource.padEnd(8)), " ",
          bar(b.used, b.total, b.usedText + " used of " + b.totalText + " (" + percent(b.used, b.total) + " used)"))),
        f.largestFreeBlocks.length ? el("p", {}, "largest free blocks: ",
          f.largestFreeBlocks.map((blk) => Object.entries(blk).map(([k, v]) => k + "=" + v).join(" ")).join(" | ")) : null,
      )),
    ));
  },
  queues(body) {
    const usage = (q) => q.usage.map((u) => el("div", {}, el("code", {}, u.flavor + "/" + u.resource), " ",
      bar(u.reserved, u.nominal, u.reservedText + " of " + u.nominalText + (u.borrowed > 0 ? " (borrowing " + u.borrowed + ")" : ""))));
    return [
      el("h2", {}, "Cohorts"),
      table([["name", "Cohort"], ["parent", "Parent"], ["weight", "Weight"], ["weightedShare", "Share"]], body.cohorts, "cohorts"),
      el("h2", {}, "ClusterQueues"),
      table([
        ["name", "ClusterQueue"], ["cohort", "Cohort"],
        ["active", "Active", (q) => el("span", { class: q.active ? "ok" : "bad" }, q.active ? "yes" : "no (" + q.reason + ")")],
        ["stopPolicy", "Stop policy"], ["pending", "Pending"], ["reserving", "Reserving"], ["admitted", "Admitted"],
        ["weightedShare", "Share"], ["usage", "Usage", usage],
        ["actions", "", (q) => q.stopPolicy === "None"
          ? actionButton("stop-cluster-queue", "Stop", { name: q.name })
          : actionButton("resume-cluster-queue", "Resume", { name: q.name })],
      ], body.clusterQueues, "cqs"),
      el("h2", {}, "LocalQueues"),
      table([["namespace", "Namespace"], ["name", "LocalQueue"], ["clusterQueue", "ClusterQueue"],
        ["active", "Active", (q) => (q.active ? "yes" : "no (" + q.reason + ")")], ["stopPolicy", "Stop policy"],
        ["pending", "Pending"], ["reserving", "Reserving"], ["admitted", "Admitted"]], body.localQueues, "lqs"),
    ];
  },
  history(body) {
    const times = body.times;
    const hours = ((body.capacity * body.intervalSeconds) / 3600).toFixed(0);
    const queues = (field) => body.clusterQueues.map((q) => ({ label: q.name, values: q[field] }));
    return [
      el("p", {}, times.length + " samples, one every " + body.intervalSeconds + " s, kept for the last " + hours + " h (in the hub's memory: a restart starts over)."),
      plot("pending", "Pending workloads per ClusterQueue", "", times, body.intervalSeconds, queues("pending"), false),
      plot("admitted", "Admitted workloads per ClusterQueue", "", times, body.intervalSeconds, queues("admitted"), false),
      body.latencyHidden ? el("p", { class: "refused", "data-refused": "latency" }, body.latencyHidden)
        : plot("latency", "Dispatch latency per worker (quota reserved → admitted on the worker; mean per interval)", "s", times, body.intervalSeconds,
          body.dispatchLatency.map((w) => ({ label: w.worker, values: w.seconds })), true),
    ];
  },
  workloads(body) {
    const text = state.filter.toLowerCase();
    const rows = body.rows.filter((r) => (!state.status || r.state === state.status) &&
      (!text || [r.namespace, r.name, r.localQueue, r.clusterQueue, r.worker].join(" ").toLowerCase().includes(text)));
    const filter = el("input", { id: "filter", placeholder: "filter: name, queue, worker", value: state.filter,
      oninput: (e) => { state.filter = e.target.value; render(state.lastBody); document.getElementById("filter").focus(); } });
    const status = el("select", { id: "status", onchange: (e) => { state.status = e.target.value; render(state.lastBody); } },
      ["", "pending", "quotareserved", "admitted", "evicted", "inactive", "finished"].map((s) => {
        const o = el("option", { value: s }, s || "every state"); if (s === state.status) o.selected = true; return o; }));
    const group = el("select", { id: "group", onchange: (e) => { state.group = e.target.value; render(state.lastBody); } },
      [["", "no grouping"], ["clusterQueue", "group by ClusterQueue"], ["localQueue", "group by LocalQueue"], ["state", "group by state"], ["worker", "group by worker"]].map(([v, label]) => {
        const o = el("option", { value: v }, label); if (v === state.group) o.selected = true; return o; }));
    const columns = [
        ["name", "Workload", (r) => el("a", { href: "#workload/" + encodeURIComponent(r.namespace) + "/" + encodeURIComponent(r.name) }, r.namespace + "/" + r.name)],
        ["state", "State", (r) => el("span", { class: "state " + r.state, "data-state": r.state }, r.state)],
        ["localQueue", "LocalQueue"], ["clusterQueue", "ClusterQueue"], ["position", "Position"],
        ["why", "Why pending"], ["priority", "Priority"], ["worker", "Worker"],
        ["waitedSeconds", "Waited", (r) => duration(r.waitedSeconds)], ["ranSeconds", "Ran", (r) => duration(r.ranSeconds)],
        ["actions", "", (r) => (r.state === "finished" || r.state === "inactive") ? null
          : actionButton("deactivate-workload", "Deactivate", { namespace: r.namespace, name: r.name })],
    ];
    const head = [
      el("div", { class: "counts" }, Object.entries(body.counts).map(([k, v]) => el("span", {}, k + ": " + v)), el("span", {}, "total: " + body.total)),
      el("div", { class: "filters" }, filter, status, group),
    ];
    if (!state.group) return [...head, table(columns, rows, "workloads")];
    // Groups: every value the server counted (exact, beyond the rows sent), largest first.
    const exact = body.groups[state.group] || {};
    const names = Object.keys(exact).sort((a, b) => exact[b] - exact[a] || a.localeCompare(b));
    return [...head, ...names.map((name) => {
      const members = rows.filter((r) => String(r[state.group] || "") === name);
      const shown = members.length === exact[name] ? "" : " (" + members.length + " shown)";
      return el("div", { class: "group", "data-group": name, "data-count": exact[name] },
        el("h3", {}, (name || "(none)") + " — " + exact[name] + " workload" + (exact[name] === 1 ? "" : "s") + shown),
        members.length ? table(columns, members, "workloads") : null);
    })];
  },
  workload(body) {
    const s = body.summary;
    const current = state.detail && state.detail.key === s.namespace + "/" + s.name ? state.detail : null;
    const detail = current || { events: null, logs: null, priority: null };
    return [
      el("h2", {}, s.namespace + "/" + s.name, " ", el("span", { class: "state " + s.state, "data-state": s.state }, s.state)),
      el("p", {}, "LocalQueue ", s.localQueue, " · ClusterQueue ", s.clusterQueue, " · priority ", s.priority,
        s.worker ? " · worker " + s.worker : "", s.why ? " · " + s.why : ""),
      priorityPart(s, detail.priority),
      el("h3", {}, "Timeline"),
      el("ol", { class: "timeline" }, body.timeline.map((t) => el("li", {}, el("time", {}, t.time || ""), el("strong", {}, t.step), " ", t.detail))),
      el("h3", {}, "Conditions"),
      table([["type", "Type"], ["status", "Status"], ["reason", "Reason"], ["message", "Message"], ["time", "Since"]], body.conditions, "conditions"),
      part("events", "Events", detail.events, (e) => e.events.length
        ? table([["time", "Last seen"], ["type", "Type"], ["reason", "Reason"], ["object", "Object"], ["message", "Message"], ["count", "Count"]], e.events, "events")
        : el("p", {}, "No Events (the apiserver keeps them for an hour).")),
      part("logs", "Pod logs (last lines)", detail.logs, (l) => l.tails.length
        ? l.tails.map((t) => el("div", { class: "log", "data-pod": t.pod },
          el("h4", {}, t.pod + "/" + t.container + " on " + t.cluster),
          t.error ? el("p", { class: "refused" }, t.error) : el("pre", {}, t.text || "(empty)")))
        : el("p", {}, l.note)),
      el("button", { id: "reload-detail", onclick: () => loadDetail(state.view) }, "Reload events and logs"),
      el("h3", {}, "YAML"),
      el("pre", {}, body.yaml),
    ];
  },
  flavors(body) {
    return [table([
      ["name", "ResourceFlavor"],
      ["nodeLabels", "Node labels", (f) => Object.entries(f.nodeLabels).map(([k, v]) => k + "=" + v).join(", ")],
      ["taints", "Taints", (f) => f.taints.join(", ")], ["topology", "Topology"],
      ["workers", "Nodes per worker", (f) => f.workers.map((w) => w.worker + ": " + w.nodes).join(", ")],
    ], body.flavors, "flavors")];
  },
};

function render(body) {
  state.lastBody = body;
  const content = document.getElementById("content");
  const view = state.view.name;
  content.replaceChildren(el("div", { "data-view": view, id: "view-" + view }, render_views[view](body)));
}

function route() {
  const hash = decodeURIComponent(location.hash.slice(1)) || "fleet";
  const parts = location.hash.slice(1).split("/").map(decodeURIComponent);
  if (parts[0] === "workload" && parts.length === 3) return { name: "workload", namespace: parts[1], workload: parts[2] };
  if (parts[0] === "workloads" && parts.length === 2) return { name: "workloads", namespace: parts[1] };
  return { name: ["fleet", "queues", "history", "workloads", "flavors"].includes(hash) ? hash : "fleet" };
}

async function readStream(response, controller) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  setLive(true);
  while (true) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const chunk = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      let event = "message", data = "";
      for (const line of chunk.split("\n")) {
        if (line.startsWith("event: ")) event = line.slice(7);
        else if (line.startsWith("data: ")) data += line.slice(6);
      }
      if (controller.signal.aborted) return; // a left view's last events
      if (event === "view") { showError(""); render(JSON.parse(data)); }
      else if (event === "unauthorized") { signOut("Your token is no longer accepted; sign in again."); return; }
      else if (event === "forbidden") { showError("Your access to this view was revoked.", "forbidden"); }
    }
    if (controller.signal.aborted) return;
  }
}

async function open() {
  if (state.stream) state.stream.abort();
  const view = route();
  state.view = view;
  for (const a of document.querySelectorAll("#nav a")) a.classList.toggle("current", a.dataset.view === view.name);
  const controller = new AbortController();
  state.stream = controller;
  state.lastBody = null; // the body shown belongs to the view left behind
  const detailKey = view.namespace + "/" + view.workload;
  if (view.name !== "workload") state.detail = null;
  else if (!state.detail || state.detail.key !== detailKey) loadDetail(view); // not on reconnects
  const query = new URLSearchParams({ view: view.name });
  if (view.namespace) query.set("namespace", view.namespace);
  if (view.workload) query.set("name", view.workload);
  try {
    const response = await fetch("/api/stream?" + query, { headers: headers(), signal: controller.signal });
    if (response.status === 401) { signOut("Sign in to see the fleet."); return; }
    if (response.status === 429) {
      // Streams the browser closed are noticed by the server at its next write (at most its
      // keepalive, 15 s): try again rather than give up.
      showError((await response.json()).error + " — trying again", "busy");
    } else if (!response.ok) {
      const body = await response.json();
      document.getElementById("content").replaceChildren(response.status === 403 && view.name === "workloads" ? namespaceForm() : "");
      showError(body.error, response.status === 403 ? "forbidden" : "error");
      setLive(false);
      return;
    } else {
      await readStream(response, controller);
    }
  } catch (err) {
    if (controller.signal.aborted) return;
    showError("Connection lost: " + err.message + " — retrying", "connection");
  }
  setLive(false);
  if (!controller.signal.aborted) setTimeout(() => { if (state.stream === controller) open(); }, 3000);
}

function namespaceForm() {
  // Users who may list Workloads in some namespaces only open the table for one of them.
  const input = el("input", { id: "namespace", placeholder: "namespace" });
  return el("form", { id: "namespace-form", class: "filters", onsubmit: (e) => {
    e.preventDefault();
    if (input.value.trim()) location.hash = "workloads/" + encodeURIComponent(input.value.trim());
  } }, "Workloads of one namespace: ", input, el("button", { type: "submit" }, "Open"));
}

function signOut(message) {
  sessionStorage.removeItem("fleetq-token");
  state.session = null;
  setLive(false);
  document.getElementById("content").replaceChildren();
  document.getElementById("login").hidden = false;
  showError(message, "unauthorized");
}

async function start() {
  const response = await fetch("/api/session", { headers: headers() });
  if (response.status === 401) { signOut(token() ? "That token was not accepted." : ""); return; }
  state.session = await response.json();
  document.getElementById("login").hidden = true;
  document.getElementById("who").textContent = state.session.user;
  showError("");
  open();
}

document.addEventListener("DOMContentLoaded", () => {
  document.getElementById("login-form").addEventListener("submit", (e) => {
    e.preventDefault();
    sessionStorage.setItem("fleetq-token", document.getElementById("token").value.trim());
    document.getElementById("token").value = "";
    start();
  });
  window.addEventListener("hashchange", () => { if (state.session) open(); });
  start();
});

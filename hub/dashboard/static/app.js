// fleetq dashboard: plain JavaScript, no build step, no third-party code.
// Credentials: a bearer token kept in sessionStorage and sent in the Authorization header
// (or none, behind `fleetq dashboard`, which adds it). Views come live from
// /api/stream (server-sent events read with fetch, so the header can be sent).
"use strict";

const state = { session: null, stream: null, view: null, sort: {}, filter: "", status: "" };

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
  workloads(body) {
    const text = state.filter.toLowerCase();
    const rows = body.rows.filter((r) => (!state.status || r.state === state.status) &&
      (!text || [r.namespace, r.name, r.localQueue, r.clusterQueue, r.worker].join(" ").toLowerCase().includes(text)));
    const filter = el("input", { id: "filter", placeholder: "filter: name, queue, worker", value: state.filter,
      oninput: (e) => { state.filter = e.target.value; render(state.lastBody); document.getElementById("filter").focus(); } });
    const status = el("select", { id: "status", onchange: (e) => { state.status = e.target.value; render(state.lastBody); } },
      ["", "pending", "quotareserved", "admitted", "evicted", "inactive", "finished"].map((s) => {
        const o = el("option", { value: s }, s || "every state"); if (s === state.status) o.selected = true; return o; }));
    return [
      el("div", { class: "counts" }, Object.entries(body.counts).map(([k, v]) => el("span", {}, k + ": " + v)), el("span", {}, "total: " + body.total)),
      el("div", { class: "filters" }, filter, status),
      table([
        ["name", "Workload", (r) => el("a", { href: "#workload/" + encodeURIComponent(r.namespace) + "/" + encodeURIComponent(r.name) }, r.namespace + "/" + r.name)],
        ["state", "State", (r) => el("span", { class: "state " + r.state, "data-state": r.state }, r.state)],
        ["localQueue", "LocalQueue"], ["clusterQueue", "ClusterQueue"], ["position", "Position"],
        ["why", "Why pending"], ["priority", "Priority"], ["worker", "Worker"],
        ["waitedSeconds", "Waited", (r) => duration(r.waitedSeconds)], ["ranSeconds", "Ran", (r) => duration(r.ranSeconds)],
        ["actions", "", (r) => (r.state === "finished" || r.state === "inactive") ? null
          : actionButton("deactivate-workload", "Deactivate", { namespace: r.namespace, name: r.name })],
      ], rows, "workloads"),
    ];
  },
  workload(body) {
    const s = body.summary;
    return [
      el("h2", {}, s.namespace + "/" + s.name, " ", el("span", { class: "state " + s.state, "data-state": s.state }, s.state)),
      el("p", {}, "LocalQueue ", s.localQueue, " · ClusterQueue ", s.clusterQueue, " · priority ", s.priority,
        s.worker ? " · worker " + s.worker : "", s.why ? " · " + s.why : ""),
      el("h3", {}, "Timeline"),
      el("ol", { class: "timeline" }, body.timeline.map((t) => el("li", {}, el("time", {}, t.time || ""), el("strong", {}, t.step), " ", t.detail))),
      el("h3", {}, "Conditions"),
      table([["type", "Type"], ["status", "Status"], ["reason", "Reason"], ["message", "Message"], ["time", "Since"]], body.conditions, "conditions"),
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
  return { name: ["fleet", "queues", "workloads", "flavors"].includes(hash) ? hash : "fleet" };
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
  const query = new URLSearchParams({ view: view.name });
  if (view.namespace) query.set("namespace", view.namespace);
  if (view.workload) query.set("name", view.workload);
  try {
    const response = await fetch("/api/stream?" + query, { headers: headers(), signal: controller.signal });
    if (response.status === 401) { signOut("Sign in to see the fleet."); return; }
    if (!response.ok) {
      const body = await response.json();
      document.getElementById("content").replaceChildren(response.status === 403 && view.name === "workloads" ? namespaceForm() : "");
      showError(body.error, response.status === 403 ? "forbidden" : "error");
      setLive(false);
      return;
    }
    await readStream(response, controller);
  } catch (err) {
    if (controller.signal.aborted) return;
    showError("Connection lost: " + err.message + " — retrying", "connection");
  }
  setLive(false);
  if (!controller.signal.aborted) setTimeout(() => { if (state.stream === controller) open(); }, 2000);
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

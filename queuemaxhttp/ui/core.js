// queuemax dashboard, part 1 of 2 (core.js, then app.js): the helpers, the
// admin API client and the router. Plain JavaScript over the JSON admin API,
// which is mounted one level up (this file is served from <admin>/ui/).
// Everything the page shows is inserted as text (never as HTML), so stored
// payloads and errors cannot inject markup. The admin token is kept in this
// tab's sessionStorage and sent only in the Authorization header of requests
// to the admin API; no cookie is ever set.
"use strict";

const API = new URL("../", document.baseURI);
const TOKEN_KEY = "queuemax.token";
const POLL_MS = 2000;

const state = { info: null, timer: null, route: "", statuses: [] };

// ---------- DOM helpers ----------

function h(tag, attrs, ...kids) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") el.className = v;
    else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const kid of kids.flat()) {
    if (kid === null || kid === undefined || kid === false) continue;
    el.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
  }
  return el;
}

function svg(tag, attrs) {
  const el = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, String(v));
  return el;
}

const $ = (sel) => document.querySelector(sel);
const fmt = (n) => (n === null || n === undefined ? "–" : Number(n).toLocaleString("en-US"));

function ago(iso) {
  if (!iso) return "–";
  const d = (new Date(iso).getTime() - Date.now()) / 1000;
  const a = Math.abs(d);
  let s;
  if (a < 1) return "now";
  if (a < 60) s = Math.round(a) + "s";
  else if (a < 3600) s = Math.round(a / 60) + "m";
  else if (a < 86400) s = Math.round(a / 3600) + "h";
  else s = Math.round(a / 86400) + "d";
  return d < 0 ? s + " ago" : "in " + s;
}

function when(iso) {
  return iso ? h("span", { title: new Date(iso).toISOString() }, ago(iso)) : h("span", { class: "muted" }, "–");
}

// whenFull shows the local date and time with the relative time after it.
function whenFull(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  return h("span", { title: d.toISOString() }, d.toLocaleString("sv-SE") + " ", h("span", { class: "muted" }, "(" + ago(iso) + ")"));
}

function badge(text, cls) {
  return h("span", { class: "badge " + (cls || text) }, String(text).replace("_", " "));
}

function pretty(raw) {
  if (raw === undefined || raw === null) return "";
  return JSON.stringify(raw, null, 2);
}

let flashTimer = null;
function flash(msg, isError, link) {
  const el = $("#flash");
  el.replaceChildren(msg);
  if (link) el.append(" ", h("a", { href: link.href }, link.text));
  el.className = isError ? "error" : "";
  el.hidden = false;
  clearTimeout(flashTimer);
  flashTimer = setTimeout(() => { el.hidden = true; }, isError ? 9000 : 5000);
}

// ---------- API ----------

class APIError extends Error {
  constructor(status, msg) { super(msg); this.status = status; }
}

function token() { return sessionStorage.getItem(TOKEN_KEY) || ""; }

async function api(path, opts) {
  opts = opts || {};
  const headers = { Accept: "application/json" };
  const tok = token();
  if (tok) headers.Authorization = "Bearer " + tok;
  let body;
  if (opts.body !== undefined) {
    headers["Content-Type"] = "application/json";
    body = JSON.stringify(opts.body);
  }
  const res = await fetch(new URL(path, API), {
    method: opts.method || "GET", headers, body, credentials: "same-origin", cache: "no-store",
  });
  let data = null;
  try { data = await res.json(); } catch (e) { /* not JSON */ }
  if (!res.ok) throw new APIError(res.status, (data && data.error) || res.status + " " + res.statusText);
  return data;
}

// act runs a state-changing request and reports the outcome.
async function act(label, path, body) {
  try {
    const out = await api(path, { method: "POST", body });
    return out;
  } catch (e) {
    let msg = label + " refused: " + e.message;
    if (e.status === 401 && !token()) msg += " — enter the admin token above.";
    flash(msg, true);
    return null;
  }
}

// ---------- header ----------

function renderMode() {
  const mode = $("#mode"), form = $("#token-form"), lock = $("#lock");
  const info = state.info;
  if (info && info.read_only) {
    mode.textContent = "read-only";
    mode.className = "badge";
    mode.title = "No admin token is configured on the server: actions are disabled.";
    form.hidden = true; lock.hidden = true;
    return;
  }
  const has = !!token();
  mode.textContent = has ? "unlocked" : "locked";
  mode.className = "badge " + (has ? "unlocked" : "");
  mode.title = has ? "Actions send the admin token you entered." : "Enter the admin token to retry, requeue or purge.";
  form.hidden = has; lock.hidden = !has;
}

function canAct() { return !(state.info && state.info.read_only); }

function actionButton(label, cls, onclick, attrs) {
  const b = h("button", Object.assign({ type: "button", class: "btn " + (cls || ""), onclick }, attrs || {}), label);
  if (!canAct()) {
    b.disabled = true;
    b.title = "read-only: no admin token is configured on the server";
  }
  return b;
}

// ---------- router ----------

function parseRoute() {
  const hash = location.hash.replace(/^#/, "") || "/";
  const [p, q] = hash.split("?");
  return { path: p, params: new URLSearchParams(q || "") };
}

function stopPolling() {
  if (state.timer) clearTimeout(state.timer);
  state.timer = null;
}

// poll calls fn now and every POLL_MS while the route is unchanged. A
// failure before the first success (or a refused token) replaces the view
// and stops; a later one (a busy server, a dropped connection) is shown in
// the flash line and polling goes on, so the page keeps updating.
function poll(fn) {
  const route = location.hash;
  let shown = false;
  const tick = async () => {
    if (location.hash !== route) return;
    try {
      await fn();
      shown = true;
    } catch (e) {
      if (location.hash !== route) return;
      if (!shown || e.status === 401) {
        $("#view").replaceChildren(errorView(e));
        return;
      }
      flash("Could not refresh: " + e.message + " (retrying)", true);
    }
    if (location.hash === route) state.timer = setTimeout(tick, POLL_MS);
  };
  tick();
}

async function route() {
  stopPolling();
  const { path, params } = parseRoute();
  for (const a of document.querySelectorAll("[data-nav]")) a.classList.remove("active");
  const view = $("#view");
  const hash = location.hash;
  delete view.dataset.loaded;
  try {
    if (!state.info) state.info = await api("info");
    renderMode();
    let m;
    if (path === "/" || path === "") { nav("overview"); await overview(view); }
    else if (path === "/jobs") { nav("jobs"); await jobsPage(view, params); }
    else if ((m = path.match(/^\/jobs\/([0-9:]+)$/))) { nav("jobs"); await jobPage(view, m[1]); }
    else if (path === "/dead") { nav("dead"); await deadPage(view, params); }
    else if (path === "/workflows") { nav("workflows"); await workflowsPage(view, params); }
    else if ((m = path.match(/^\/workflows\/([0-9]+)$/))) { nav("workflows"); await workflowPage(view, m[1], params); }
    else view.replaceChildren(h("h1", {}, "Not found"), h("p", {}, h("a", { href: "#/" }, "Back to the overview")));
  } catch (e) {
    if (location.hash === hash) view.replaceChildren(errorView(e));
  }
  // Tests wait for this: the page of the current hash has been drawn.
  if (location.hash === hash) view.dataset.loaded = hash || "#/";
}

function nav(name) {
  const a = document.querySelector(`[data-nav="${name}"]`);
  if (a) a.classList.add("active");
}

function errorView(e) {
  if (e.status === 401) {
    renderMode();
    return h("div", { class: "banner", id: "need-token" },
      "This admin API protects reads: enter the admin token above to see the queue. (", e.message, ")");
  }
  return h("div", { class: "banner" }, "Could not load: ", e.message);
}

// ---------- overview ----------

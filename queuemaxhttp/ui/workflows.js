// queuemax dashboard: the workflow views (the list, and one workflow with its
// steps drawn as a graph of their dependencies). Loaded after core.js and
// before app.js; like them it inserts everything as text, never as HTML.
"use strict";

const WF_STATUSES = ["running", "completed", "failed", "cancelled"];

// ---------- workflow list ----------

async function workflowsPage(view, params) {
  const f = { status: params.get("status") || "", name: params.get("name") || "", before: params.get("before") || "" };
  const go = () => {
    const p = new URLSearchParams();
    if (form.elements.status.value) p.set("status", form.elements.status.value);
    if (form.elements.name.value.trim()) p.set("name", form.elements.name.value.trim());
    const s = p.toString();
    location.hash = "#/workflows" + (s ? "?" + s : "");
  };
  const form = h("form", { class: "filters", id: "wf-filters", onsubmit: (e) => { e.preventDefault(); go(); } },
    h("label", {}, "Status", h("select", { name: "status", id: "wf-filter-status", onchange: go },
      h("option", { value: "" }, "any"),
      WF_STATUSES.map((s) => h("option", { value: s, selected: s === f.status }, s)))),
    h("label", {}, "Name", h("input", { type: "search", name: "name", id: "wf-filter-name", value: f.name, placeholder: "exact name" })),
    h("button", { type: "submit", class: "btn" }, "Filter"),
    h("a", { href: "#/workflows", class: "btn ghost" }, "Clear"));
  const list = h("div", { class: "scroll", id: "wf-list" }, h("p", { class: "muted" }, "Loading…"));
  view.replaceChildren(h("h1", {}, "Workflows"), h("section", { class: "panel" }, form, list));
  const q = new URLSearchParams({ limit: "100" });
  for (const [k, v] of Object.entries(f)) if (v) q.set(k, v);
  const out = await api("workflows?" + q);
  const rows = out.workflows.map((w) => h("tr", { class: "clickable", "data-workflow": w.id, onclick: (e) => {
      if (e.target.closest("a, button")) return;
      location.hash = "#/workflows/" + w.id;
    } },
    h("td", { class: "mono" }, h("a", { href: "#/workflows/" + w.id }, String(w.id))),
    h("td", {}, w.name || h("span", { class: "muted" }, "(no name)")),
    h("td", {}, badge(w.status)),
    h("td", { class: "num" }, "#" + w.shard),
    h("td", {}, when(w.created_at)),
    h("td", {}, when(w.finished_at))));
  const page = new URLSearchParams();
  if (f.status) page.set("status", f.status);
  if (f.name) page.set("name", f.name);
  const pager = h("div", { class: "actions spaced" },
    f.before ? h("a", { class: "btn ghost", id: "wf-newest", href: "#/workflows" + (page.toString() ? "?" + page : "") }, "← Newest") : null,
    out.next_before ? h("a", { class: "btn ghost", id: "wf-older", href: "#/workflows?" + new URLSearchParams([...page, ["before", String(out.next_before)]]) }, "Older →") : null);
  list.replaceChildren(table(["ID", "Name", "Status", N("Shard"), "Created", "Finished"], rows, "No workflows match."), pager);
}

// ---------- one workflow ----------

// stepDeps returns the steps s waits for, each once: After, AfterSettled
// and the steps whose results it binds.
function stepDeps(s) {
  const out = [];
  for (const d of [...s.after, ...s.after_settled, ...s.binds.map((b) => b.from)]) if (!out.includes(d)) out.push(d);
  return out;
}

// layoutSteps places each step in the column of its dependency depth (the
// longest chain of steps before it) and orders each column by the mean row
// of the steps it waits for, so that edges cross little.
function layoutSteps(steps) {
  const byName = new Map(steps.map((s) => [s.name, s]));
  const depth = new Map();
  const visit = (s, path) => {
    if (depth.has(s.name)) return depth.get(s.name);
    if (path.has(s.name)) return 0; // a cycle cannot be stored; do not loop on one
    path.add(s.name);
    let d = 0;
    for (const dep of stepDeps(s)) if (byName.has(dep)) d = Math.max(d, visit(byName.get(dep), path) + 1);
    path.delete(s.name);
    depth.set(s.name, d);
    return d;
  };
  steps.forEach((s) => visit(s, new Set()));
  const cols = [];
  steps.forEach((s) => { (cols[depth.get(s.name)] ||= []).push(s); });
  const row = new Map();
  cols.forEach((col, c) => {
    if (c > 0) {
      const key = (s) => {
        const rs = stepDeps(s).filter((d) => row.has(d)).map((d) => row.get(d));
        return rs.length ? rs.reduce((a, b) => a + b, 0) / rs.length : 0;
      };
      col.sort((a, b) => key(a) - key(b)); // stable: ties keep the order added
    }
    col.forEach((s, r) => row.set(s.name, r));
  });
  return { cols, depth, row };
}

function clip(s, n) { return s.length > n ? s.slice(0, n - 1) + "…" : s; }

// stepGraph draws the steps as an SVG graph: a node per step coloured by its
// status, an arrow from each dependency to the step that waits for it
// (dashed for AfterSettled, accented where a result is bound).
function stepGraph(wf, currentJob) {
  // P is the margin; the top one leaves room for the lane of long edges
  // above the first row.
  const NW = 180, NH = 58, GX = 72, GY = 24, P = 12, PT = 28;
  const { cols, depth, row } = layoutSteps(wf.steps);
  const rows = Math.max(1, ...cols.map((c) => c.length));
  const W = P * 2 + cols.length * NW + (cols.length - 1) * GX, H = PT + P + rows * NH + (rows - 1) * GY;
  const pos = (name) => ({ x: P + depth.get(name) * (NW + GX), y: PT + row.get(name) * (NH + GY) });
  const root = svg("svg", { viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: "img", id: "wf-graph",
    "aria-label": `steps of workflow ${wf.id} and their dependencies` });
  const defs = svg("defs");
  for (const [id, cls] of [["wf-arrow", "wf-arrow"], ["wf-arrow-bind", "wf-arrow bind"]]) {
    const marker = svg("marker", { id, viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" });
    marker.append(svg("path", { d: "M0,0 L10,5 L0,10 z", class: cls }));
    defs.append(marker);
  }
  root.append(defs);
  const byName = new Map(wf.steps.map((s) => [s.name, s]));
  for (const s of wf.steps) {
    for (const dep of stepDeps(s)) {
      if (!byName.has(dep)) continue;
      const a = pos(dep), b = pos(s.name);
      const bind = s.binds.find((x) => x.from === dep);
      const kind = bind ? "bind" : s.after.includes(dep) ? "after" : "settled";
      const x1 = a.x + NW, y1 = a.y + NH / 2, x2 = b.x, y2 = b.y + NH / 2, mx = (x1 + x2) / 2;
      // An edge to the next column is one curve; a longer one runs in the
      // lane above the higher of its two nodes, so that no node hides it.
      let d = `M${x1},${y1} C${mx},${y1} ${mx},${y2} ${x2 - 1},${y2}`;
      if (depth.get(s.name) - depth.get(dep) > 1) {
        const lane = Math.min(a.y, b.y) - GY / 2, q = GX / 3;
        d = `M${x1},${y1} C${x1 + q},${y1} ${x1 + q},${lane} ${x1 + 2 * q},${lane} L${x2 - 2 * q},${lane} ` +
          `C${x2 - q},${lane} ${x2 - q},${y2} ${x2 - 1},${y2}`;
      }
      const path = svg("path", { d,
        class: `wf-edge ${kind} from-${byName.get(dep).status}`, "marker-end": kind === "bind" ? "url(#wf-arrow-bind)" : "url(#wf-arrow)",
        "data-from": dep, "data-to": s.name, "data-kind": kind });
      const title = svg("title");
      title.textContent = kind === "bind" ? `${s.name}.${s.binds.filter((x) => x.from === dep).map((x) => x.param).join(", ")} ← result of ${dep}`
        : kind === "after" ? `${s.name} runs after ${dep} completes` : `${s.name} runs after ${dep} ends, however it ends`;
      path.append(title);
      root.append(path);
    }
  }
  for (const s of wf.steps) {
    const { x, y } = pos(s.name);
    const cur = currentJob && String(s.job_id) === currentJob;
    const g = svg("g", { class: `wf-node st-${s.status}` + (cur ? " current" : ""), transform: `translate(${x},${y})`,
      "data-step": s.name, "data-status": s.status });
    const title = svg("title");
    title.textContent = `${s.name} (${s.task}): ${s.status}` + (s.reason ? ` — ${s.reason}` : "");
    g.append(title, svg("rect", { width: NW, height: NH, rx: 7 }));
    const text = (y, cls, str) => { const t = svg("text", { x: 10, y, class: cls }); t.textContent = str; return t; };
    g.append(text(19, "wf-name", clip(s.name, 22)), text(35, "wf-task", clip(s.task, 28)), text(50, "wf-state", s.status.replace("_", " ")));
    if (s.job_id) {
      const link = svg("a", { href: "#/jobs/" + s.job_id, class: "wf-link" });
      link.append(g);
      root.append(link);
    } else {
      root.append(g);
    }
  }
  return root;
}

async function workflowPage(view, id, params) {
  const currentJob = params.get("job") || "";
  const body = h("div", { id: "workflow" });
  view.replaceChildren(h("h1", {}, "Workflow ", h("span", { class: "mono", id: "wf-id" }, id), h("span", { id: "wf-status" })), body);
  poll(async () => {
    let wf;
    try {
      wf = await api("workflows/" + encodeURIComponent(id));
    } catch (e) {
      if (e.status === 404) {
        $("#wf-status").replaceChildren(badge("gone", ""));
        body.replaceChildren(h("div", { class: "banner", id: "wf-gone" },
          "No such workflow is stored. A finished workflow is deleted with its steps' jobs (completed-job retention)."));
        stopPolling();
        return;
      }
      throw e;
    }
    $("#wf-status").replaceChildren(badge(wf.status));
    const counts = {};
    for (const s of wf.steps) counts[s.status] = (counts[s.status] || 0) + 1;
    const kv = (k, v) => [h("dt", {}, k), h("dd", {}, v === undefined || v === null || v === "" ? h("span", { class: "muted" }, "–") : v)];
    const rows = wf.steps.map((s) => h("tr", { "data-step": s.name },
      h("td", {}, s.name),
      h("td", {}, s.task),
      h("td", {}, badge(s.status)),
      h("td", {}, [...s.after, ...s.after_settled.map((d) => d + " (settled)")].join(", ") || h("span", { class: "muted" }, "–")),
      h("td", {}, s.binds.map((b) => `${b.param} ← ${b.from}`).join(", ") || h("span", { class: "muted" }, "–")),
      h("td", { class: "mono" }, s.job_id ? h("a", { href: "#/jobs/" + s.job_id }, String(s.job_id)) : h("span", { class: "muted" }, "–")),
      h("td", { class: "err", title: s.reason || "" }, s.reason || "")));
    body.replaceChildren(
      h("div", { class: "grid" },
        h("section", { class: "panel" }, h("h2", {}, "Details"), h("dl", { class: "kv" },
          kv("Name", wf.name), kv("Status", badge(wf.status)), kv("Shard", "#" + wf.shard),
          kv("Steps", h("span", { id: "wf-counts" }, Object.entries(counts).map(([k, n]) => `${n} ${k}`).join(", "))),
          kv("Created", whenFull(wf.created_at)), kv("Finished", whenFull(wf.finished_at))),
          h("div", { class: "actions spaced" },
            wf.status === "running" ? actionButton("Cancel workflow", "danger", async () => {
              const r = await act("Cancel", `workflows/${wf.id}/cancel`);
              if (r) flash(`Workflow ${wf.id} cancelled: steps not ended will not run; running ones are stopped within a heartbeat.`);
            }, { id: "wf-cancel" }) : null,
            wf.status === "failed" || wf.status === "cancelled" ? actionButton("Retry workflow", "", async () => {
              const r = await act("Retry", `workflows/${wf.id}/retry`);
              if (r) flash(`Workflow ${wf.id} retried: its steps that did not complete run again; completed ones keep their results.`);
            }, { id: "wf-retry" }) : null))),
      h("section", { class: "panel" }, h("h2", {}, "Steps"),
        h("div", { class: "scroll wf-graph" }, stepGraph(wf, currentJob)),
        h("p", { class: "note" }, "Each arrow runs from a step to one that waits for it: solid when it must complete, dashed when it only has to end (AfterSettled), blue when its result is bound to a parameter. Click a step to open its job.")),
      h("section", { class: "panel scroll" }, table(["Step", "Task", "Status", "Waits for", "Binds", "Job", "Reason"], rows)));
  });
}

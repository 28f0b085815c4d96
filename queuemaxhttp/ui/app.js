// queuemax dashboard, part 2 of 2 (after core.js): the views (overview, jobs,
// job, dead letters) and the page's start. Like core.js, it inserts
// everything as text, never as HTML.
"use strict";

const CARD_STATUSES = ["pending", "scheduled", "processing", "completed", "failed"];

async function overview(view) {
  const cards = h("div", { class: "cards", id: "status-cards" });
  const chart = h("div", { class: "chart", id: "chart" });
  const legend = h("div", { class: "legend", id: "legend" });
  const tasks = h("div", { class: "scroll", id: "tasks" });
  const queues = h("div", { class: "scroll", id: "queues" });
  const shards = h("div", { class: "scroll", id: "shards" });
  const workers = h("div", { class: "scroll", id: "workers" });
  const breakers = h("div", { class: "scroll", id: "breakers" });
  const periodic = h("div", { class: "scroll", id: "periodic" });
  const updated = h("span", { class: "muted", id: "updated" });
  view.replaceChildren(
    h("h1", {}, "Overview", updated),
    cards,
    h("section", { class: "panel" },
      h("div", { class: "panel-head" }, h("h2", {}, "Throughput"), legend),
      chart,
      h("p", { class: "note" }, "Jobs per 5 s over up to the last 10 minutes, sampled while a dashboard is open. Completed and failed count every process's work; retried counts this process's workers.")),
    h("section", { class: "panel" }, h("h2", {}, "Tasks"), tasks),
    h("section", { class: "panel" }, h("h2", {}, "Queues"), queues),
    h("section", { class: "panel" }, h("h2", {}, "Shards"), shards),
    h("div", { class: "grid" },
      h("section", { class: "panel" }, h("h2", {}, "Workers"), workers),
      h("section", { class: "panel" }, h("h2", {}, "Circuit breakers"), breakers)),
    h("section", { class: "panel" }, h("h2", {}, "Periodic tasks"), periodic),
    h("section", { class: "panel" },
      h("div", { class: "panel-head" }, h("h2", {}, "Maintenance")),
      h("div", { class: "actions" },
        actionButton("Retry all failed", "", async () => {
          const out = await act("Retry", "retry");
          if (out) flash(`Re-queued ${out.retried} failed job(s).`);
        }, { id: "retry-all" }),
        actionButton("Recover orphans", "ghost", async () => {
          const out = await act("Recover", "recover");
          if (out) flash(`Recovered: ${out.requeued} re-queued, ${out.dead_lettered} dead-lettered.`);
        }, { id: "recover" }),
        actionButton("Purge…", "danger", () => openPurge(), { id: "purge" })),
      h("p", { class: "note" }, "Actions need the admin token; purge asks for confirmation first.")),
  );
  poll(async () => {
    try {
      const [stats, tk, tp, wk, br, pe] = await Promise.all([
        api("stats"), api("tasks"), api("throughput"), api("workers"), api("breakers"), api("periodic"),
      ]);
      state.lastStats = stats;
      renderCards(cards, stats);
      renderChart(chart, legend, tp);
      renderTasks(tasks, tk.tasks);
      renderQueues(queues, stats.queues || [], stats.global_limits || []);
      renderShards(shards, stats.shards);
      renderWorkers(workers, wk);
      renderBreakers(breakers, br);
      renderPeriodic(periodic, pe.periodic);
      updated.textContent = "updated " + new Date().toLocaleTimeString();
    } catch (e) {
      updated.textContent = "update failed: " + e.message;
    }
  });
}

function renderCards(el, s) {
  const kids = CARD_STATUSES.map((st) =>
    h("a", { class: "card " + st, href: "#/jobs?status=" + st, id: "count-" + st },
      h("div", { class: "n" }, fmt(s[st])), h("div", { class: "l" }, st)));
  kids.push(h("a", { class: "card dead_letters", href: "#/dead", id: "count-dead_letters" },
    h("div", { class: "n" }, fmt(s.dead_letters)), h("div", { class: "l" }, "dead letters")));
  if (s.workflows) {
    kids.push(h("a", { class: "card workflows", href: "#/workflows?status=running", id: "count-workflows",
      title: `${fmt(s.workflows.completed)} completed, ${fmt(s.workflows.failed)} failed, ${fmt(s.workflows.cancelled)} cancelled` },
      h("div", { class: "n" }, fmt(s.workflows.running)), h("div", { class: "l" }, "workflows running")));
  }
  kids.push(h("div", { class: "card", id: "count-total_processed" },
    h("div", { class: "n" }, fmt(s.total_processed)), h("div", { class: "l" }, "processed ever")));
  kids.push(h("div", { class: "card health", id: "health" },
    h("div", { class: "n" }, !s.is_healthy ? badge("unhealthy", "bad")
      : (s.degraded || []).length ? h("span", { title: "circuit breaker open for " + s.degraded.join(", ") + "; every other task runs" }, badge("degraded", "warn"))
      : badge("healthy", "ok")),
    h("div", { class: "l plain" }, `${s.num_shards} shards · circuit ${s.circuit_state.replace("_", " ")}`)));
  el.replaceChildren(...kids);
}

function table(headers, rows, empty) {
  const head = h("tr", {}, headers.map((c) => h("th", { class: c.num ? "num" : "" }, c.label || c)));
  const body = rows.length ? rows : [h("tr", {}, h("td", { colspan: headers.length, class: "empty" }, empty || "Nothing here."))];
  return h("table", {}, h("thead", {}, head), h("tbody", {}, body));
}

const N = (label) => ({ label, num: true });

function renderTasks(el, tasks) {
  const rows = tasks.map((t) => h("tr", { "data-task": t.task },
    h("td", {}, h("a", { href: "#/jobs?task=" + encodeURIComponent(t.task) }, t.task || "(no task)")),
    ...["pending", "scheduled", "processing", "completed", "failed", "dead_letters"].map((k) => h("td", { class: "num" }, fmt(t[k]))),
    h("td", {}, t.circuit ? badge(t.circuit) : h("span", { class: "muted" }, "–"))));
  el.replaceChildren(table(["Task", N("Pending"), N("Scheduled"), N("Running"), N("Completed"), N("Failed"), N("Dead"), "Circuit"], rows, "No tasks have jobs."));
}

// limitsText is a queue's limits with their use u over every process
// (Stats.GlobalLimits), e.g. "started 3/50 per 1s, running 1/4, 2 slots held"
// (slots a process keeps for its next jobs); "–" if none.
function limitsText(l, u) {
  const parts = [];
  u = u || { started: 0, running: 0 };
  if (l && l.rate) parts.push(`started ${u.started}/${l.rate} per ${l.per}`);
  if (l && l.concurrency) parts.push(`running ${u.running}/${l.concurrency}`);
  if (l && l.concurrency && u.slots > u.running) parts.push(`${u.slots} slots held`);
  return parts.length ? parts.join(", ") : h("span", { class: "muted" }, "–");
}

// setQueueLimits asks for a queue's limits ("50/s 4": a rate, a
// concurrency, either or both; empty clears them) and sets them.
async function setQueueLimits(q) {
  const cur = q.limits || {};
  const was = [cur.rate ? `${cur.rate}/${cur.per}` : "", cur.concurrency || ""].join(" ").trim();
  const text = prompt(`Global limits of queue ${q.name}: a rate N/UNIT (UNIT s, m, h or a duration) and/or a concurrency N, e.g. "50/s 4". Empty clears them.`, was);
  if (text === null) return;
  const body = {};
  for (const part of text.trim().split(/[\s,]+/).filter(Boolean)) {
    const m = part.match(/^(\d+)\/(\w+)$/);
    if (m) {
      body.rate = Number(m[1]);
      body.per = { s: "1s", m: "1m", h: "1h" }[m[2]] || m[2];
    } else if (/^\d+$/.test(part)) {
      body.concurrency = Number(part);
    } else {
      flash(`Limits: "${part}" is neither a rate N/UNIT nor a concurrency N.`, true);
      return;
    }
  }
  const out = await act("Limits", `queues/${encodeURIComponent(q.name)}/limits`, body);
  if (out) {
    flash(`Queue ${q.name}: ${Object.keys(out.limits || {}).length ? "limits set" : "limits cleared"}; the table updates at the next refresh.`);
  }
}

function renderQueues(el, qs, limits) {
  const use = {};
  for (const g of limits || []) if (g.scope === "queue") use[g.name] = g;
  const rows = qs.map((q) => h("tr", { "data-queue": q.name },
    h("td", {}, q.name),
    ...["pending", "scheduled", "processing"].map((k) => h("td", { class: "num" }, fmt(q[k]))),
    h("td", {}, q.paused ? h("span", { title: whenFull(q.paused_at) }, badge("paused", "bad")) : badge("running", "ok")),
    h("td", {}, actionButton(q.paused ? "Resume" : "Pause", "ghost", async () => {
      const verb = q.paused ? "resume" : "pause";
      const out = await act(q.paused ? "Resume" : "Pause", `queues/${encodeURIComponent(q.name)}/${verb}`);
      if (out) flash(`Queue ${q.name} ${out.paused ? "paused: workers start none of its jobs" : "resumed"}.`);
    }, { id: "queue-toggle-" + q.name })),
    h("td", {}, limitsText(q.limits, use[q.name])),
    h("td", {}, actionButton("Limits…", "ghost", () => setQueueLimits(q), { id: "queue-limits-" + q.name }))));
  el.replaceChildren(
    table(["Queue", N("Pending"), N("Scheduled"), N("Running"), "State", "", "Global limits", ""], rows, "No queue has jobs."),
    h("p", { class: "note" }, "A paused queue's jobs wait: every worker of every process skips them from its next claim; running jobs finish. " +
      "A queue's global limits (a rate of starts, a cap on running jobs) hold over every process from its next claim."));
}

function renderShards(el, shards) {
  const rows = shards.map((s) => h("tr", { "data-shard": s.shard },
    h("td", {}, h("a", { href: "#/jobs?shard=" + s.shard }, "#" + s.shard)),
    ...["pending", "scheduled", "processing", "completed", "failed", "dead_letters"].map((k) => h("td", { class: "num" }, fmt(s[k]))),
    h("td", {}, s.healthy ? badge("ok") : h("span", { title: s.last_error || "" }, badge("error", "bad"))),
    h("td", {}, s.oldest_pending ? when(s.oldest_pending) : "–"),
    h("td", { class: "num" }, fmt(s.total_processed)),
    h("td", { class: "num" }, fmt(s.total_failed))));
  el.replaceChildren(table(["Shard", N("Pending"), N("Scheduled"), N("Running"), N("Completed"), N("Failed"), N("Dead"), "Health",
    "Oldest pending", N("Processed ever"), N("Failed ever")], rows));
}

function renderWorkers(el, wk) {
  const rows = wk.workers.map((w) => h("tr", {},
    h("td", { class: "mono" }, w.id),
    h("td", {}, `${w.host} (pid ${w.pid})`),
    h("td", {}, (w.tasks && w.tasks.length) ? w.tasks.join(", ") : "every task"),
    h("td", { class: "num" }, `${w.running} / ${w.concurrency}`),
    h("td", {}, when(w.started_at)),
    h("td", {}, when(w.updated_at))));
  el.replaceChildren(
    table(["Worker", "Host", "Tasks", N("Busy"), "Started", "Seen"], rows,
      "No live worker."),
    h("p", { class: "note" }, "The live worker registry: every process that runs jobs, refreshed with its heartbeats."));
}

function renderBreakers(el, br) {
  const rows = br.breakers.map((b) => h("tr", { "data-task": b.task },
    h("td", {}, b.task || "(all tasks)"),
    h("td", {}, badge(b.state)),
    h("td", { class: "num" }, b.threshold ? `${b.failures} / ${b.threshold}` : String(b.failures)),
    h("td", {}, b.recovery_in_seconds ? "probe in " + Math.ceil(b.recovery_in_seconds) + "s"
      : b.state === "half_open" ? (b.probe_owner ? "probe on " + b.probe_owner : "probe due") : "–"),
    h("td", { class: "err", title: b.last_error || "" }, b.state !== "closed" ? (b.last_error || "") : "")));
  el.replaceChildren(
    table(["Task", "State", N("Dependency failures"), "Recovery", "Last error"], rows, "No task has a breaker."),
    h("p", { class: "note" }, "One breaker per task, stored with the jobs and shared by every process. Only errors that say a dependency is failing count (timeouts, connection errors, 5xx, RetryAfter, Unavailable)."));
}

function renderPeriodic(el, ps) {
  const rows = ps.map((p) => h("tr", {},
    h("td", {}, p.task),
    h("td", { class: "mono" }, p.schedule),
    h("td", {}, when(p.next_run)),
    h("td", {}, when(p.last_run)),
    h("td", {}, p.last_job_id ? h("a", { href: "#/jobs/" + p.last_job_id }, badge(p.last_outcome || "?")) : h("span", { class: "muted" }, "never ran")),
    h("td", {}, p.misfire)));
  el.replaceChildren(table(["Task", "Schedule", "Next run", "Last run", "Last outcome", "Misfire"], rows, "No periodic tasks are registered."));
}

const SERIES = ["completed", "failed", "retried"];

function renderChart(el, legend, tp) {
  const W = Math.max(320, Math.round(el.clientWidth || 720)), H = 190, L = 36, R = 8, T = 10, B = 22;
  // Before the first sample there is no data: start the axis there (but
  // show at least a minute), so that a fresh dashboard has a readable chart.
  let first = tp.points.findIndex((p) => p.completed !== null);
  if (first < 0) first = tp.points.length;
  const pts = tp.points.slice(Math.max(0, Math.min(first, tp.points.length - 12)));
  let maxV = 0;
  const totals = { completed: 0, failed: 0, retried: 0 };
  for (const p of pts) for (const s of SERIES) if (p[s] !== null) { maxV = Math.max(maxV, p[s]); totals[s] += p[s]; }
  const top = niceMax(maxV);
  const x = (i) => L + (i / Math.max(1, pts.length - 1)) * (W - L - R);
  const y = (v) => T + (1 - v / top) * (H - T - B);
  const root = svg("svg", { viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: "img", "aria-label": "throughput chart" });
  for (let i = 0; i <= 4; i++) {
    const v = (top * i) / 4, yy = y(v);
    root.append(svg("line", { x1: L, x2: W - R, y1: yy, y2: yy, class: "grid-line" }));
    const t = svg("text", { x: L - 6, y: yy + 3, "text-anchor": "end", class: "axis" });
    t.textContent = Number.isInteger(v) ? v : v.toFixed(1);
    root.append(t);
  }
  const span = pts.length * tp.step_seconds;
  const rel = (sec) => (sec >= 120 ? `-${Math.round(sec / 60)}m` : `-${Math.round(sec)}s`);
  for (const [frac, label] of [[0, rel(span)], [0.5, rel(span / 2)], [1, "now"]]) {
    const t = svg("text", { x: L + frac * (W - L - R), y: H - 6, "text-anchor": frac === 0 ? "start" : frac === 1 ? "end" : "middle", class: "axis" });
    t.textContent = label;
    root.append(t);
  }
  for (const s of SERIES) {
    let seg = [];
    const flush = () => {
      if (seg.length === 1) {
        const [cx, cy] = seg[0].split(",");
        root.append(svg("circle", { cx, cy, r: 2.5, class: "dot-" + s }));
      }
      if (seg.length) root.append(svg("polyline", { points: seg.join(" "), class: "s-" + s, "data-series": s }));
      seg = [];
    };
    pts.forEach((p, i) => { if (p[s] === null) flush(); else seg.push(`${x(i).toFixed(1)},${y(p[s]).toFixed(1)}`); });
    flush();
  }
  el.replaceChildren(root);
  legend.replaceChildren(...SERIES.map((s) => h("span", { class: s, id: "total-" + s }, s, h("b", {}, fmt(totals[s])))));
}

function niceMax(v) {
  if (v <= 4) return 4;
  const p = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

// ---------- purge dialog ----------

function openPurge() {
  const dlg = $("#confirm"), fs = $("#confirm-statuses"), text = $("#confirm-text"), ok = $("#confirm-ok");
  const counts = state.lastStats || {};
  const sts = (state.info && state.info.statuses) || CARD_STATUSES;
  fs.replaceChildren(h("legend", {}, "Statuses"), ...sts.map((st) =>
    h("label", {}, h("input", { type: "checkbox", value: st, name: "status" }), " ", st,
      counts[st] !== undefined ? h("span", { class: "muted" }, ` (${fmt(counts[st])})`) : "",
      st === "processing" ? h("span", { class: "muted" }, " — running!") : "")));
  text.value = "";
  const check = () => {
    ok.disabled = text.value.trim() !== "purge" || !fs.querySelector("input:checked");
  };
  fs.onchange = check;
  text.oninput = check;
  check();
  $("#confirm-cancel").onclick = () => dlg.close();
  $("#confirm-form").onsubmit = async (ev) => {
    ev.preventDefault();
    const statuses = [...fs.querySelectorAll("input:checked")].map((i) => i.value);
    dlg.close();
    const out = await act("Purge", "purge", { statuses });
    if (out) flash(`Purged ${out.purged} job(s).`);
  };
  dlg.showModal();
  text.focus();
}

// ---------- job lists ----------

async function taskNames() {
  try { return (await api("tasks")).tasks.map((t) => t.task); } catch (e) { return []; }
}

async function jobsPage(view, params) {
  const f = {
    status: params.get("status") || "", task: params.get("task") || "",
    shard: params.get("shard") || "", tag: params.get("tag") || "", q: params.get("q") || "",
  };
  const names = await taskNames();
  if (f.task && !names.includes(f.task)) names.push(f.task);
  const sts = (state.info && state.info.statuses) || CARD_STATUSES;
  const go = () => {
    const p = new URLSearchParams();
    for (const k of ["status", "task", "shard", "tag", "q"]) {
      const v = form.elements[k].value.trim();
      if (v) p.set(k, v);
    }
    const s = p.toString();
    location.hash = "#/jobs" + (s ? "?" + s : "");
  };
  const sel = (name, label, opts, cur) => h("label", {}, label,
    h("select", { name, id: "filter-" + name, onchange: go },
      h("option", { value: "" }, "any"),
      opts.map(([v, t]) => h("option", { value: v, selected: String(v) === cur }, t))));
  const form = h("form", { class: "filters", id: "filters", onsubmit: (e) => { e.preventDefault(); go(); } },
    sel("status", "Status", sts.map((s) => [s, s]), f.status),
    sel("task", "Task", names.map((n) => [n, n || "(no task)"]), f.task),
    sel("shard", "Shard", [...Array(state.info.shards).keys()].map((i) => [i, "#" + i]), f.shard),
    h("label", {}, "Tag", h("input", { type: "search", name: "tag", id: "filter-tag", value: f.tag, placeholder: "one tag" })),
    h("label", {}, "Text", h("input", { type: "search", name: "q", id: "filter-q", value: f.q, placeholder: "id, payload, error, worker…" })),
    h("button", { type: "submit", class: "btn" }, "Filter"),
    h("a", { href: "#/jobs", class: "btn ghost" }, "Clear"));
  const list = h("div", { class: "scroll", id: "job-list" }, h("p", { class: "muted" }, "Loading…"));
  view.replaceChildren(h("h1", {}, "Jobs"), h("section", { class: "panel" }, form, list));
  const q = new URLSearchParams({ limit: "200" });
  for (const [k, v] of Object.entries(f)) if (v) q.set(k, v);
  const out = await api("jobs?" + q);
  const rows = out.jobs.map((j) => h("tr", { class: "clickable", "data-job": j.id, onclick: (e) => {
      if (e.target.closest("button, a")) return;
      location.hash = "#/jobs/" + j.id;
    } },
    h("td", { class: "mono" }, h("a", { href: "#/jobs/" + j.id }, String(j.id))),
    h("td", {}, j.task || "(no task)", ...(j.tags || []).map((t) => h("a", { class: "tag", href: "#/jobs?tag=" + encodeURIComponent(t) }, t))),
    h("td", {}, badge(j.status)),
    h("td", { class: "num" }, `${j.attempts} / ${j.max_attempts}`),
    h("td", { class: "num" }, "#" + j.shard),
    h("td", {}, when(j.created_at)),
    h("td", { class: "err", title: j.held || j.last_error || "" }, j.held ? "held: " + j.held : (j.last_error || "")),
    h("td", {}, j.status === "failed" ? actionButton("Retry", "small", async () => {
      const r = await act("Retry", `jobs/${j.id}/retry`);
      if (r) { flash(`Job ${j.id} re-queued.`); route(); }
    }) : "")));
  list.replaceChildren(table(["ID", "Task", "Status", N("Attempts"), N("Shard"), "Created", "Last error", ""], rows, "No jobs match."),
    h("p", { class: "note", id: "job-count" }, `${out.jobs.length} job(s)` + (out.jobs.length === 200 ? " (the newest 200)" : "") +
      ". Completed jobs are kept for the queue's completed-job retention (default 1h)."));
}

// ---------- one job ----------

async function jobPage(view, id) {
  const body = h("div", { id: "job" });
  view.replaceChildren(h("h1", {}, "Job ", h("span", { class: "mono", id: "job-id" }, id), h("span", { id: "job-status" })), body);
  poll(async () => {
    let j;
    try {
      j = await api("jobs/" + encodeURIComponent(id));
    } catch (e) {
      if (e.status === 404) {
        $("#job-status").replaceChildren(badge("gone", ""));
        body.replaceChildren(h("div", { class: "banner", id: "job-gone" },
          "No such job is stored. Completed jobs are deleted after the completed-job retention (default 1h), or at once when it is off."));
        stopPolling();
        return;
      }
      throw e;
    }
    $("#job-status").replaceChildren(badge(j.status));
    const kv = (k, v) => [h("dt", {}, k), h("dd", {}, v === undefined || v === null || v === "" ? h("span", { class: "muted" }, "–") : v)];
    const section = (title, content, cls, idAttr) => content
      ? h("section", { class: "panel" }, h("h2", {}, title), h("pre", { class: cls || "", id: idAttr }, content)) : null;
    body.replaceChildren(...[
      h("div", { class: "grid" },
        h("section", { class: "panel" }, h("h2", {}, "Details"), h("dl", { class: "kv" },
          kv("Task", j.task || "(no task)"), kv("Status", badge(j.status)), kv("Queue", h("span", { id: "job-queue" }, j.queue)), kv("Shard", "#" + j.shard),
          kv("Priority", ["low", "medium", "high"][j.priority] || j.priority),
          kv("Attempts", h("span", { id: "job-attempts" }, `${j.attempts} of ${j.max_attempts}`)),
          kv("Partition key", j.key === undefined ? "" : String(j.key)),
          kv("Tags", j.tags ? h("span", { id: "job-tags" }, ...j.tags.map((t) => h("a", { class: "tag", href: "#/jobs?tag=" + encodeURIComponent(t) }, t))) : ""),
          kv("Timeout", j.timeout_ms ? (j.timeout_ms / 1000) + "s (this job's own)" : ""),
          kv("Lease holder", j.worker_id ? h("span", { class: "mono", id: "job-worker" }, j.worker_id) : ""),
          j.workflow_id ? kv("Workflow", h("a", { id: "job-workflow", href: `#/workflows/${j.workflow_id}?job=${j.id}` }, "workflow " + j.workflow_id)) : null)),
        h("section", { class: "panel" }, h("h2", {}, "Timestamps"), h("dl", { class: "kv" },
          kv("Created", whenFull(j.created_at)), kv("Started", whenFull(j.started_at)),
          kv("Heartbeat", whenFull(j.heartbeat)), kv("Completed", whenFull(j.completed_at)),
          kv("Next run", whenFull(j.next_run_at))),
          h("div", { class: "actions spaced" },
            j.status === "failed" ? actionButton("Retry job", "", async () => {
              const r = await act("Retry", `jobs/${j.id}/retry`);
              if (r) flash(`Job ${j.id} re-queued.`);
            }, { id: "job-retry" }) : null,
            ["pending", "scheduled", "processing"].includes(j.status) && !j.cancel_requested ? actionButton("Cancel job", "", async () => {
              const r = await act("Cancel", `jobs/${j.id}/cancel`);
              if (r) flash(r.status === "cancelled" ? `Job ${j.id} cancelled.` : `Job ${j.id} is running: its worker stops it within a heartbeat.`);
            }, { id: "job-cancel" }) : null,
            j.cancel_requested ? h("span", { class: "muted", id: "job-cancel-requested" }, "cancellation requested") : null))),
      section("Payload", pretty(j.payload), "", "job-payload"),
      j.result !== undefined ? section("Result", pretty(j.result), "", "job-result") : null,
      j.steps ? stepsPanel(j.steps) : null,
      j.held ? section("Held", j.held, "error", "job-held") : null,
      j.last_error ? section("Error" + (j.error_type ? " (" + j.error_type + ")" : ""), j.last_error, "error", "job-error") : null,
      section("Stack", j.error_stack, "", "job-stack"),
      j.metadata ? section("Metadata", pretty(j.metadata), "", "job-metadata") : null].filter(Boolean));
  });
}

// stepsPanel lists the progress a job's steps recorded (queuemax.Step, Do,
// SetCursor): each step done with its result, or running at its cursor.
function stepsPanel(steps) {
  const done = steps.filter((s) => s.done).length;
  const rows = steps.map((s) => h("tr", { "data-step": s.name },
    h("td", { class: "mono" }, s.name),
    h("td", {}, s.done ? badge("done", "completed") : badge("running", "processing")),
    h("td", { class: "mono" }, s.done ? JSON.stringify(s.result) : (s.cursor === undefined ? "–" : "cursor " + JSON.stringify(s.cursor))),
    h("td", {}, when(s.updated_at))));
  return h("section", { class: "panel", id: "job-steps" }, h("h2", {}, `Steps (${done} of ${steps.length} done)`),
    h("div", { class: "scroll" }, table(["Step", "State", "Result or cursor", "Updated"], rows)));
}

// ---------- dead letters ----------

async function deadPage(view, params) {
  const task = params.get("task") || "", shard = params.get("shard") || "";
  const q = new URLSearchParams({ limit: "200" });
  if (task) q.set("task", task);
  if (shard) q.set("shard", shard);
  const list = h("div", { class: "scroll", id: "dead-list" }, h("p", { class: "muted" }, "Loading…"));
  const names = await taskNames();
  if (task && !names.includes(task)) names.push(task);
  const go = () => {
    const p = new URLSearchParams();
    for (const k of ["task", "shard"]) if (form.elements[k].value) p.set(k, form.elements[k].value);
    const s = p.toString();
    location.hash = "#/dead" + (s ? "?" + s : "");
  };
  const sel = (name, label, opts, cur) => h("label", {}, label,
    h("select", { name, id: "dead-filter-" + name, onchange: go },
      h("option", { value: "" }, "any"),
      opts.map(([v, t]) => h("option", { value: v, selected: String(v) === cur }, t))));
  const form = h("form", { class: "filters", onsubmit: (e) => { e.preventDefault(); go(); } },
    sel("task", "Task", names.map((n) => [n, n || "(no task)"]), task),
    sel("shard", "Shard", [...Array(state.info.shards).keys()].map((i) => [i, "#" + i]), shard));
  view.replaceChildren(h("h1", {}, "Dead letters"),
    h("section", { class: "panel" }, form,
      h("p", { class: "note" }, "Jobs that failed for good. Requeue gives a job a fresh attempt budget."), list));
  const out = await api("dead-letters?" + q);
  const rows = out.dead_letters.map((d) => h("tr", { "data-dead": `${d.shard}/${d.id}` },
    h("td", { class: "mono" }, `#${d.shard}/${d.id}`),
    h("td", {}, d.original_job_id ? h("a", { class: "mono", href: "#/jobs/" + d.original_job_id }, String(d.original_job_id)) : "–"),
    h("td", {}, d.task || "(no task)"),
    h("td", { class: "err", title: d.error }, (d.error_type ? d.error_type + ": " : "") + d.error),
    h("td", { class: "num" }, fmt(d.attempts)),
    h("td", {}, when(d.failed_at)),
    h("td", {}, actionButton("Requeue", "small", async (ev) => {
      const r = await act("Requeue", `dead-letters/${d.shard}/${d.id}/requeue`);
      if (r) {
        ev.target.closest("tr").remove();
        flash(`Re-queued as job ${r.job_id}.`, false, { href: "#/jobs/" + r.job_id, text: "Open job" });
      }
    }, { "data-requeue": `${d.shard}/${d.id}` }))));
  list.replaceChildren(table(["Dead letter", "Job", "Task", "Error", N("Attempts"), "Failed", ""], rows, "The dead-letter queue is empty."));
}

// ---------- start ----------

$("#token-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const v = $("#token").value.trim();
  if (!v) return;
  sessionStorage.setItem(TOKEN_KEY, v);
  $("#token").value = "";
  renderMode();
  route();
});
$("#lock").addEventListener("click", () => {
  sessionStorage.removeItem(TOKEN_KEY);
  renderMode();
  route();
});
window.addEventListener("hashchange", route);
route();

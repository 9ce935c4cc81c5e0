// Chimera's web dashboard. It reads the API with the project's token and
// follows the live event stream (reconnecting with Last-Event-ID, so it
// misses nothing). Everything shown is set as text, never parsed as HTML:
// tasks, diffs and logs come from agents.
"use strict";

const TOKEN_KEY = "chimera-token:" + location.host;
const $ = (id) => document.getElementById(id);

const state = {
  token: null,
  agents: new Map(),
  selected: null,
  detail: null,
  lastEventId: null,
  tab: "agents",
  snapshots: [],
  dryRun: null,
  file: null,
  node: null,
  // What each working agent is doing now (its last progress line).
  progress: new Map(),
};

// How long the core waits for the answer to a permission question.
const QUESTION_MS = 120_000;

// ---- small helpers --------------------------------------------------------

function h(tag, props, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "class") el.className = v;
    else el.setAttribute(k, v === true ? "" : v);
  }
  el.append(...nodes(children));
  return el;
}

// Children as given to `h`: nested lists flattened; null, undefined and
// false left out; anything else not a node shown as text.
function nodes(children) {
  return children
    .flat(Infinity)
    .filter((c) => c !== null && c !== undefined && c !== false)
    .map((c) => (c instanceof Node ? c : String(c)));
}

// Replaces what `el` shows.
function fill(el, ...children) {
  el.replaceChildren(...nodes(children));
}

function ago(ms) {
  const s = Math.max(0, Math.round((Date.now() - ms) / 1000));
  if (s < 60) return s + " s ago";
  if (s < 3600) return Math.floor(s / 60) + " min ago";
  if (s < 86400) return Math.floor(s / 3600) + " h ago";
  return Math.floor(s / 86400) + " d ago";
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Says what went wrong, at the top of the page, until dismissed.
function flash(message) {
  logLine("error", message);
  const el = $("toast");
  fill(el, message, " ", h("button", { onclick: () => (el.hidden = true) }, "Dismiss"));
  el.hidden = false;
}

// ---- the API --------------------------------------------------------------

async function api(method, path, body) {
  const headers = { Authorization: "Bearer " + state.token };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const res = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const data = await res.json().catch(() => ({ error: res.statusText }));
  if (res.status === 401) {
    logout("The token was refused: paste the one in .chimera/api.json now.");
    throw new Error(data.error);
  }
  if (!res.ok) throw new Error(data.error || res.statusText);
  return data;
}

// Runs an action the human asked for; says what went wrong.
async function act(fn) {
  try {
    await fn();
  } catch (e) {
    if (e.message) flash(e.message);
  }
}

// ---- token ----------------------------------------------------------------

// A one-time login link (`#login=CODE`, from :Chimera dashboard or
// `chimera serve`) is exchanged for the token once; the address keeps
// neither. Resolves to the token, or null (and says why).
async function takeTokenFromAddress() {
  const m = location.hash.match(/login=([0-9a-zA-Z.]+)/);
  if (!m) return null;
  history.replaceState(null, "", location.pathname);
  const res = await fetch("/login", {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ code: m[1] }),
  });
  const data = await res.json().catch(() => ({ error: res.statusText }));
  if (!res.ok) {
    $("login-error").textContent = data.error || res.statusText;
    return null;
  }
  localStorage.setItem(TOKEN_KEY, data.token);
  return data.token;
}

function logout(message) {
  localStorage.removeItem(TOKEN_KEY);
  state.token = null;
  $("app").hidden = true;
  $("login").hidden = false;
  $("login-error").textContent = message || "";
}

async function login(token) {
  state.token = token;
  try {
    const st = await api("GET", "/status");
    localStorage.setItem(TOKEN_KEY, token);
    $("root").textContent = st.root;
    $("login").hidden = true;
    $("app").hidden = false;
    follow(token);
  } catch (e) {
    $("login-error").textContent = e.message;
  }
}

// ---- the live stream ------------------------------------------------------

function setLink(on) {
  const el = $("link");
  el.textContent = on ? "live" : "reconnecting…";
  el.className = "link " + (on ? "on" : "off");
}

function parseEvent(block) {
  const ev = { id: null, event: "message", data: "" };
  for (const line of block.split("\n")) {
    if (line.startsWith(":")) continue;
    const i = line.indexOf(":");
    const field = i < 0 ? line : line.slice(0, i);
    const value = i < 0 ? "" : line.slice(i + 1).replace(/^ /, "");
    if (field === "id") ev.id = value;
    else if (field === "event") ev.event = value;
    else if (field === "data") ev.data += (ev.data ? "\n" : "") + value;
  }
  return ev;
}

// Follows /events/stream while `token` is the one in use. The state is
// read after the stream is open, so nothing falls between the two.
async function follow(token) {
  let loaded = false;
  while (state.token === token) {
    try {
      const headers = { Authorization: "Bearer " + token };
      if (state.lastEventId) headers["Last-Event-ID"] = state.lastEventId;
      const res = await fetch("/events/stream", { headers });
      if (res.status === 401) return logout("The token was refused: paste the current one.");
      if (!res.ok) throw new Error(res.statusText);
      setLink(true);
      if (!loaded) {
        await loadAll();
        loaded = true;
      }
      const reader = res.body.getReader();
      const text = new TextDecoder();
      let buf = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += text.decode(value, { stream: true }).replace(/\r\n?/g, "\n");
        let end;
        while ((end = buf.indexOf("\n\n")) >= 0) {
          const ev = parseEvent(buf.slice(0, end));
          buf = buf.slice(end + 2);
          if (ev.id) state.lastEventId = ev.id;
          if (ev.event !== "message") dispatch(ev.event, JSON.parse(ev.data || "{}"));
        }
      }
    } catch (e) {
      // The server went away (or restarted): try again shortly.
    }
    setLink(false);
    await sleep(1000);
  }
}

function logLine(kind, text) {
  const log = $("events");
  log.prepend(h("li", {}, new Date().toLocaleTimeString(), "  ", kind, "  ", text));
  while (log.children.length > 500) log.lastChild.remove();
}

function dispatch(kind, data) {
  switch (kind) {
    case "agent": {
      const a = data.agent;
      logLine("agent", `${a.id} ${a.state}: ${a.task}`);
      if (!working(a)) state.progress.delete(a.id);
      state.agents.set(a.id, a);
      renderAgents();
      if (state.selected === a.id) loadDetail(a.id);
      if (state.tab === "effects") loadEffects();
      break;
    }
    case "resolved":
      logLine("resolved", `${data.id} ${data.accepted ? "accepted" : "rejected"} ${data.files.join(", ")}`);
      if (state.selected === data.id) loadDetail(data.id);
      break;
    case "snapshots":
      state.snapshots = data.snapshots;
      renderSnapshots();
      break;
    case "rollback":
      logLine("rollback", data.message);
      break;
    case "remora":
      logLine("remora", `${data.event_type} ${data.message || data.result || data.error || ""}`);
      if (state.node && [data.agent_id, data.from_agent, data.to_agent].includes(state.node)) {
        loadNode(state.node);
      }
      break;
    case "topology":
      if (state.tab === "nodes" && (!data.path || data.path === state.file)) loadFiles();
      break;
    case "notice":
      logLine(data.level, data.message);
      break;
    case "progress":
      state.progress.set(data.agent, data.message);
      showProgress(data.agent);
      break;
    // The pieces of a streamed reply: what they add up to arrives as its
    // own event (the chat entry, the agent's record).
    case "chat_delta":
    case "agent_said":
      break;
    case "permission":
      logLine("permission", `${data.agent} asks: ${data.question}`);
      ask(data);
      break;
    // Answered here, in Neovim or by another client, or out of time.
    case "answered":
      document.querySelector(`#questions li[data-question="${CSS.escape(String(data.id))}"]`)?.dispatchEvent(new Event("closed"));
      break;
    case "reset":
      logLine("reset", "events were missed: reading everything again");
      loadAll();
      break;
    default:
      logLine(kind, JSON.stringify(data));
  }
}

async function loadAll() {
  await act(async () => {
    const agents = await api("GET", "/agents");
    state.agents = new Map(agents.map((a) => [a.id, a]));
    renderAgents();
    state.snapshots = await api("GET", "/snapshots");
    renderSnapshots();
    if (state.selected) await loadDetail(state.selected);
    if (state.tab === "effects") await loadEffects();
    if (state.tab === "nodes") await loadFiles();
  });
}

// ---- agents ---------------------------------------------------------------

// An agent's tokens in a few characters: "12.3k tok $0.004", "≈850 tok"
// (estimated: the server did not count them), "" for none.
function tokens(u) {
  const n = u ? (u.input || 0) + (u.output || 0) : 0;
  if (n === 0) return "";
  const count = n >= 1000 ? (n / 1000).toFixed(1) + "k" : String(n);
  const cost = u.cost > 0 ? " $" + u.cost.toFixed(3) : "";
  return (u.estimated ? "≈" : "") + count + " tok" + cost;
}

function working(a) {
  return a.state === "queued" || a.state === "running";
}

// The line under a working agent that says what it does now.
function progressLine(a) {
  const said = working(a) ? state.progress.get(a.id) : undefined;
  return said ? h("span", { class: "muted progress" }, said) : "";
}

// Shows agent `id`'s latest progress in the list without redrawing it.
function showProgress(id) {
  const a = state.agents.get(id);
  const item = document.querySelector(`#agents li[data-agent="${CSS.escape(id)}"]`);
  if (!a || !item) return;
  item.querySelector(".progress")?.remove();
  const line = progressLine(a);
  if (line) item.append(line);
}

// A permission question an agent asks (`capabilities.ask`): the first
// answer of any client counts, and an `answered` event closes it
// everywhere; unanswered, the core refuses it after QUESTION_MS.
function ask(q) {
  const list = $("questions");
  const done = () => {
    item.remove();
    list.hidden = list.children.length === 0;
  };
  const answer = (allow) =>
    act(async () => {
      done();
      await api("POST", "/questions/" + q.id, { allow });
      logLine("permission", `${allow ? "allowed" : "refused"}: ${q.question}`);
    });
  const item = h(
    "li",
    { "data-question": String(q.id), onclosed: done },
    h("code", {}, q.agent),
    h("span", { class: "question" }, "asks: " + q.question),
    h("button", { class: "primary", onclick: () => answer(true) }, "Allow"),
    h("button", { class: "danger", onclick: () => answer(false) }, "Refuse"),
  );
  list.append(item);
  list.hidden = false;
  setTimeout(done, QUESTION_MS + 5000);
}

function renderAgents() {
  const list = $("agents");
  const agents = [...state.agents.values()].sort((a, b) => b.created_at - a.created_at);
  const total = agents.reduce(
    (t, a) => ({
      input: t.input + (a.usage?.input || 0),
      output: t.output + (a.usage?.output || 0),
      cost: t.cost + (a.usage?.cost || 0),
      estimated: t.estimated || Boolean(a.usage?.estimated),
    }),
    { input: 0, output: 0, cost: 0, estimated: false },
  );
  $("agents-total").textContent = tokens(total) && "All agents: " + tokens(total);
  fill(list,
    ...agents.map((a) =>
      h(
        "li",
        {
          class: a.id === state.selected ? "selected" : "",
          "data-agent": a.id,
          onclick: () => select(a.id),
        },
        h("span", { class: "badge " + a.state }, a.state),
        h("code", {}, a.id),
        " ",
        h("span", { class: "muted" }, ago(a.updated_at)),
        tokens(a.usage) ? " · " : "",
        h("span", { class: "muted tokens" }, tokens(a.usage)),
        h("span", { class: "task" }, withCode(a.task)),
        progressLine(a),
      ),
    ),
  );
  if (agents.length === 0) fill(list, h("li", { class: "muted" }, "No agents yet."));
}

function select(id) {
  state.selected = id;
  renderAgents();
  loadDetail(id);
}

async function loadDetail(id) {
  await act(async () => {
    const detail = await api("GET", "/agents/" + encodeURIComponent(id));
    if (state.selected !== id) return;
    state.detail = detail;
    state.agents.set(id, detail.agent);
    renderDetail();
  });
}

// Text whose `backticked` parts are code, as agents and models write
// names in summaries: shown as code, never as literal backticks.
function withCode(text) {
  return String(text)
    .split("`")
    .map((part, i) => (i % 2 === 1 ? h("code", {}, part) : part));
}

function field(name, value) {
  return value === null || value === undefined || value === "" ? [] : [h("dt", {}, name), h("dd", {}, value)];
}

function renderDetail() {
  const { agent: a, proposal, diff } = state.detail;
  const box = $("agent");
  const active = a.state === "queued" || a.state === "running";
  const feedback = h("textarea", { id: "feedback", placeholder: "Feedback for another try (optional)" });
  const actions = h(
    "div",
    { class: "actions" },
    a.state === "completed" &&
      h("button", { class: "primary", id: "accept", onclick: () => accept(a.id) }, "Accept"),
    a.state === "completed" &&
      h("button", { id: "reject", onclick: () => reject(a.id, feedback.value) }, "Reject"),
    active && h("button", { class: "danger", id: "cancel", onclick: () => cancel(a.id) }, "Cancel"),
  );
  fill(box,
    h("h2", {}, a.task),
    h(
      "dl",
      {},
      field("Agent", a.id),
      field("State", a.state + (a.conflicted ? " (conflicts with your edits)" : "") +
        (a.undone ? " (undone in the editor: u took it back)" : "")),
      field("File", a.file),
      field("Done by", a.external ? `${a.external} (ACP)` : null),
      field("Summary", a.summary && withCode(a.summary)),
      field("Error", a.error),
      field("Rounds", a.rounds),
      field("Tokens", a.usage && tokens(a.usage) &&
        `${a.usage.input} in, ${a.usage.output} out${a.usage.estimated ? " (estimated)" : ""}` +
        (a.usage.cost > 0 ? `, $${a.usage.cost.toFixed(4)}` : "")),
      field("Feedback", a.feedback.join(" / ")),
    ),
    actions,
    a.state === "completed" ? feedback : null,
    proposal.length ? renderProposal(a.id, proposal) : renderUnified(diff, a),
    a.log.length ? h("details", {}, h("summary", {}, "Log"), h("pre", {}, a.log.join("\n"))) : null,
  );
}

function renderProposal(id, files) {
  return files.map((f) =>
    h(
      "div",
      { class: "diff" },
      h("div", { class: "file" }, f.path, " ", h("span", { class: "muted" }, f.change)),
      f.hunks.map((hk) =>
        h(
          "div",
          {},
          h(
            "div",
            { class: "hunk-head" },
            `hunk ${hk.number} at line ${hk.old_start + 1}`,
            h(
              "span",
              {},
              h("button", { onclick: () => acceptHunk(id, hk.number) }, "Accept hunk"),
              " ",
              h("button", { onclick: () => rejectHunk(id, hk.number) }, "Reject hunk"),
            ),
          ),
          h(
            "pre",
            {},
            (hk.before || []).map((l) => h("span", { class: "ctx" }, " " + l)),
            hk.old_lines.map((l) => h("span", { class: "del" }, "-" + l)),
            hk.new_lines.map((l) => h("span", { class: "add" }, "+" + l)),
            (hk.after || []).map((l) => h("span", { class: "ctx" }, " " + l)),
          ),
        ),
      ),
    ),
  );
}

// What an agent without a proposal to review did (or is doing).
const WITHOUT_DIFF = {
  queued: "Waiting for a free slot…",
  running: "Working on it…",
  accepted: "Accepted: its changes are in your files.",
  settled: "Settled: nothing left to review — it changed nothing, or your text already holds its change.",
  rejected: "Rejected.",
  cancelled: "Cancelled.",
  failed: "It failed (see Error).",
};

function renderUnified(diff, a) {
  if (!diff) {
    const files = a.state === "accepted" && a.changed_files.length ? ` (${a.changed_files.join(", ")})` : "";
    return h("p", { class: "muted" }, (WITHOUT_DIFF[a.state] || "No changes proposed.") + files);
  }
  const lines = diff.split("\n").map((l) => {
    const cls = l.startsWith("+") && !l.startsWith("+++") ? "add" : l.startsWith("-") && !l.startsWith("---") ? "del" : "ctx";
    return h("span", { class: cls }, l || " ");
  });
  return h("div", { class: "diff" }, h("pre", {}, lines));
}

function accept(id) {
  approve(id, {});
}

// One hunk, by its number: never the whole proposal by mistake.
function acceptHunk(id, hunk) {
  if (!Number.isInteger(hunk)) return flash(`hunk ${hunk} has no number; reload the page`);
  approve(id, { hunk });
}

function approve(id, body) {
  act(async () => {
    const r = await api("POST", `/proposal/${encodeURIComponent(id)}/approve`, body);
    logLine("accepted", `${id}: ${r.files.join(", ") || "nothing left to write"}`);
    await loadDetail(id);
  });
}

function reject(id, feedback) {
  act(async () => {
    await api("POST", `/proposal/${encodeURIComponent(id)}/reject`, feedback.trim() ? { feedback } : {});
    await loadDetail(id);
  });
}

function rejectHunk(id, hunk) {
  if (!Number.isInteger(hunk)) return flash(`hunk ${hunk} has no number; reload the page`);
  act(async () => {
    await api("POST", `/proposal/${encodeURIComponent(id)}/reject`, { hunk });
    await loadDetail(id);
  });
}

function cancel(id) {
  act(async () => {
    await api("POST", `/agents/${encodeURIComponent(id)}/cancel`, {});
    await loadDetail(id);
  });
}

// ---- snapshots ------------------------------------------------------------

function renderSnapshots() {
  fill($("snapshots"),
    ...state.snapshots.map((s) =>
      h(
        "tr",
        { "data-snapshot": s.id },
        h("td", {}, h("code", {}, s.id)),
        h("td", {}, ago(s.created_at)),
        h("td", {}, s.files),
        h("td", {}, s.message),
        h(
          "td",
          {},
          h("button", { onclick: () => dryRun(s.id) }, "Dry run"),
          " ",
          h(
            "button",
            { class: "danger", disabled: state.dryRun !== s.id, onclick: () => rollback(s.id) },
            "Roll back",
          ),
        ),
      ),
    ),
  );
}

function report(text) {
  const el = $("rollback-report");
  el.hidden = false;
  el.textContent = text;
}

function dryRun(id) {
  act(async () => {
    const r = await api("POST", `/rollback/${encodeURIComponent(id)}?dry_run=1`, {});
    state.dryRun = id;
    report(`Dry run of ${id}:\n${r.message}`);
    renderSnapshots();
  });
}

function rollback(id) {
  if (!confirm(`Roll the project back to snapshot ${id}? (A snapshot of now is taken first.)`)) return;
  act(async () => {
    const r = await api("POST", `/rollback/${encodeURIComponent(id)}`, {});
    state.dryRun = null;
    report(`Rolled back to ${id}:\n${r.message}`);
    state.snapshots = await api("GET", "/snapshots");
    renderSnapshots();
  });
}

// ---- effects --------------------------------------------------------------

async function loadEffects() {
  await act(async () => {
    const kind = $("effect-kind").value;
    const all = await api("GET", "/effects" + (kind ? "?kind=" + encodeURIComponent(kind) : ""));
    fill($("effects"),
      ...all
        .slice()
        .reverse()
        .map((e) =>
          h(
            "tr",
            {},
            h("td", {}, e.seq),
            h("td", {}, e.kind),
            h("td", {}, h("code", {}, e.agent_id || "")),
            h("td", {}, ago(e.created_at)),
            h("td", {}, e.duration_ms),
            h("td", { class: "input", title: e.input }, e.input),
          ),
        ),
    );
  });
}

// ---- nodes ----------------------------------------------------------------

async function loadFiles() {
  try {
    const files = await api("GET", "/nodes");
    fill($("files"),
      ...files.map((f) =>
        h(
          "li",
          { class: f.path === state.file ? "selected" : "", onclick: () => openFile(f.path) },
          f.path,
          " ",
          h("span", { class: "muted" }, f.nodes),
        ),
      ),
    );
    if (files.length === 0) fill($("files"), h("li", { class: "muted" }, "Nothing indexed yet."));
    if (state.file) await openFile(state.file, state.node);
  } catch (e) {
    fill($("files"), h("li", { class: "muted" }, e.message));
  }
}

function nodePath(path) {
  return path.split("/").map(encodeURIComponent).join("/");
}

async function openFile(path, node) {
  await act(async () => {
    state.file = path;
    const nodes = await api("GET", "/nodes/" + nodePath(path));
    fill($("nodes"),
      ...nodes.map(({ node: n, callers, callees }) =>
        h(
          "li",
          { class: n.id === state.node ? "selected" : "", onclick: () => loadNode(n.id) },
          h("span", { class: "badge" }, n.node_type),
          n.qualname,
          " ",
          h("span", { class: "muted" }, `line ${n.start_line} · ${callers} callers · ${callees} callees`),
        ),
      ),
    );
    if (node) await loadNode(node);
  });
}

function neighbourList(title, nodes) {
  return h(
    "div",
    {},
    h("h3", {}, title),
    nodes.length
      ? h(
          "ul",
          {},
          nodes.map((n) =>
            h("li", {}, h("a", { onclick: () => openFile(n.file_path, n.id) }, `${n.name}`), ` ${n.file_path}:${n.start_line}`),
          ),
        )
      : h("p", { class: "muted" }, "none"),
  );
}

async function loadNode(id) {
  await act(async () => {
    state.node = id;
    const one = await api("GET", "/node/" + encodeURIComponent(id));
    const events = await api("GET", `/node/${encodeURIComponent(id)}/events`);
    const message = h("input", { placeholder: "Ask or tell this node…", "aria-label": "message" });
    const n = one.node;
    fill($("node"),
      h("h2", {}, `${n.node_type} ${n.qualname}`),
      h("p", { class: "muted" }, `${n.file_path}:${n.start_line}-${n.end_line} · ${n.id}`),
      one.source ? h("pre", { class: "source" }, one.source) : null,
      h("div", { class: "neighbours" }, neighbourList("Callers", one.callers), neighbourList("Callees", one.callees)),
      h(
        "form",
        {
          onsubmit: (e) => {
            e.preventDefault();
            if (!message.value.trim()) return;
            act(async () => {
              await api("POST", `/node/${encodeURIComponent(id)}/chat`, { message: message.value });
              message.value = "";
            });
          },
        },
        message,
        h("button", { type: "submit" }, "Send"),
      ),
      h("h3", {}, "Events"),
      h(
        "ol",
        { class: "log" },
        events
          .slice()
          .reverse()
          .map((e) => h("li", {}, ago(e.timestamp), "  ", e.event_type, "  ", e.message || e.result || e.error || "")),
      ),
    );
  });
}

// ---- tabs and forms -------------------------------------------------------

function showTab(tab) {
  state.tab = tab;
  for (const b of document.querySelectorAll(".tab")) b.classList.toggle("active", b.dataset.tab === tab);
  for (const s of document.querySelectorAll(".tab-body")) s.hidden = s.id !== "tab-" + tab;
  if (tab === "effects") loadEffects();
  if (tab === "nodes") loadFiles();
}

function start() {
  for (const b of document.querySelectorAll(".tab")) b.addEventListener("click", () => showTab(b.dataset.tab));
  $("login").addEventListener("submit", (e) => {
    e.preventDefault();
    login($("token").value.trim());
  });
  $("new-task").addEventListener("submit", (e) => {
    e.preventDefault();
    const task = $("task-text").value;
    const file = $("task-file").value.trim();
    act(async () => {
      const { id } = await api("POST", "/tasks", file ? { task, file } : { task });
      $("task-text").value = "";
      select(id);
    });
  });
  $("new-snapshot").addEventListener("submit", (e) => {
    e.preventDefault();
    act(async () => {
      await api("POST", "/snapshots", { message: $("snapshot-message").value });
      $("snapshot-message").value = "";
    });
  });
  $("effect-kind").addEventListener("change", loadEffects);
  setInterval(() => {
    if (state.tab === "agents") renderAgents();
  }, 30000);
  takeTokenFromAddress().then((fresh) => {
    const saved = fresh || localStorage.getItem(TOKEN_KEY);
    if (saved) login(saved);
    else logout($("login-error").textContent);
  });
  // A login link pasted into this tab changes only the fragment: the
  // page is not loaded again, so it is taken here.
  window.addEventListener("hashchange", () => {
    takeTokenFromAddress().then((fresh) => {
      if (fresh) login(fresh);
    });
  });
}

start();

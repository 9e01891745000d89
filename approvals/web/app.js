"use strict";
// Every value from a question is set with textContent, never as HTML.
let csrf = "";
const shown = new Map();
// A click is taken only once no box has left the list for SETTLE_MS: when
// a question closes (its call withdrawn, which whoever asked can time) the
// boxes below move up, and a click meant for one would land on the next,
// which the human never read. A new box is appended below the others and
// moves none of them.
// The status line above the list moves every box when its height
// changes: its problems (what gates answered, or failed to) are counted
// as a change too, since whatever answers on a socket in the runtime
// directory can time them.
const SETTLE_MS = 700;
let changedAt = 0;
let problemsShown = "";

async function getCSRF() {
  const r = await fetch("/api/csrf", { credentials: "same-origin" });
  csrf = (await r.json()).csrf;
}

async function answer(id, op, scope, box) {
  const msg = box.querySelector(".result");
  if (Date.now() - changedAt < SETTLE_MS) {
    msg.textContent = "not answered: the list changed just now; check which question this is and click again";
    return;
  }
  const r = await fetch("/api/answer", {
    method: "POST",
    credentials: "same-origin",
    headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf },
    body: JSON.stringify({ id: id, op: op, scope: scope, csrf: csrf }),
  });
  msg.textContent = r.ok ? (op === "approve" ? "approved" : "denied") : "failed: " + (await r.text());
}

function render(q) {
  const box = document.createElement("div");
  box.className = "q";
  box.dataset.id = q.id;
  const head = document.createElement("p");
  head.textContent = "gate pid " + q.gate_pid + (q.client ? ", host " + q.client : "") +
    ", expires " + new Date(q.expires).toLocaleTimeString();
  const pre = document.createElement("pre");
  pre.className = "message";
  pre.textContent = q.message;
  const mk = (label, cls, op, scope) => {
    const b = document.createElement("button");
    b.textContent = label;
    b.className = cls;
    b.addEventListener("click", () => answer(q.id, op, scope, box));
    return b;
  };
  const result = document.createElement("p");
  result.className = "result";
  box.append(head, pre, mk("Approve this call", "approve", "approve", "once"),
    mk("Approve this tool for the session", "approve-session", "approve", "session"),
    mk("Deny", "deny", "deny", ""), result);
  return box;
}

async function refresh() {
  try {
    const r = await fetch("/api/questions", { credentials: "same-origin", headers: { "X-CSRF-Token": csrf } });
    const data = await r.json();
    const list = document.getElementById("questions");
    const ids = new Set(data.questions.map((q) => q.id));
    for (const [id, el] of shown) {
      if (!ids.has(id)) { el.remove(); shown.delete(id); changedAt = Date.now(); }
    }
    for (const q of data.questions) {
      if (!shown.has(q.id)) { const el = render(q); shown.set(q.id, el); list.append(el); }
    }
    const problems = data.problems && data.problems.length ? " — " + data.problems.join("; ") : "";
    if (problems !== problemsShown) { problemsShown = problems; changedAt = Date.now(); }
    const st = document.getElementById("status");
    st.textContent = (data.questions.length ? data.questions.length + " open" : "no open questions") + problems;
  } catch (e) {
    document.getElementById("status").textContent = "cannot reach mcp-gate approvals web: " + e;
  }
}

getCSRF().then(() => { refresh(); setInterval(refresh, 500); });

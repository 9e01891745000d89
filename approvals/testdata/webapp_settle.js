"use strict";
// Runs the approvals page's script (argv[2]) against a small fake DOM and
// checks that a click landing on a question that just moved into place (the
// one above it closed) is not taken, and that the same click is once the
// list has held still. Prints "ok" or why not, and exits non-zero then.
const fs = require("fs");
const vm = require("vm");

class El {
  constructor(tag) { this.tag = tag; this.children = []; this.className = ""; this.dataset = {}; this.textContent = ""; this.parent = null; this.handlers = {}; }
  append(...els) { for (const e of els) { e.parent = this; this.children.push(e); } }
  remove() { if (this.parent) { this.parent.children = this.parent.children.filter((c) => c !== this); this.parent = null; } }
  querySelector(sel) { return this.children.find((c) => "." + c.className === sel) || null; }
  addEventListener(ev, fn) { this.handlers[ev] = fn; }
  click() { return this.handlers.click(); }
}
const byId = { questions: new El("div"), status: new El("p") };
let questions = [];
let problems = [];
const answers = [];
const ctx = {
  console,
  document: { getElementById: (id) => byId[id], createElement: (t) => new El(t) },
  setInterval: () => 0,
  Date,
  JSON,
  Set,
  Map,
  fetch: async (url, opts) => {
    if (url === "/api/csrf") return { json: async () => ({ csrf: "t" }) };
    if (url === "/api/questions") return { json: async () => ({ questions, problems }) };
    if (url === "/api/answer") { answers.push(JSON.parse(opts.body)); return { ok: true, text: async () => "" }; }
    throw new Error("unexpected fetch " + url);
  },
};
vm.createContext(ctx);
vm.runInContext(fs.readFileSync(process.argv[2], "utf8"), ctx);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const q = (id) => ({ id, gate_pid: 1, message: "question " + id, expires: new Date().toISOString() });
const approveOf = (id) => byId.questions.children.find((b) => b.dataset.id === id).children.find((c) => c.className === "approve");
const fail = (why) => { console.log(why); process.exit(1); };

(async () => {
  await sleep(50); // getCSRF, then the first refresh
  questions = [q("a"), q("b")];
  await vm.runInContext("refresh()", ctx);
  await sleep(1000); // the human reads a, and reaches for its button
  questions = [q("b")]; // a is withdrawn: b moves up under the pointer
  await vm.runInContext("refresh()", ctx);
  await approveOf("b").click();
  if (answers.length !== 0) fail("a click as b moved into place answered " + JSON.stringify(answers));
  await sleep(1000); // the human reads b
  await approveOf("b").click();
  if (answers.length !== 1 || answers[0].id !== "b" || answers[0].op !== "approve") fail("a considered click: " + JSON.stringify(answers));

  // The status line above the list grows (a gate's problem, which
  // whatever answers on a socket of the runtime directory can time) and
  // every box moves down under the pointer: the same holds.
  questions = [q("c"), q("d")];
  await vm.runInContext("refresh()", ctx);
  await sleep(1000);
  problems = ["mcp-gate-1234.sock: a problem long enough to wrap the status line onto the next ones, and push the list down by a box"];
  await vm.runInContext("refresh()", ctx);
  await approveOf("d").click();
  if (answers.length !== 1) fail("a click as the status line moved the list answered " + JSON.stringify(answers.slice(1)));
  await sleep(1000);
  await approveOf("d").click();
  if (answers.length !== 2 || answers[1].id !== "d") fail("a considered click after the status changed: " + JSON.stringify(answers));
  console.log("ok");
})().catch((e) => fail(String(e)));

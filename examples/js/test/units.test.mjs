// Unit tests of the pieces the conformance suite reaches only indirectly.
// Run with: node --test examples/js/test/
import assert from "node:assert/strict";
import test from "node:test";

import { Cancelled, WriteObserverChain } from "../woc/chain.mjs";
import { fnmatchcase } from "../woc/tools.mjs";
import { pyRepr } from "../dr/executor.mjs";

test("fnmatchcase follows Python's fnmatch", () => {
  assert.ok(fnmatchcase("secrets/token.txt", "secrets/*"));
  assert.ok(fnmatchcase("a/b.lock", "*.lock")); // `*` crosses `/`, as in Python
  assert.ok(fnmatchcase("x1", "x[0-9]"));
  assert.ok(!fnmatchcase("x1", "x[!0-9]"));
  assert.ok(!fnmatchcase("Poetry.lock", "poetry.lock")); // case-sensitive
  assert.ok(fnmatchcase("a.b", "a.b"));
  assert.ok(!fnmatchcase("axb", "a.b")); // `.` is literal
});

test("pyRepr quotes like Python's repr", () => {
  assert.equal(pyRepr(Object.assign(new Error("disk full"), { name: "ScriptedFailure" })), "ScriptedFailure('disk full')");
  assert.equal(pyRepr(Object.assign(new Error("it's"), { name: "E" })), `E("it's")`);
});

test("the chain joins non-empty annotations with a blank line, in order", async () => {
  const say = (text) => ({ beforeWrite: async () => {}, afterWrite: async () => text });
  const chain = new WriteObserverChain([say("a"), say(""), say(null), say(" "), say("b")]);
  assert.equal(await chain.afterWrite("/x"), "a\n\n \n\nb");
  assert.equal(await new WriteObserverChain([say("")]).afterWrite("/x"), null);
});

test("the chain contains failures but not cancellation", async () => {
  const warnings = [];
  const failing = { name: "f", beforeWrite: async () => {}, afterWrite: async () => { throw new Error("no"); } };
  const fine = { afterWrite: async () => "ok", beforeWrite: async () => {} };
  const chain = new WriteObserverChain([failing, fine], { onFailure: (_o, m) => warnings.push(m) });
  assert.equal(await chain.afterWrite("/x"), "ok");
  assert.equal(await chain.afterWrite("/x"), "ok");
  assert.equal(warnings.length, 1); // once per observer

  const controller = new AbortController();
  const blocked = {
    beforeWrite: async () => {},
    afterWrite: ({}, { signal }) => new Promise((_, reject) => signal.addEventListener("abort", () => reject(signal.reason))),
  };
  let laterRan = false;
  const later = { beforeWrite: async () => {}, afterWrite: async () => { laterRan = true; return "late"; } };
  const pending = new WriteObserverChain([blocked, later]).afterWrite("/x", { signal: controller.signal });
  controller.abort(new Cancelled());
  await assert.rejects(pending, Cancelled);
  assert.equal(laterRan, false);
});

test("the journal's signature catches an edit of the last entry (the chain cannot)", async () => {
  const { JournalRecorder, rawPublicKey, verifyJournal } = await import("../dr/journal.mjs");
  const crypto = await import("node:crypto");
  const fs = await import("node:fs");
  const os = await import("node:os");
  const path = await import("node:path");
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "seamspec-js-test-"));
  try {
    const file = path.join(dir, "j");
    const { privateKey, publicKey } = crypto.generateKeyPairSync("ed25519");
    const raw = rawPublicKey(publicKey);
    const journal = new JournalRecorder(file, privateKey);
    await journal.record({ kind: "context_injection", context: "first" });
    await journal.record({ kind: "context_injection", context: "second" });
    journal.close();
    assert.equal(verifyJournal(file, raw).ok, true);
    fs.writeFileSync(file, fs.readFileSync(file, "utf8").replace('"second"', '"sekond"'));
    const found = verifyJournal(file, raw);
    assert.equal(found.ok, false);
    assert.equal(found.badIndex, 1);
    assert.equal(found.reason, "entry 1: a signature that does not verify");
    // A whole last entry whose newline was replaced is damage, not a torn tail.
    const data = fs.readFileSync(file);
    data[data.length - 1] ^= 0x01;
    fs.writeFileSync(file, data);
    const tail = verifyJournal(file, raw);
    assert.equal(tail.tornTail, false);
    assert.equal(tail.badIndex, 1);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test("canonical JSON sorts every key as a string, integer-like ones too", async () => {
  const { canonical } = await import("../dr/journal.mjs");
  // Python: json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
  const value = { b: "é\n", 10: 1, 9: [true, null, { z: 1, a: "\u2028" }] };
  assert.equal(canonical(value).toString("utf8"), '{"10":1,"9":[true,null,{"a":"\u2028","z":1}],"b":"é\\n"}');
});

test("the sandbox check follows links, dangling ones too, and denies by parent folder", async () => {
  const fs = await import("node:fs");
  const os = await import("node:os");
  const path = await import("node:path");
  const { WriteTools } = await import("../woc/tools.mjs");
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "seamspec-js-unit-")));
  try {
    fs.symlinkSync(".git/config", path.join(root, "latest.cfg")); // dangling: .git does not exist
    fs.symlinkSync("docs", path.join(root, "d"));
    const tools = new WriteTools(root, null, { deny: [".git"] });
    assert.equal((await tools.write("latest.cfg", "x")).ok, false);
    assert.equal((await tools.write(".git/hooks/pre-commit", "x")).ok, false);
    assert.equal((await tools.write(".gitignore", "x")).ok, true);
    assert.equal((await tools.write("d/../d/a.md", "x")).ok, true);
    assert.equal(fs.readFileSync(path.join(root, "docs", "a.md"), "utf8"), "x");
    assert.ok(!fs.existsSync(path.join(root, ".git")));
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
});

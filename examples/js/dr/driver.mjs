// Performs one dispatch-recorder scenario with this implementation's executor and turn
// loop, and records the trace the kit judges (docs/contracts/dispatch-recorder.md, "The
// trace vocabulary"). The Python kit's conformance/_contracts/dispatch_recorder/driver.py is the model, step for
// step. With `recorder: {journal: true}` the recorder is this implementation's signed
// journal (dr/journal.mjs), written where the kit says (`request.resources.journal`:
// path, private key file, public key) and signed with the kit's key. The kit reads the
// file itself, tampers with it, and asks this implementation's verifier about it with
// `verify_journal` queries (answerQuery below); those steps never reach the driver.

import crypto from "node:crypto";
import fs from "node:fs";

import { Cancelled } from "../woc/chain.mjs";
import { DriverError } from "../woc/driver.mjs";
import { OK, RecordError, ToolExecutor, pyRepr, runTurn } from "./executor.mjs";
import { JournalRecorder, verifyJournal } from "./journal.mjs";

export const WAIT_LIMIT = 10.0;
export const TURN_LIMIT = 10.0;

class Unmet extends Error {}

/** The journal recorder would not open the file the kit gave it (it does not verify). */
class JournalRefused extends Error {}

// A scripted `raise`; with `exception: NAME` an Error of that name with the matching
// system error code, as a harness that retries "transient" errors would test for.
const ERROR_CODES = { ConnectionError: "ECONNRESET", TimeoutError: "ETIMEDOUT", OSError: "EIO" };

class ScriptedFailure extends Error {
  constructor(message, exception) {
    super(message);
    this.name = exception ?? "ScriptedFailure";
    if (exception) this.code = ERROR_CODES[exception];
  }
}

const turn = () => new Promise((resolve) => setImmediate(resolve));
const sleep = (seconds) => new Promise((resolve) => setTimeout(resolve, seconds * 1000));

function aborted(signal) {
  return new Promise((_, reject) => {
    if (signal.aborted) reject(signal.reason);
    else signal.addEventListener("abort", () => reject(signal.reason), { once: true });
  });
}

const dump = (messages) =>
  messages.map((m) => ({ role: m.role, content: m.content, tool_call_id: m.toolCallId }));

function behaviourFor(script, index) {
  if (script == null) return {};
  if (Array.isArray(script)) return script.length ? script[Math.min(index, script.length - 1)] : {};
  return script;
}

const policyFor = (given, callId) => ({ pre: { allow: true }, ...(given.policy?.[callId] ?? {}) });

class Run {
  constructor(request) {
    this.given = request.given;
    this.when = request.when;
    this.resources = request.resources ?? {};
    this.events = [];
    this.gates = new Map();
    this.entered = new Map();
    this.controller = null;
    this.done = null;
    this.cancelled = false;
    this.cancelledAt = 0;
    this.records = 0;
    this.commits = 0;
    this.kept = []; // each array handed to a commit, with what it held then (DR-COMMIT-STEP)
    this.steps = 0;
    this.journal = null;
  }

  emit(type, fields = {}) {
    this.events.push({ type, ...fields });
  }

  // turn_end; after a cancel step, with the seconds since it (DR-CANCEL's `within`).
  // Before it, commit_changed for each commit array the harness changed afterwards.
  endTurn(outcome, fields = {}) {
    for (const { n, messages, held } of this.kept) {
      const now = JSON.stringify(dump(messages));
      if (now !== held) this.emit("commit_changed", { n, messages: JSON.parse(now) });
    }
    const since = this.cancelled ? { since_cancel: (performance.now() - this.cancelledAt) / 1000 } : {};
    this.emit("turn_end", { outcome, ...fields, ...since });
  }

  count(type, fields = {}) {
    return this.events.filter((e) => e.type === type && Object.entries(fields).every(([k, v]) => e[k] === v))
      .length;
  }

  gate(name) {
    if (!this.gates.has(name)) {
      let open;
      const opened = new Promise((resolve) => (open = resolve));
      this.gates.set(name, { opened, open });
    }
    return this.gates.get(name);
  }

  // -- the scripted participants: provider, tools, policy, approver ----------------
  participants() {
    const run = this;
    const given = this.given;
    return {
      async nextStep(messages, { signal }) {
        const index = run.steps++;
        run.emit("provider_call", { step: index, messages: dump(messages) });
        await turn();
        if (signal.aborted) throw signal.reason;
        const step = given.provider[index];
        if (step === undefined) return { text: "", toolCalls: [] };
        const toolCalls = (step.calls ?? []).map((c) => ({ id: c.id, name: c.tool, args: c.args }));
        return { text: step.final ?? "", toolCalls };
      },
      async run(invocation, { signal }) {
        run.emit("tool_run", {
          call: invocation.callId, tool: invocation.name, args: invocation.args, context: [...invocation.context],
        });
        await turn();
        if (signal.aborted) throw signal.reason;
        const spec = given.tools?.[invocation.name] ?? {};
        if ("gate" in spec) {
          // A slow tool: blocks (cancellably) until the kit opens its gate.
          if (!run.entered.has(spec.gate)) run.entered.set(spec.gate, Date.now());
          await Promise.race([run.gate(spec.gate).opened, aborted(signal)]);
        }
        if ("raise" in spec) {
          run.emit("tool_exit", { call: invocation.callId, raised: spec.raise });
          throw new ScriptedFailure(spec.raise);
        }
        const result = spec.returns ?? `${invocation.name} ran with ${invocation.args}`;
        run.emit("tool_exit", { call: invocation.callId, result });
        return String(result);
      },
      async beforeDispatch(call) {
        return policyFor(given, call.id).pre;
      },
      async afterDispatch(call, result) {
        const redacted = policyFor(given, call.id).redact;
        run.emit("redaction_asked", { call: call.id, result });
        return redacted == null ? null : String(redacted);
      },
      async approve(call) {
        const approved = Boolean(policyFor(given, call.id).approve ?? false);
        run.emit("approval", { call: call.id, approved });
        return approved;
      },
    };
  }

  // -- the scripted recorder -------------------------------------------------------
  async perform(behaviour, signal) {
    if (behaviour.late) {
      // Deaf to the time limit and to cancellation until released, from the very start:
      // no limit or cancellation can reach it before it waits, however loaded the machine.
      this.entered.set(behaviour.gate, Date.now());
      await this.gate(behaviour.gate).opened;
    } else {
      await turn();
      if (signal.aborted) throw signal.reason;
    }
    if ("gate" in behaviour && !behaviour.late) {
      this.entered.set(behaviour.gate, Date.now());
      await Promise.race([this.gate(behaviour.gate).opened, aborted(signal)]);
    }
    if (behaviour.hang) await aborted(signal);
    if ("raise" in behaviour) throw new ScriptedFailure(behaviour.raise, behaviour.exception);
    if ("error" in behaviour) return new RecordError(behaviour.error);
    return OK;
  }

  async traced(what, n, work, fields, signal, afterOk = () => ({})) {
    this.emit(`${what}_enter`, { n, ...fields });
    let outcome;
    try {
      outcome = await work();
    } catch (error) {
      if (signal.aborted) this.emit(`${what}_exit`, { n, outcome: "cancelled" });
      else this.emit(`${what}_exit`, { n, outcome: "raised", error: pyRepr(error) });
      throw error;
    }
    if (outcome instanceof RecordError) this.emit(`${what}_exit`, { n, outcome: "error", reason: outcome.reason });
    else this.emit(`${what}_exit`, { n, outcome: "ok", ...afterOk() });
    return outcome;
  }

  recorder() {
    const script = this.given.recorder;
    if (script == null) return null;
    if (script.journal) return this.journalRecorder();
    const recorder = {
      record: (mutation, { signal }) => {
        const n = this.records++;
        const fields = { call: mutation.tool_call_id, tool: mutation.tool_name, kind: mutation.kind, payload: mutation };
        const behaviour = behaviourFor(script.record, n);
        return this.traced("record", n, () => this.perform(behaviour, signal), fields, signal);
      },
    };
    if (!script.commit_default) {
      recorder.commitAcceptedStep = (messages, { signal }) => {
        const n = this.commits++;
        const behaviour = behaviourFor(script.commit, n);
        this.kept.push({ n, messages, held: JSON.stringify(dump(messages)) });
        return this.traced("commit", n, () => this.perform(behaviour, signal), { messages: dump(messages) }, signal);
      };
    }
    return recorder;
  }

  journalRecorder() {
    const given = this.resources.journal;
    if (!given) throw new DriverError("a journal scenario needs resources.journal from the kit (protocol 2)");
    const file = given.path;
    const privateKey = crypto.createPrivateKey(fs.readFileSync(given.private_key));
    // The kit cannot watch fsync over the wire: this hook reports each one (which file it
    // synced, how many bytes it covers), and the kit judges durability by declaration.
    // With `fsync_fails` (feature fsync-fault) it is also the fault: once record
    // `from_record` (counted from 0) has begun, every fsync of the journal throws EIO
    // without syncing, reported with `failed: true`.
    const failsFrom = this.given.recorder.fsync_fails?.from_record;
    const fsync = (fd) => {
      const status = fs.fstatSync(fd);
      let journal = false;
      try {
        const named = fs.statSync(file);
        journal = named.dev === status.dev && named.ino === status.ino;
      } catch {
        journal = false;
      }
      if (journal && failsFrom !== undefined && this.records > failsFrom) {
        this.emit("journal_fsync", { journal: true, failed: true, error: "EIO" });
        throw Object.assign(new Error("fsync of the journal failed (the kit's fault: fsync_fails)"), { code: "EIO" });
      }
      fs.fsyncSync(fd);
      if (journal) this.emit("journal_fsync", { journal: true, durable_bytes: status.size });
      else this.emit("journal_fsync", { journal: false, file: `descriptor ${fd}`, size: status.size });
    };
    // `reopen_journal` closes this recorder and opens the same file again (reopen()).
    let inner;
    try {
      inner = new JournalRecorder(file, privateKey, { fsync });
    } catch (error) {
      throw new JournalRefused(`${error.name}: ${error.message}`); // a damaged journal, say
    }
    this.journal = { inner, open: () => new JournalRecorder(file, privateKey, { fsync }) };
    return {
      record: (mutation, { signal }) => {
        const n = this.records++;
        const fields = { call: mutation.tool_call_id, tool: mutation.tool_name, kind: mutation.kind, payload: mutation };
        const inner = this.journal.inner;
        return this.traced("record", n, () => inner.record(mutation), fields, signal);
      },
    };
  }

  // -- the turn and the steps --------------------------------------------------------
  async turn(recorder) {
    this.finished = false;
    const parts = this.participants();
    const controller = new AbortController();
    this.controller = controller;
    this.emit("turn_start");
    const timer = setTimeout(() => controller.abort(new Cancelled("kit time limit")), TURN_LIMIT * 1000);
    try {
      const executor = new ToolExecutor(parts, parts, recorder, {
        // `approver: false`: no approver is wired at all.
        approver: this.given.approver === false ? null : (call) => parts.approve(call),
        recordTimeLimit: this.given.record_time_limit ?? 10.0,
      });
      const messages = await runTurn(String(this.given.prompt ?? "go"), parts, executor, {
        commitTimeLimit: this.given.commit_time_limit ?? 10.0,
        signal: controller.signal,
      });
      this.endTurn("completed", { messages: dump(messages) });
    } catch (error) {
      if (controller.signal.aborted) {
        if (!this.cancelled) this.emit("kit_timeout", { seconds: TURN_LIMIT });
        this.endTurn("cancelled");
      } else {
        this.endTurn("error", { error: String(error?.message ?? error) });
      }
    } finally {
      clearTimeout(timer);
      this.finished = true;
    }
  }

  async settle() {
    let seen = -1;
    let stable = 0;
    while (stable < 3) {
      await turn();
      stable = this.events.length === seen ? stable + 1 : 0;
      seen = this.events.length;
    }
  }

  // Waits until ready(). A turn that ended without the awaited event broke a rule, not
  // the protocol: the steps stop there (an Unmet) and the kit judges the trace.
  async wait(index, what, ready) {
    const deadline = Date.now() + WAIT_LIMIT * 1000;
    while (!ready()) {
      if (this.finished) throw new Unmet(what);
      if (Date.now() > deadline) throw new DriverError(`step ${index}: ${what} did not happen within ${WAIT_LIMIT} s`);
      await sleep(0.001);
    }
    await this.settle();
  }

  async waitDone() {
    if (this.done === null) return;
    let timer;
    await Promise.race([this.done, new Promise((resolve) => (timer = setTimeout(resolve, (WAIT_LIMIT + TURN_LIMIT) * 1000)))]);
    clearTimeout(timer);
  }

  async step(index, step, recorder) {
    const verb = Object.keys(step).find((key) => key !== "note");
    const body = step[verb];
    if (verb === "turn") await this.turn(recorder);
    else if (verb === "start_turn") this.done = this.turn(recorder);
    else if (verb === "wait_record" || verb === "wait_commit" || verb === "wait_tool") {
      const kind = verb.slice("wait_".length);
      const wanted = body?.count ?? 1;
      const event = kind === "tool" ? "tool_run" : `${kind}_enter`;
      await this.wait(index, `${wanted} ${kind} call(s)`, () => this.count(event) >= wanted);
    } else if (verb === "release") {
      this.emit("gate_released", { gate: body });
      this.gate(body).open();
      await this.settle();
    } else if (verb === "release_late") {
      await this.wait(index, `a call blocked on gate ${body}`, () => this.entered.has(body));
      // The limit of whatever blocks on the gate: a commit's, else a record's.
      const commits = [this.given.recorder?.commit ?? []].flat();
      const key = commits.some((b) => b.gate === body) ? "commit_time_limit" : "record_time_limit";
      const limit = Number(this.given[key] ?? 0);
      // Not a sleep for ordering: the gate must open only once the limit has passed.
      await sleep(Math.max(0, this.entered.get(body) / 1000 + limit - Date.now() / 1000) + 0.02);
      this.emit("gate_released", { gate: body, after_limit: limit });
      this.gate(body).open();
      await this.settle();
    } else if (verb === "release_after") {
      const gate = body.gate;
      await this.wait(index, `a call blocked on gate ${gate}`, () => this.entered.has(gate));
      // Not a sleep for ordering: what blocks on the gate must take this long.
      await sleep(Math.max(0, this.entered.get(gate) / 1000 + body.seconds - Date.now() / 1000));
      this.emit("gate_released", { gate, after: body.seconds });
      this.gate(gate).open();
      await this.settle();
    } else if (verb === "cancel") {
      this.emit("cancel_requested");
      this.cancelled = true;
      this.cancelledAt = performance.now();
      this.controller.abort(new Cancelled("cancelled by the caller"));
    } else if (verb === "join") {
      await this.waitDone();
    } else if (verb === "reopen_journal") {
      if (!this.journal) throw new DriverError(`step ${index}: reopen_journal needs the journal recorder`);
      this.journal.inner.close();
      this.emit("journal_reopen");
      this.journal.inner = this.journal.open();
    } else {
      throw new DriverError(`step ${index}: '${verb}' is not supported by this implementation`);
    }
  }

  async run() {
    let recorder;
    try {
      recorder = this.recorder();
    } catch (error) {
      if (!(error instanceof JournalRefused)) throw error;
      this.emit("journal_refused", { error: error.message }); // no step is performed
      return this.events;
    }
    try {
      for (const [index, step] of this.when.entries()) {
        try {
          await this.step(index, step, recorder);
        } catch (error) {
          if (!(error instanceof Unmet)) throw error;
          this.emit("wait_unmet", { step: index, waited_for: error.message });
          break;
        }
      }
      await this.waitDone();
    } finally {
      if (this.journal) this.journal.inner.close(); // the kit reads the file afterwards
    }
    return this.events;
  }
}

/** Perform one dispatch-recorder scenario request and return its trace. */
export function perform(request) {
  return new Run(request).run();
}

/** Answer the kit's `verify_journal` query: this implementation's verifier on a file. */
export function answerQuery(name, body) {
  if (name !== "verify_journal") throw new DriverError(`no query ${JSON.stringify(name)} in dispatch-recorder`);
  const found = verifyJournal(body.path, Buffer.from(body.public_key, "hex"), { expectedEntries: body.expected_entries ?? null });
  return {
    ok: found.ok, bad_index: found.badIndex, reason: found.reason, torn_tail: found.tornTail,
    mutations: found.entries.map((e) => e.mutation),
  };
}

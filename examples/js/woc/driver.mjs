// Performs one write-observer-chain scenario (`given` + `when`) with this implementation's
// chain and tools, and records the trace the kit judges. The vocabulary is the one in
// docs/contracts/write-observer-chain.md ("The trace vocabulary"); the Python kit's
// conformance/_contracts/write_observer_chain/driver.py does the same for Python chains, step for step.

import { AsyncLocalStorage } from "node:async_hooks";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

import { Cancelled, WriteObserverChain, describe, whenAborted } from "./chain.mjs";
import { WriteTools, resolveLoose } from "./tools.mjs";

/** A scenario step that waits gives up after this long. */
export const WAIT_LIMIT = 10.0;
/** A chain call that outlives this is cancelled by the driver and traced as kit_timeout. */
export const CALL_LIMIT = 5.0;
const TOOL_VERBS = ["write", "edit", "delete"];
const HOOK = { before_write: "beforeWrite", after_write: "afterWrite" };

/** An error of the driver (not of the chain): the kit reports the scenario as an error. */
export class DriverError extends Error {
  constructor(message, context = "") {
    super(message);
    this.context = context;
  }
}

class ScriptedFailure extends Error {
  constructor(message) {
    super(message);
    this.name = "ScriptedFailure";
  }
}

/** Which step (call or tool) a hook runs for: the JavaScript twin of a context variable. */
const currentCall = new AsyncLocalStorage();

const turn = () => new Promise((resolve) => setImmediate(resolve));

function stepVerb(step) {
  return Object.keys(step).find((key) => key !== "note");
}

function* observerEntries(observers) {
  for (const entry of observers) {
    yield entry;
    if (entry.chain) yield* observerEntries(entry.chain);
  }
}

function behaviourFor(entry, hook, index) {
  const script = entry[hook] ?? {};
  return Array.isArray(script) ? script[Math.min(index, script.length - 1)] : script;
}

/** The file's text, or null when absent; never reads outside the sandbox. */
export function readText(root, file) {
  const target = path.isAbsolute(file) ? file : `${root}/${file}`;
  let resolved;
  try {
    resolved = resolveLoose(target);
  } catch {
    return null;
  }
  if (resolved !== root && !resolved.startsWith(root + path.sep)) return null;
  try {
    return fs.readFileSync(resolved).toString("utf8");
  } catch (error) {
    return error.code === "EISDIR" ? "<directory>" : null;
  }
}

/** Every regular file under `root`, path to text; symbolic links are neither followed nor listed. */
function snapshot(root) {
  const files = {};
  const walk = (dir) => {
    for (const name of fs.readdirSync(dir).sort()) {
      const full = path.join(dir, name);
      const stat = fs.lstatSync(full);
      if (stat.isDirectory()) walk(full);
      else if (stat.isFile()) {
        files[path.relative(root, full).split(path.sep).join("/")] = fs.readFileSync(full).toString("utf8");
      }
    }
  };
  walk(root);
  return files;
}

/**
 * Whether `where` is still a real folder (not gone, not a link): the snapshots of a missing
 * sandbox root are just empty, so the kit says whether it is still there.
 */
function isFolder(where) {
  try {
    return fs.lstatSync(where).isDirectory();
  } catch {
    return false;
  }
}

/**
 * Everything in the sandbox's parent folder besides the sandbox and `outside`, files and
 * folders, relative to that parent, sorted: the kit makes nothing else there, so anything
 * listed was made by a tool that left the sandbox (into `../sandbox-x`, say).
 */
function beside(root) {
  const parent = path.dirname(root);
  const found = [];
  const walk = (dir) => {
    for (const name of fs.readdirSync(dir)) {
      if (dir === parent && (name === path.basename(root) || name === "outside")) continue;
      const full = path.join(dir, name);
      found.push(path.relative(parent, full).split(path.sep).join("/"));
      if (fs.lstatSync(full).isDirectory()) walk(full);
    }
  };
  walk(parent);
  return found.sort();
}

/** Every folder under `root` (not `root` itself), sorted; links to folders are neither followed nor listed. */
function folders(root) {
  const found = [];
  const walk = (dir) => {
    for (const name of fs.readdirSync(dir)) {
      const full = path.join(dir, name);
      if (fs.lstatSync(full).isDirectory()) {
        found.push(path.relative(root, full).split(path.sep).join("/"));
        walk(full);
      }
    }
  };
  walk(root);
  return found.sort();
}

/** Seconds since `began` (a performance.now() reading: a monotonic clock), as the caller saw them. */
function seconds(began) {
  return Math.round(performance.now() - began) / 1000;
}

/** Resolves to [true, value] if `promise` settles within `seconds`, else [false]. */
async function within(promise, seconds) {
  let timer;
  const limit = new Promise((resolve) => {
    timer = setTimeout(() => resolve([false]), seconds * 1000);
  });
  try {
    return await Promise.race([promise.then((value) => [true, value]), limit]);
  } finally {
    clearTimeout(timer);
  }
}

class ScriptedObserver {
  constructor(entry, run) {
    this.name = entry.name;
    this.entry = entry;
    this.run = run;
    this.calls = { before_write: 0, after_write: 0 };
  }

  beforeWrite(file, options) {
    return this.#traced("before_write", file, options.signal);
  }

  afterWrite(file, options) {
    return this.#traced("after_write", file, options.signal);
  }

  async #traced(hook, file, signal) {
    const call = currentCall.getStore() ?? "?";
    const { run } = this;
    const began = performance.now();
    run.emit("hook_enter", {
      call,
      observer: this.name,
      hook,
      path: path.relative(run.root, file).split(path.sep).join("/"),
      sees: readText(run.root, file),
    });
    let value;
    try {
      value = await this.#perform(hook, signal);
    } catch (error) {
      if (signal.aborted) {
        run.emit("hook_exit", { call, observer: this.name, hook, outcome: "cancelled", elapsed: seconds(began) });
      } else {
        run.emit("hook_exit", { call, observer: this.name, hook, outcome: "raised", error: describe(error) });
      }
      throw error;
    }
    run.emit("hook_exit", { call, observer: this.name, hook, outcome: "returned", value });
    return value;
  }

  async #perform(hook, signal) {
    const behaviour = behaviourFor(this.entry, hook, this.calls[hook]++);
    await turn(); // a real suspension, so a chain that runs observers concurrently shows it
    try {
      if (signal.aborted) throw signal.reason;
      if ("gate" in behaviour) await Promise.race([this.run.gate(behaviour.gate).opened, whenAborted(signal)]);
      if (behaviour.hang) await whenAborted(signal);
    } catch (error) {
      // slow to unwind: the chain must wait until this gate opens
      if (signal.aborted && "unwind" in behaviour) await this.run.gate(behaviour.unwind).opened;
      throw error;
    }
    if ("raise" in behaviour) throw new ScriptedFailure(behaviour.raise);
    return hook === "after_write" && behaviour.return !== undefined ? behaviour.return : null;
  }
}

class Run {
  constructor(request, root) {
    this.given = request.given;
    this.when = request.when;
    this.root = root;
    this.outside = path.join(path.dirname(root), "outside");
    this.events = [];
    this.gates = new Map();
    this.controllers = new Map();
    this.done = new Map();
    this.cancelled = new Set();
  }

  emit(type, fields) {
    this.events.push({ type, ...fields });
  }

  count(type, fields) {
    return this.events.filter((e) => e.type === type && Object.entries(fields).every(([k, v]) => e[k] === v)).length;
  }

  tail(n = 8) {
    return "last events:\n" + this.events.slice(-n).map((e) => "  " + JSON.stringify(e)).join("\n");
  }

  gate(name) {
    if (!this.gates.has(name)) {
      let open;
      const opened = new Promise((resolve) => {
        open = resolve;
      });
      this.gates.set(name, { opened, open });
    }
    return this.gates.get(name);
  }

  onFailure = (observer, message) => {
    this.emit("warning", { observer: observer.name ?? String(observer), message: String(message) });
  };

  build(entries) {
    return entries.map((entry) => {
      if (entry.chain) {
        const chain = new WriteObserverChain(this.build(entry.chain), {
          hookTimeLimit: entry.hook_time_limit ?? null,
          onFailure: this.onFailure,
        });
        chain.name = entry.name; // so a warning about the nested chain names it
        return chain;
      }
      if (entry.builtin) throw new DriverError(`builtin observers are not supported (${entry.name})`);
      return new ScriptedObserver(entry, this);
    });
  }

  inside(rel) {
    const target = resolveLoose(`${this.root}/${rel}`);
    if (!target.startsWith(this.root + path.sep)) {
      throw new DriverError(`scenario path ${JSON.stringify(rel)} leaves the sandbox`);
    }
    return target;
  }

  /** Let every runnable task go on until all are blocked again (gates, hangs, timers). */
  async settle() {
    let seen = -1;
    let stable = 0;
    while (stable < 3) {
      await turn();
      stable = this.events.length === seen ? stable + 1 : 0;
      seen = this.events.length;
    }
  }

  async perform() {
    for (const [rel, text] of Object.entries(this.given.files ?? {})) {
      const target = this.inside(rel);
      fs.mkdirSync(path.dirname(target), { recursive: true });
      fs.writeFileSync(target, text, "utf8");
    }
    // The folder next to the sandbox: links may lead there; nothing in it may ever change.
    for (const [rel, text] of Object.entries(this.given.outside ?? {})) {
      const target = path.join(this.outside, rel);
      fs.mkdirSync(path.dirname(target), { recursive: true });
      fs.writeFileSync(target, text, "utf8");
    }
    for (const [rel, where] of Object.entries(this.given.symlinks ?? {})) {
      const link = path.join(this.root, rel);
      const target = "outside" in where ? path.join(this.outside, where.outside) : path.join(this.root, where.to);
      fs.mkdirSync(path.dirname(link), { recursive: true });
      fs.symlinkSync(path.relative(path.dirname(link), target), link);
    }
    const chain = new WriteObserverChain(this.build(this.given.observers), {
      hookTimeLimit: this.given.hook_time_limit ?? null,
      onFailure: this.onFailure,
    });
    const tools = new WriteTools(this.root, chain, { deny: this.given.deny ?? [] });
    for (const [index, step] of this.when.entries()) await this.step(index, step, chain, tools);
    for (const [ident, done] of this.done) {
      const [finished] = await within(done, WAIT_LIMIT);
      if (!finished) throw new DriverError(`background call '${ident}' never ended`, this.tail());
    }
    this.emit("files", {
      files: snapshot(this.root),
      outside: snapshot(this.outside),
      folders: folders(this.root),
      outside_folders: folders(this.outside),
      beside: beside(this.root),
      root_exists: isFolder(this.root),
    });
    return this.events;
  }

  async call(ident, hook, rel, chain) {
    const controller = new AbortController();
    this.controllers.set(ident, controller);
    let finish;
    this.done.set(ident, new Promise((resolve) => (finish = resolve)));
    this.emit("call_start", { call: ident, hook, path: rel });
    const began = performance.now();
    const elapsed = () => seconds(began);
    const timer = setTimeout(() => controller.abort(new Cancelled("kit time limit")), CALL_LIMIT * 1000);
    try {
      const value = await currentCall.run(ident, () => chain[HOOK[hook]](this.inside(rel), { signal: controller.signal }));
      this.emit("call_end", { call: ident, outcome: "returned", value: value ?? null, elapsed: elapsed() });
    } catch (error) {
      if (controller.signal.aborted) {
        if (!this.cancelled.has(ident)) this.emit("kit_timeout", { call: ident, seconds: CALL_LIMIT });
        this.emit("call_end", { call: ident, outcome: "cancelled", elapsed: elapsed() });
      } else {
        this.emit("call_end", { call: ident, outcome: "raised", error: describe(error), elapsed: elapsed() });
      }
    } finally {
      clearTimeout(timer);
      finish();
    }
  }

  async step(index, step, chain, tools) {
    const verb = stepVerb(step);
    const body = step[verb];
    if (verb === "call") await this.call(body.id, body.hook, body.path, chain);
    else if (verb === "start") this.call(body.id, body.hook, body.path, chain);
    else if (verb === "wait_entered") {
      const wanted = body.count ?? 1;
      const deadline = Date.now() + WAIT_LIMIT * 1000;
      while (this.count("hook_enter", { observer: body.observer, hook: body.hook }) < wanted) {
        if (Date.now() > deadline) {
          throw new DriverError(
            `step ${index} (wait_entered): ${body.observer}.${body.hook} was not entered ${wanted} time(s) within ${WAIT_LIMIT} s`,
            this.tail(),
          );
        }
        await new Promise((resolve) => setTimeout(resolve, 1));
      }
      await this.settle();
    } else if (verb === "release") {
      this.emit("gate_released", { gate: body });
      this.gate(body).open();
      await this.settle();
    } else if (verb === "cancel") {
      this.emit("cancel_requested", { call: body });
      this.cancelled.add(body);
      this.controllers.get(body).abort(new Cancelled("cancelled by the caller"));
    } else if (verb === "join") {
      await this.done.get(body);
    } else if (TOOL_VERBS.includes(verb) && body.background) {
      // Like `start`: a later `cancel` aborts its controller, `join` waits for it.
      const controller = new AbortController();
      this.controllers.set(body.id, controller);
      this.done.set(body.id, this.tool(verb, body, tools, controller));
    } else if (TOOL_VERBS.includes(verb)) {
      await this.tool(verb, body, tools);
    } else {
      throw new DriverError(`step ${index}: '${verb}' is not supported by this implementation`);
    }
  }

  async tool(verb, body, tools, controller = new AbortController()) {
    const { id: ident, path: rel } = body;
    this.emit("tool_start", { call: ident, tool: verb, path: rel, content_before: readText(this.root, rel) });
    const args = verb === "write" ? [body.content] : verb === "edit" ? [body.old, body.new] : [];
    const limited =
      "hook_time_limit" in this.given || [...observerEntries(this.given.observers)].some((e) => "hook_time_limit" in e);
    const began = performance.now();
    const pending = currentCall.run(ident, () => tools[verb](rel, ...args, { signal: controller.signal }));
    const settled = pending.then(
      (result) => ({ result }),
      (error) => ({ error }),
    );
    const [finished, outcome] = await within(settled, limited ? CALL_LIMIT : WAIT_LIMIT);
    const elapsed = seconds(began);
    if (!finished) {
      controller.abort(new Cancelled("kit time limit"));
      if (limited) {
        this.emit("kit_timeout", { call: ident, seconds: CALL_LIMIT });
        return;
      }
      throw new DriverError(`the ${verb} tool (${ident}) did not return within ${WAIT_LIMIT} s`, this.tail());
    }
    const after = () => readText(this.root, rel);
    if (outcome.error !== undefined && this.cancelled.has(ident) && controller.signal.aborted) {
      this.emit("tool_cancelled", { call: ident, tool: verb, path: rel, content_after: after(), elapsed });
      return;
    }
    if (outcome.error !== undefined) {
      this.emit("tool_result", {
        call: ident, tool: verb, path: rel, ok: false, raised: describe(outcome.error),
        message: "", text: "", content_after: after(), elapsed,
      });
      return;
    }
    const { result } = outcome;
    this.emit("tool_result", {
      call: ident, tool: verb, path: rel, ok: Boolean(result.ok), message: String(result.message),
      text: String(result.text), content_after: after(), elapsed,
    });
  }
}

/** Perform one scenario request and return its trace. */
export async function perform(request) {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "seamspec-woc-"));
  try {
    const root = path.join(fs.realpathSync(tmp), "sandbox");
    fs.mkdirSync(root);
    fs.mkdirSync(path.join(path.dirname(root), "outside"));
    return await new Run(request, root).perform();
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

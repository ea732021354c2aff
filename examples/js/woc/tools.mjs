// The file tools with their one observer seam: write, edit and delete, confined to a
// workspace root. Every operation follows the same order: sandbox check, (edit only)
// compute the new text, beforeWrite, the real mutation, afterWrite. Anything refused or
// impossible before the mutation calls no hook; a mutation that fails skips afterWrite.

import fs from "node:fs";
import path from "node:path";

import { ANNOTATION_SEPARATOR, Cancelled, describe } from "./chain.mjs";

export class ToolResult {
  constructor(ok, message, annotation = null) {
    this.ok = ok;
    this.message = message;
    this.annotation = annotation;
  }

  /** What the model sees: the tool's message, a blank line, then the annotation. */
  get text() {
    return this.annotation ? this.message + ANNOTATION_SEPARATOR + this.annotation : this.message;
  }
}

class SandboxRefused extends Error {}

const STRERROR = {
  ENOENT: "No such file or directory",
  EISDIR: "Is a directory",
  ENOTDIR: "Not a directory",
  EACCES: "Permission denied",
  EPERM: "Operation not permitted",
  EEXIST: "File exists",
  ENOTEMPTY: "Directory not empty",
};

function reason(error) {
  return STRERROR[error.code] ?? error.message;
}

/**
 * Like Python's Path.resolve(strict=False): follow every symbolic link, a dangling one too,
 * component by component as the kernel does (so `link/..` is the parent of the link's
 * target). `target` is an absolute path that may still hold `.` and `..`; it is not
 * normalised first, because that would take `..` before the link it follows.
 */
export function resolveLoose(target) {
  const queue = target.split("/");
  let current = "/";
  let hops = 0;
  while (queue.length) {
    const part = queue.shift();
    if (part === "" || part === ".") continue;
    if (part === "..") {
      current = path.dirname(current);
      continue;
    }
    const next = path.join(current, part);
    let link = null;
    try {
      if (fs.lstatSync(next).isSymbolicLink()) link = fs.readlinkSync(next);
    } catch (error) {
      if (error.code !== "ENOENT" && error.code !== "ENOTDIR") throw error;
    }
    if (link === null) {
      current = next;
      continue;
    }
    if (++hops > 40) throw Object.assign(new Error(`too many levels of symbolic links: ${target}`), { code: "ELOOP" });
    if (path.isAbsolute(link)) current = "/";
    queue.unshift(...link.split("/"));
  }
  return current;
}

/** Python's fnmatch.fnmatchcase: `*` also matches `/`, `[!x]` negates, nothing else special. */
export function fnmatchcase(name, pattern) {
  let re = "";
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === "*") re += "[\\s\\S]*";
    else if (c === "?") re += "[\\s\\S]";
    else if (c === "[") {
      const end = pattern.indexOf("]", i + 2);
      if (end === -1) {
        re += "\\[";
        continue;
      }
      let body = pattern.slice(i + 1, end).replace(/\\/g, "\\\\");
      if (body.startsWith("!")) body = "^" + body.slice(1);
      else if (body.startsWith("^")) body = "\\" + body;
      re += `[${body}]`;
      i = end;
    } else re += c.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
  }
  return new RegExp(`^(?:${re})$`).test(name);
}

function isInside(root, target) {
  return target === root || target.startsWith(root + path.sep);
}

export class WriteTools {
  constructor(root, observer = null, { deny = [] } = {}) {
    this.root = fs.realpathSync(root);
    this.observer = observer;
    this.deny = [...deny];
  }

  async write(rel, content, { signal } = {}) {
    let target, clean;
    try {
      [target, clean] = this.#check(rel);
    } catch (refusal) {
      if (!(refusal instanceof SandboxRefused)) throw refusal;
      return new ToolResult(false, `refused: ${refusal.message}`);
    }
    if (!content.isWellFormed()) {
      return new ToolResult(false, "write failed: the content cannot be encoded as UTF-8");
    }
    const data = Buffer.from(content, "utf8");
    return this.#mutate(target, data, `wrote ${data.length} bytes to ${clean}`, signal);
  }

  async edit(rel, old, replacement, { signal } = {}) {
    let target, clean;
    try {
      [target, clean] = this.#check(rel);
    } catch (refusal) {
      if (!(refusal instanceof SandboxRefused)) throw refusal;
      return new ToolResult(false, `refused: ${refusal.message}`);
    }
    if (!old) return new ToolResult(false, `edit failed: the text to replace in ${clean} is empty`);
    let raw;
    try {
      raw = fs.readFileSync(target);
    } catch (error) {
      if (error.code === "ENOENT") return new ToolResult(false, `edit failed: ${clean} does not exist`);
      return new ToolResult(false, `edit failed: ${clean}: ${reason(error)}`);
    }
    let text;
    try {
      // ignoreBOM: keep a leading byte-order mark as text, so the edit writes it back
      // (by default TextDecoder swallows it and the edited file would lose three bytes)
      text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(raw);
    } catch {
      return new ToolResult(false, `edit failed: ${clean} is not UTF-8 text`);
    }
    const count = text.split(old).length - 1;
    if (count !== 1) {
      const where = count === 0 ? "does not occur" : `occurs ${count} times`;
      return new ToolResult(false, `edit failed: the text to replace ${where} in ${clean}`);
    }
    if (!replacement.isWellFormed()) {
      return new ToolResult(false, "edit failed: the new text cannot be encoded as UTF-8");
    }
    const at = text.indexOf(old);
    const updated = text.slice(0, at) + replacement + text.slice(at + old.length);
    return this.#mutate(target, Buffer.from(updated, "utf8"), `edited ${clean}`, signal);
  }

  async delete(rel, { signal } = {}) {
    let target, clean;
    try {
      [target, clean] = this.#check(rel);
    } catch (refusal) {
      if (!(refusal instanceof SandboxRefused)) throw refusal;
      return new ToolResult(false, `refused: ${refusal.message}`);
    }
    await this.#before(target, signal);
    try {
      fs.unlinkSync(target);
    } catch (error) {
      return new ToolResult(false, `delete failed: ${reason(error)}`);
    }
    return new ToolResult(true, `deleted ${clean}`, await this.#after(target, signal));
  }

  async #mutate(target, data, message, signal) {
    await this.#before(target, signal);
    try {
      try {
        fs.mkdirSync(path.dirname(target), { recursive: true });
      } catch (error) {
        if (error.code !== "EEXIST" && error.code !== "ENOTDIR") throw error;
      }
      fs.writeFileSync(target, data);
    } catch (error) {
      return new ToolResult(false, `write failed: ${reason(error)}`);
    }
    return new ToolResult(true, message, await this.#after(target, signal));
  }

  /** Resolve `rel` under the root, or throw SandboxRefused saying why. */
  #check(rel) {
    if (!rel || rel.includes("\0")) throw new SandboxRefused(`${JSON.stringify(rel)} is not a usable path`);
    if (path.posix.isAbsolute(rel) || path.isAbsolute(rel)) {
      throw new SandboxRefused(`${rel} is absolute; paths are relative to the workspace`);
    }
    let target;
    try {
      target = resolveLoose(`${this.root}/${rel}`);
    } catch (error) {
      throw new SandboxRefused(`${rel} cannot be resolved: ${error.message}`);
    }
    if (target === this.root) throw new SandboxRefused(`${rel} is the workspace itself, not a file in it`);
    if (!isInside(this.root, target)) throw new SandboxRefused(`${rel} is outside the workspace`);
    const clean = path.relative(this.root, target).split(path.sep).join("/");
    // Only where the path leads counts: the hooks and the mutation act on `target`.
    for (const pattern of this.deny) {
      if (denied(clean, pattern)) throw new SandboxRefused(`${rel} matches the deny rule '${pattern}'`);
    }
    return [target, clean];
  }

  async #before(target, signal) {
    if (!this.observer) return;
    try {
      await this.observer.beforeWrite(target, { signal });
    } catch (error) {
      if (error instanceof Cancelled || signal?.aborted) throw error; // not a failure
      process.emitWarning(`write observer: beforeWrite raised ${describe(error)}`);
    }
  }

  async #after(target, signal) {
    if (!this.observer) return null;
    let annotation;
    try {
      annotation = await this.observer.afterWrite(target, { signal });
    } catch (error) {
      if (error instanceof Cancelled || signal?.aborted) throw error;
      process.emitWarning(`write observer: afterWrite raised ${describe(error)}`);
      return null;
    }
    return typeof annotation === "string" && annotation !== "" ? annotation : null;
  }
}

/**
 * A deny glob protects the path and every folder above it (".git" covers ".git/config"),
 * matched against the resolved path relative to the root, anchored there
 * ("*\/node_modules" reaches nested folders; `*` also matches `/`).
 */
function denied(rel, pattern) {
  const prefixes = [rel];
  for (let p = path.posix.dirname(rel); p !== "." && p !== "/"; p = path.posix.dirname(p)) {
    prefixes.push(p);
  }
  return prefixes.some((prefix) => fnmatchcase(prefix, pattern));
}

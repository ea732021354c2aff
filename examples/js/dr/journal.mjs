// A signed, hash-chained, append-only journal of dispatch mutations: the recorder a
// harness uses when every mutation must be provable afterwards.
//
// One entry per line: {"seq", "prev", "mutation", "sig"}. `prev` is the SHA-256 of the
// previous line's bytes (64 zeros for the first), `sig` an Ed25519 signature over the
// entry without `sig`. A record returns OK only after its line is fsync'd, so an OK'd
// mutation survives a crash. Verification names the first entry that is wrong.

import crypto from "node:crypto";
import fs from "node:fs";

import { OK } from "./executor.mjs";

const GENESIS = "0".repeat(64);

const sha256 = (bytes) => crypto.createHash("sha256").update(bytes).digest("hex");
const signed = (entry) => Buffer.from(JSON.stringify({ seq: entry.seq, prev: entry.prev, mutation: entry.mutation }));

export class JournalRecorder {
  /** @param fsync (fd) => void: makes the appended bytes durable (the kit wraps it). */
  constructor(path, privateKey, { fsync = (fd) => fs.fsyncSync(fd) } = {}) {
    this.path = path;
    this.privateKey = privateKey;
    this.fsync = fsync;
    this.fd = fs.openSync(path, "a");
    this.seq = 0;
    this.prev = GENESIS;
  }

  async record(mutation) {
    const entry = { seq: this.seq, prev: this.prev, mutation };
    const sig = crypto.sign(null, signed(entry), this.privateKey).toString("base64");
    const line = Buffer.from(JSON.stringify({ ...entry, sig }) + "\n");
    fs.writeSync(this.fd, line);
    this.fsync(this.fd); // durable before OK
    this.seq += 1;
    this.prev = sha256(line);
    return OK;
  }

  close() {
    fs.closeSync(this.fd);
  }
}

/**
 * Check every entry: framing, order, chain, signature. `expectedEntries` (an anchor kept
 * elsewhere) also catches whole entries cut from the end, which nothing inside can show.
 */
export function verifyJournal(path, publicKey, { expectedEntries = null } = {}) {
  const data = fs.readFileSync(path);
  const lines = [];
  let start = 0;
  for (let i = 0; i < data.length; i++) {
    if (data[i] === 0x0a) {
      lines.push(data.subarray(start, i + 1));
      start = i + 1;
    }
  }
  const tornTail = start < data.length;
  const entries = [];
  const fail = (index, reason) => ({ ok: false, badIndex: index, reason, tornTail, entries });
  let prev = GENESIS;
  for (const [index, line] of lines.entries()) {
    let entry;
    try {
      entry = JSON.parse(line.toString("utf8"));
    } catch {
      return fail(index, "not a JSON entry");
    }
    if (entry?.seq !== index) return fail(index, `sequence number ${entry?.seq} where ${index} belongs`);
    if (entry.prev !== prev) return fail(index, "does not chain to the previous entry");
    let valid = false;
    try {
      valid = crypto.verify(null, signed(entry), publicKey, Buffer.from(String(entry.sig), "base64"));
    } catch {
      valid = false;
    }
    if (!valid) return fail(index, "bad signature");
    entries.push(entry);
    prev = sha256(line);
  }
  if (tornTail) return fail(lines.length, "the last entry is incomplete (torn tail)");
  if (expectedEntries !== null && entries.length < expectedEntries) {
    return fail(entries.length, `${expectedEntries - entries.length} entries missing at the end`);
  }
  return { ok: true, badIndex: null, reason: null, tornTail: false, entries };
}

/** The kit's tampering operations (tamper_journal), on newline-framed entries. */
export function tamper(path, op) {
  const data = fs.readFileSync(path);
  if ("truncate_bytes" in op) {
    fs.writeFileSync(path, data.subarray(0, data.length - op.truncate_bytes));
    return;
  }
  const lines = [];
  let start = 0;
  for (let i = 0; i < data.length; i++) {
    if (data[i] === 0x0a) {
      lines.push(Buffer.from(data.subarray(start, i + 1)));
      start = i + 1;
    }
  }
  if (start < data.length) lines.push(Buffer.from(data.subarray(start)));
  if ("flip_byte" in op) {
    const line = lines[op.flip_byte.entry];
    line[op.flip_byte.offset % line.length] ^= op.flip_byte.mask ?? 0x01;
  } else if ("delete" in op) {
    lines.splice(op.delete, 1);
  } else if ("swap" in op) {
    const [i, j] = op.swap;
    [lines[i], lines[j]] = [lines[j], lines[i]];
  } else if ("duplicate" in op) {
    lines.splice(op.duplicate + 1, 0, lines[op.duplicate]);
  } else {
    throw new Error(`unknown tampering ${JSON.stringify(op)}`);
  }
  fs.writeFileSync(path, Buffer.concat(lines));
}

// A signed, hash-chained, append-only journal of dispatch mutations, in the interchange
// format of docs/contracts/dispatch-recorder.md ("The journal"), so that the kit (and any
// auditor) can read it with its own code:
//
//   one entry per line, each line exactly canonical(entry) + "\n", where canonical() is
//   JSON with sorted keys, no whitespace, raw UTF-8;
//   entry = {mutation, prev, seq, sig, v: 2};
//   sig  = Ed25519 over DOMAIN + canonical({mutation, prev, seq, v}), lower-case hex;
//   prev = SHA-256 (hex) of the previous entry's signed bytes; for entry 0 the genesis
//          hash SHA-256(DOMAIN + "genesis" + raw public key), the key's fingerprint.
//
// A record returns OK only after its line is fsync'd, so an OK'd mutation survives a
// crash; a write or fsync that fails fails the record, and every later one until the
// journal is reopened (its tail is in doubt). Opened on an existing journal, the recorder continues it, cutting a torn tail. Verification names the first entry that is wrong, and calls a newline-less tail
// torn only if it cannot be a whole entry.

import crypto from "node:crypto";
import fs from "node:fs";

import { OK, RecordError } from "./executor.mjs";

export const DOMAIN = Buffer.from("seamspec/dispatch-recorder/journal-entry/v2\0", "latin1");
export const VERSION = 2;
const FIELDS = ["mutation", "prev", "seq", "sig", "v"];
const HEX64 = /^[0-9a-f]{64}$/;
const HEX128 = /^[0-9a-f]{128}$/;
// An Ed25519 public key as DER SubjectPublicKeyInfo is this prefix + the 32 raw bytes.
const SPKI_PREFIX = Buffer.from("302a300506032b6570032100", "hex");

/** Sorted keys at every level, no whitespace: the same bytes as Python's json.dumps
 * with sort_keys, compact separators and ensure_ascii=False. Objects are written key by
 * key (not through a sorted copy): JavaScript puts integer-like keys first in any object. */
function encode(value) {
  if (Array.isArray(value)) return `[${value.map(encode).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const keys = Object.keys(value).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${encode(value[k])}`).join(",")}}`;
  }
  return JSON.stringify(value);
}
export const canonical = (value) => Buffer.from(encode(value), "utf8");

const sha256 = (bytes) => crypto.createHash("sha256").update(bytes).digest("hex");
const signedBytes = (seq, prev, mutation) =>
  Buffer.concat([DOMAIN, canonical({ mutation, prev, seq, v: VERSION })]);

export const rawPublicKey = (keyObject) => keyObject.export({ format: "der", type: "spki" }).subarray(-32);
export const publicKeyFromRaw = (raw) =>
  crypto.createPublicKey({ key: Buffer.concat([SPKI_PREFIX, raw]), format: "der", type: "spki" });
/** The key's journal fingerprint: the genesis hash, entry 0's prev. */
export const fingerprint = (raw) => sha256(Buffer.concat([DOMAIN, Buffer.from("genesis"), raw]));

export class JournalRecorder {
  /** @param fsync (fd) => void: makes the appended bytes durable (the driver wraps it). */
  constructor(path, privateKey, { fsync = (fd) => fs.fsyncSync(fd) } = {}) {
    this.path = path;
    this.privateKey = privateKey;
    this.fsync = fsync;
    this.fd = fs.openSync(path, "a", 0o600); // append mode: every write lands at the end
    const raw = rawPublicKey(crypto.createPublicKey(privateKey));
    // An existing journal is continued (DR-JOURNAL-REOPEN): verified first, a torn tail
    // (an append cut short, never OK'd) cut off, and the chain taken on from its last
    // complete entry. Any other damage refuses the file: appending would hide it.
    const found = verifyJournal(path, raw);
    if (!found.ok && !found.tornTail) {
      fs.closeSync(this.fd);
      throw new Error(`${path} does not verify (${found.reason}): not appending to it`);
    }
    if (found.tornTail) {
      const data = fs.readFileSync(path);
      fs.ftruncateSync(this.fd, data.lastIndexOf(0x0a) + 1);
      this.fsync(this.fd);
    }
    const last = found.entries.at(-1);
    this.seq = found.entries.length;
    this.prev = last ? sha256(signedBytes(last.seq, last.prev, last.mutation)) : fingerprint(raw);
  }

  async record(mutation) {
    if (this.broken) return new RecordError(`the journal refuses records until reopened: ${this.broken}`);
    const signed = signedBytes(this.seq, this.prev, mutation);
    const sig = crypto.sign(null, signed, this.privateKey).toString("hex");
    const line = Buffer.concat([canonical({ mutation, prev: this.prev, seq: this.seq, sig, v: VERSION }), Buffer.from("\n")]);
    try {
      let written = 0;
      while (written < line.length) written += fs.writeSync(this.fd, line, written);
      this.fsync(this.fd); // durable before OK
    } catch (error) {
      // Written perhaps, durable not: not recorded (DR-JOURNAL-DURABLE), and the next
      // entry would land after bytes in doubt, so the journal stops here.
      this.broken = `${error.code ?? error.name}: ${error.message}`;
      return new RecordError(`the entry could not be made durable (${this.broken})`);
    }
    this.seq += 1;
    this.prev = sha256(signed);
    return OK;
  }

  close() {
    fs.closeSync(this.fd);
  }
}

/** Could a newline-less tail be a whole entry whose newline was lost or replaced? */
function mayBeEntry(segment) {
  for (const candidate of [segment, segment.subarray(0, segment.length - 1)]) {
    try {
      const value = JSON.parse(candidate.toString("utf8"));
      if (value !== null && typeof value === "object" && !Array.isArray(value)) return true;
    } catch {
      // not JSON: try the next candidate
    }
  }
  return false;
}

/** Why `line` is not entry `index` after `prev`, or null if it is. */
function problem(line, index, prev, publicKey) {
  let entry;
  try {
    entry = JSON.parse(line.toString("utf8"));
  } catch {
    return "not a JSON entry";
  }
  if (entry === null || typeof entry !== "object" || Array.isArray(entry)) return "not a JSON object";
  const keys = Object.keys(entry).sort();
  if (keys.length !== FIELDS.length || keys.some((k, i) => k !== FIELDS[i])) return "not exactly the fields mutation, prev, seq, sig, v";
  if (!canonical(entry).equals(line)) return "not in canonical form";
  if (entry.v !== VERSION) return `format version ${JSON.stringify(entry.v)}, not ${VERSION}`;
  if (entry.seq !== index) return `sequence number ${JSON.stringify(entry.seq)} where ${index} belongs`;
  if (entry.mutation === null || typeof entry.mutation !== "object" || Array.isArray(entry.mutation)) return "a mutation that is not an object";
  if (typeof entry.prev !== "string" || !HEX64.test(entry.prev)) return "a malformed prev";
  if (typeof entry.sig !== "string" || !HEX128.test(entry.sig)) return "a malformed signature";
  if (entry.prev !== prev) {
    return index === 0 ? `signed by key ${entry.prev.slice(0, 16)}…, expected ${prev.slice(0, 16)}…` : "does not chain to the previous entry";
  }
  const valid = crypto.verify(null, signedBytes(entry.seq, entry.prev, entry.mutation), publicKey, Buffer.from(entry.sig, "hex"));
  return valid ? null : "a signature that does not verify";
}

/**
 * Check every entry: framing, canonical bytes, order, chain, signature. `expectedEntries`
 * (an anchor kept elsewhere) also catches whole entries cut from the end or added to it.
 */
export function verifyJournal(path, rawKey, { expectedEntries = null } = {}) {
  const data = fs.readFileSync(path);
  const publicKey = publicKeyFromRaw(rawKey);
  const entries = [];
  const fail = (index, reason, tornTail = false) => ({ ok: false, badIndex: index, reason, tornTail, entries });
  let prev = fingerprint(rawKey);
  let start = 0;
  while (start < data.length) {
    const end = data.indexOf(0x0a, start);
    if (end === -1) {
      const tail = data.subarray(start);
      if (mayBeEntry(tail)) return fail(entries.length, "may be a complete entry whose newline was lost: not a torn tail");
      return fail(entries.length, "the last entry is incomplete (torn tail)", true);
    }
    const line = data.subarray(start, end);
    const why = problem(line, entries.length, prev, publicKey);
    if (why !== null) return fail(entries.length, `entry ${entries.length}: ${why}`);
    const entry = JSON.parse(line.toString("utf8"));
    entries.push(entry);
    prev = sha256(signedBytes(entry.seq, entry.prev, entry.mutation));
    start = end + 1;
  }
  if (expectedEntries !== null && entries.length !== expectedEntries) {
    const index = Math.min(entries.length, expectedEntries);
    return fail(index, `the journal has ${entries.length} entries; the anchor says ${expectedEntries}`);
  }
  return { ok: true, badIndex: null, reason: null, tornTail: false, entries };
}

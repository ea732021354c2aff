#!/usr/bin/env node
// A second implementation of seamspec's write-observer chain and dispatch recorder, in
// JavaScript, speaking the kit's wire protocol (docs/protocol.md): JSON lines on
// stdin/stdout, logs on stderr.
//
//   seamspec run --impl-cmd "node examples/js/seamspec-impl.mjs"
//
// This file is the whole protocol side; woc/ and dr/ hold each contract's implementation
// and the driver that performs scenarios with it. No npm dependencies: Node.js 20+.

import readline from "node:readline";

import { describe } from "./woc/chain.mjs";
import { answerQuery as answerDr, perform as performDr } from "./dr/driver.mjs";
import { DriverError, perform as performWoc } from "./woc/driver.mjs";

// Protocol 2: the kit hands a journal scenario's path and key over in `resources`, and
// asks about the journal afterwards with `query` messages.
const PROTOCOL = 2;

const IMPLEMENTATION = {
  name: "seamspec-js-example",
  language: "javascript",
  version: "0.1.0",
  contracts: ["write-observer-chain", "dispatch-recorder"],
  // Not "builtin-observers": those are the Python reference's real observers.
  features: ["write-tools", "hook-time-limit", "signed-journal", "record-time-limit", "fsync-fault"],
  // Contracts left out are skipped by the kit, never failed.
  details: { runtime: `node ${process.version}`, "not implemented": "shell-output" },
};

const PERFORMERS = { "write-observer-chain": performWoc, "dispatch-recorder": performDr };
const QUERIES = { "dispatch-recorder": answerDr };

function send(message) {
  process.stdout.write(JSON.stringify(message) + "\n");
}

function log(text) {
  process.stderr.write(`seamspec-js: ${text}\n`);
}

// A promise nobody waits for any more must not take the whole implementation down.
process.on("unhandledRejection", (reason) => log(`unhandled rejection: ${describe(reason)}`));

async function answer(seq, request) {
  const perform = PERFORMERS[request.contract];
  if (!perform) {
    return { type: "skip", seq, reason: `${IMPLEMENTATION.name} does not implement the ${request.contract} contract` };
  }
  try {
    return { type: "trace", seq, trace: await perform(request) };
  } catch (error) {
    const context = error instanceof DriverError ? error.context : (error?.stack ?? "");
    return { type: "error", seq, message: error?.message ?? String(error), ...(context ? { context } : {}) };
  }
}

function answerQuery(message) {
  const { seq } = message;
  try {
    const ask = QUERIES[message.contract];
    if (!ask) throw new Error(`no queries for the ${message.contract} contract`);
    return { type: "answer", seq, answer: ask(message.query, message.body) };
  } catch (error) {
    return { type: "error", seq, message: error?.message ?? String(error) };
  }
}

async function main() {
  const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  let started = false;
  for await (const line of lines) {
    if (!line.trim()) continue;
    let message;
    try {
      message = JSON.parse(line);
    } catch {
      log(`not JSON, ignored: ${line.slice(0, 200)}`);
      return 1;
    }
    if (!started) {
      // The kit offers the newest version it speaks; this implementation speaks 2 only.
      if (message.type !== "start" || !(message.protocol >= PROTOCOL)) {
        send({ type: "error", message: `this implementation speaks protocol ${PROTOCOL} only, got ${line.slice(0, 200)}` });
        return 1;
      }
      send({ type: "started", protocol: PROTOCOL, implementation: IMPLEMENTATION });
      started = true;
    } else if (message.type === "run") {
      send(await answer(message.seq, message.request));
    } else if (message.type === "query") {
      send(answerQuery(message));
    } else if (message.type === "stop") {
      return 0;
    } else {
      log(`unexpected message type ${JSON.stringify(message.type)}`);
      return 1;
    }
  }
  return 0; // end of input means stop
}

const code = await main();
// Timers left by abandoned hooks must not keep the process alive after a stop.
process.stdout.write("", () => process.exit(code));

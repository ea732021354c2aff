// The dispatch recorder's side of a harness, in JavaScript: the tool executor (policy
// decision, fail-closed recording of every mutation, dispatch, redaction) and the turn
// loop (one commit barrier per accepted step). It knows nothing about seamspec.
//
// Cancellation is an AbortSignal passed to every async call; a recorder, tool or provider
// that sees it abort rejects with the signal's reason, and nothing here contains that.

export const WITHHELD_NOTICE = "[result withheld: its redaction could not be recorded]";
export const OK = Object.freeze({ ok: true });

export const denialText = (reason) => `[tool call denied] ${reason}`;

export class RecordError {
  constructor(reason) {
    this.reason = reason;
  }
}

export class Message {
  constructor(role, content, toolCallId = null, toolCalls = []) {
    this.role = role;
    this.content = content;
    this.toolCallId = toolCallId;
    this.toolCalls = toolCalls;
  }
}

/** Python's repr() of an exception, so texts read the same as the reference's. */
export function pyRepr(error) {
  const name = error?.name ?? "Error";
  const text = String(error?.message ?? error);
  const quote = text.includes("'") && !text.includes('"') ? '"' : "'";
  const body = text
    .replace(/\\/g, "\\\\")
    .replace(/\n/g, "\\n")
    .replace(/\r/g, "\\r")
    .replace(/\t/g, "\\t")
    .replaceAll(quote, "\\" + quote);
  return `${name}(${quote}${body}${quote})`;
}

/** Python's `{x:g}` for the small numbers used as limits. */
const g = (seconds) => String(Number(seconds));

class CommitFailed extends Error {
  constructor(step, reason) {
    super(`step ${step} could not be committed, so the turn stopped: ${reason}`);
    this.name = "CommitFailed";
  }
}

/**
 * Runs `work(signal)` under a time limit that aborts only its own signal. Resolves to
 * {value} or {error}, plus `late: true` when the limit passed before `work` settled (a
 * result that arrives late still counts as failed). The caller's abort propagates.
 */
async function limited(work, seconds, signal) {
  const local = new AbortController();
  const forward = () => local.abort(signal.reason);
  signal.addEventListener("abort", forward, { once: true });
  let late = false;
  const expired = new Error("time limit");
  const timer =
    seconds == null
      ? null
      : setTimeout(() => {
          late = true;
          local.abort(expired);
        }, seconds * 1000);
  try {
    return { value: await work(local.signal), late };
  } catch (error) {
    if (signal.aborted) throw signal.reason; // the caller's cancellation is not ours
    // Stopped by the limit: late. A real exception wins, even after the limit passed.
    return error === expired ? { late: true } : { error, late: false };
  } finally {
    if (timer !== null) clearTimeout(timer);
    signal.removeEventListener("abort", forward);
  }
}

export class ToolExecutor {
  constructor(tools, policy, recorder, { approver = null, recordTimeLimit = 10 } = {}) {
    Object.assign(this, { tools, policy, recorder, approver, recordTimeLimit });
  }

  /**
   * One fail-closed record: anything but a timely OK is a RecordError. A cancellation
   * that came while the recorder was deaf to it (it answered anyway) wins: nothing
   * recorded after the caller went away may be applied.
   */
  async record(mutation, signal) {
    const { value, error, late } = await limited(
      (local) => this.recorder.record(mutation, { signal: local }),
      this.recordTimeLimit,
      signal,
    );
    if (signal.aborted) throw signal.reason;
    if (error !== undefined) return new RecordError(`the recorder raised ${pyRepr(error)}`);
    if (late) return new RecordError(`the record took longer than ${g(this.recordTimeLimit)} s`);
    if (value === OK || value instanceof RecordError) return value;
    return new RecordError(`the recorder returned ${String(value)}, which is not an outcome`);
  }

  async execute(call, signal) {
    const decision = await this.policy.beforeDispatch(call, { signal });
    const prepared = await this.#prepare(call, decision, signal);
    if (prepared.status === "denied") return prepared;
    let result;
    try {
      result = await this.tools.run(prepared, { signal });
    } catch (error) {
      if (signal.aborted) throw signal.reason;
      result = `[tool failed] ${pyRepr(error)}`;
    }
    const released = await this.#release(call, result, signal);
    const messages = prepared.context.map((text) => new Message("context", text, call.id));
    messages.push(new Message("tool", released, call.id));
    return { status: "ran", messages };
  }

  async #prepare(call, decision, signal) {
    const invocation = { callId: call.id, name: call.name, args: call.args, context: [] };
    if (decision.deny !== undefined) return this.#denied(call, decision.deny);
    if (decision.approval !== undefined) {
      const approved = this.approver !== null && (await this.approver(call, decision.approval, { signal }));
      if (!approved) return this.#denied(call, `approval required and not given: ${decision.approval}`);
    }
    // No recorder: no mutation may apply, so the call runs exactly as proposed.
    if (this.recorder === null || (decision.rewrite === undefined && decision.inject === undefined)) {
      return invocation;
    }
    const rewrite = decision.rewrite !== undefined;
    const kind = rewrite
      ? { kind: "input_rewrite", original_args: call.args, new_args: decision.rewrite }
      : { kind: "context_injection", context: decision.inject };
    const outcome = await this.record({ tool_call_id: call.id, tool_name: call.name, ...kind }, signal);
    if (outcome instanceof RecordError) {
      const what = rewrite ? "argument rewrite" : "context injection";
      return this.#denied(call, `the ${what} could not be recorded: ${outcome.reason}`);
    }
    return rewrite ? { ...invocation, args: decision.rewrite } : { ...invocation, context: [decision.inject] };
  }

  async #release(call, result, signal) {
    const redacted = await this.policy.afterDispatch(call, result, { signal });
    if (redacted == null || this.recorder === null) return result;
    const mutation = {
      tool_call_id: call.id,
      tool_name: call.name,
      kind: "result_redaction",
      original_result: result,
      redacted_result: redacted,
    };
    const outcome = await this.record(mutation, signal);
    return outcome instanceof RecordError ? WITHHELD_NOTICE : redacted;
  }

  #denied(call, reason) {
    return { status: "denied", messages: [new Message("tool", denialText(reason), call.id)] };
  }
}

/** Why a commit did not return OK in time, or null. */
async function commit(recorder, messages, seconds, signal) {
  if (typeof recorder.commitAcceptedStep !== "function") return null; // the default: OK
  const { value, error, late } = await limited(
    (local) => recorder.commitAcceptedStep(messages, { signal: local }),
    seconds,
    signal,
  );
  if (signal.aborted) throw signal.reason; // cancelled while a deaf commit answered
  if (error !== undefined) return `commit_accepted_step raised ${pyRepr(error)}`;
  if (late) return `commit_accepted_step took longer than ${g(seconds)} s`;
  if (value instanceof RecordError) return value.reason;
  if (value !== OK) return `commit_accepted_step returned ${String(value)}, which is not an outcome`;
  return null;
}

/**
 * One user turn to its final answer. Calls of a step run in proposal order; with a
 * recorder, every accepted step is committed before anything else happens.
 */
export async function runTurn(prompt, provider, executor, { commitTimeLimit = 10, maxSteps = 64, signal }) {
  const messages = [new Message("user", prompt)];
  for (let index = 0; index < maxSteps; index++) {
    const step = await provider.nextStep([...messages], { signal });
    const accepted = [new Message("assistant", step.text, null, step.toolCalls)];
    for (const call of step.toolCalls) {
      const outcome = await executor.execute(call, signal);
      accepted.push(...outcome.messages);
    }
    messages.push(...accepted);
    if (executor.recorder !== null) {
      const reason = await commit(executor.recorder, accepted, commitTimeLimit, signal);
      if (reason !== null) throw new CommitFailed(index, reason);
    }
    if (step.toolCalls.length === 0) return messages;
  }
  throw new Error(`the turn did not finish within ${maxSteps} steps`);
}

// The write-observer chain, in JavaScript: an ordered list of observers that is itself
// an observer. This is the part of a harness the write-observer-chain contract is about;
// it knows nothing about seamspec.
//
// An observer is an object with two async methods:
//   beforeWrite(path, { signal })            -> undefined
//   afterWrite(path, { signal })             -> string | null   (the annotation)
// `signal` is an AbortSignal: when it aborts, the caller has gone away (cancellation)
// or the chain's per-hook time limit ran out, and the observer should stop at once.

export const ANNOTATION_SEPARATOR = "\n\n";

/** Cancellation: not a failure of anyone, so the chain never contains it. */
export class Cancelled extends Error {
  constructor(why = "cancelled") {
    super(why);
    this.name = "Cancelled";
  }
}

/** The reason a hook's signal aborts when it outlives the chain's time limit. */
export class HookTimeout extends Cancelled {
  constructor(seconds) {
    super(`ran past its time limit of ${seconds} s`);
    this.name = "HookTimeout";
  }
}

/** A promise that rejects with the signal's reason once it aborts (never resolves). */
export function whenAborted(signal) {
  return new Promise((_, reject) => {
    if (signal.aborted) reject(signal.reason);
    else signal.addEventListener("abort", () => reject(signal.reason), { once: true });
  });
}

/** How long an aborted observer gets to wind down before the chain stops waiting. */
export const ABORT_GRACE = 1.0;

/**
 * Rejects once `signal` aborts and `call` has settled, or ABORT_GRACE seconds later. The
 * grace keeps hooks sequential (an observer finishes before the next starts) while still
 * ending the wait on an observer that ignores its signal.
 */
function abandonAfterGrace(call, signal) {
  return whenAborted(signal).catch(async (reason) => {
    let timer;
    const grace = new Promise((resolve) => {
      timer = setTimeout(resolve, ABORT_GRACE * 1000);
    });
    await Promise.race([call.then(() => {}, () => {}), grace]);
    clearTimeout(timer);
    throw reason;
  });
}

export class WriteObserverChain {
  /**
   * @param observers run in this order for both hooks (after_write is NOT reversed:
   *   diagnostics must read what the formatters left).
   * @param hookTimeLimit seconds one hook may take, or null for no limit of its own
   *   (nested in a chain that has one, its observers then run under that one). The
   *   limit bounds each leaf observer, never a nested chain as a whole (WOC-SLOW).
   * @param onFailure (observer, message) => void, called once per failing observer.
   */
  constructor(observers, { hookTimeLimit = null, onFailure = defaultOnFailure } = {}) {
    this.observers = [...observers];
    this.hookTimeLimit = hookTimeLimit;
    this.onFailure = onFailure;
    this.warned = new Set();
  }

  async beforeWrite(path, { signal } = {}) {
    await this.#runHook("beforeWrite", path, signal, null);
  }

  async afterWrite(path, { signal } = {}) {
    return this.#joined("afterWrite", path, signal, null);
  }

  async #joined(hook, path, signal, inheritedLimit) {
    const annotations = await this.#runHook(hook, path, signal, inheritedLimit);
    return annotations.length ? annotations.join(ANNOTATION_SEPARATOR) : null;
  }

  async #runHook(hook, path, signal, inheritedLimit) {
    const limit = this.hookTimeLimit ?? inheritedLimit;
    const annotations = [];
    for (const observer of this.observers) {
      // A nested chain is handed the limit for its own observers, not timed as a whole.
      const nested = observer instanceof WriteObserverChain;
      // The caller went away: stop before starting anyone else (WOC-CANCEL).
      if (signal?.aborted) throw signal.reason;
      const local = new AbortController();
      const forward = () => local.abort(signal.reason);
      signal?.addEventListener("abort", forward, { once: true });
      let timer = null;
      if (limit != null && !nested) {
        timer = setTimeout(() => local.abort(new HookTimeout(limit)), limit * 1000);
      }
      let result;
      try {
        const call = Promise.resolve(
          nested
            ? observer.#joined(hook, path, local.signal, limit)
            : observer[hook](path, { signal: local.signal }),
        );
        call.catch(() => {});
        result = await Promise.race([call, abandonAfterGrace(call, local.signal)]);
      } catch (error) {
        if (signal?.aborted) throw signal.reason; // the caller's cancellation propagates
        this.#report(observer, hook, error);
        continue; // contained: no annotation from this one, the next still runs
      } finally {
        if (timer !== null) clearTimeout(timer);
        signal?.removeEventListener("abort", forward);
      }
      if (hook === "afterWrite" && typeof result === "string" && result !== "") {
        annotations.push(result); // verbatim: only the empty string means "nothing"
      }
    }
    return annotations;
  }

  #report(observer, hook, error) {
    if (this.warned.has(observer)) return; // once per observer, for the chain's lifetime
    this.warned.add(observer);
    const name = observer.name ?? observer.constructor?.name ?? "observer";
    const what =
      error instanceof HookTimeout ? "ran past its time limit" : `raised ${describe(error)}`;
    try {
      this.onFailure(observer, `write observer '${name}': ${hook} ${what}; skipped`);
    } catch {
      // a broken warning sink must not fail the edit either
    }
  }
}

export function describe(error) {
  if (error instanceof Error) return `${error.name}(${JSON.stringify(error.message)})`;
  return String(error);
}

function defaultOnFailure(_observer, message) {
  process.emitWarning(message, "ObserverFailureWarning");
}

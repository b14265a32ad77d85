// Helpers of the durable function tests.
import assert from "node:assert/strict";

import type { Client, Run } from "../index.js";

/** Polls cond every 50 ms until it holds, failing past ms. */
export async function eventually(what: string, ms: number, cond: () => Promise<boolean> | boolean): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The function step's view in run r. */
export const main = (r: Run) => {
  const s = r.steps.find((x) => x.id === "main");
  assert.ok(s, "step main");
  return s;
};

/** Resolves once run's attempt n (from 1) of main ended as suspended. */
export function suspended(c: Client, run: string, n = 1): Promise<void> {
  return eventually(`attempt ${n} of ${run} to suspend`, 15_000, async () => main(await c.get(run)).attempts[n - 1]?.outcome === "suspended");
}

// A step's options are checked against the engine's table of which
// optional fields each kind takes (kinds.gen.ts, generated from the spec):
// no server needed.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { defineWorkflow } from "../index.js";
import { kindOptions } from "../kinds.gen.js";

test("kinds.gen.ts is the spec's x-kind-options", () => {
  const spec = JSON.parse(readFileSync(new URL("../../../../openapi/openapi.json", import.meta.url), "utf8"));
  assert.deepEqual({ ...kindOptions }, spec.components.schemas.Step["x-kind-options"]);
});

test("an option its kind does not take is refused with the engine's message", () => {
  const nop = async () => null;
  assert.throws(() => defineWorkflow({ name: "w", version: "1" }).sleep("s", "1s", { timeout: "2s" }), {
    message: "cairn: workflow w: step s: timeout applies to task, map and function steps only",
  });
  assert.throws(() => defineWorkflow({ name: "w", version: "1" }).map("m", "${input.xs}", nop, { priority: 3 }), {
    message: "cairn: workflow w: step m: priority applies to task and function steps only",
  });
  assert.throws(() => defineWorkflow({ name: "w", version: "1" }).task("t", nop, { maxConcurrency: 2 }), {
    message: "cairn: workflow w: step t: max_concurrency applies to map steps only",
  });
  assert.throws(() => defineWorkflow({ name: "w", version: "1" }).wait("e", "go", { childVersion: "2" }), {
    message: "cairn: workflow w: step e: child_version applies to child steps only",
  });
  // What each kind takes is accepted.
  defineWorkflow({ name: "w", version: "1" })
    .task("t", nop, { retry: { maxAttempts: 2 }, timeout: "1s", atMostOnce: true, maxDeliveries: 2, priority: 1, concurrency: { key: "", limit: 1 } })
    .wait("e", "go", { timeout: "5s" })
    .sleep("s", "1s")
    .map("m", "${input.xs}", nop, { maxConcurrency: 3, toleratedFailures: 1, retry: { maxAttempts: 2 }, timeout: "1s" })
    .child("c", "other", { childVersion: "1" });
});

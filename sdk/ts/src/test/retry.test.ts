import assert from "node:assert/strict";
import { test } from "node:test";

import { Client } from "../index.js";

const run = {
  id: "01ARZ3NDEKTSV4RRFFQ69G5FAV", workflow: "w", version: "1", status: "running", state: {}, steps: [],
  created_at: "2026-01-01T00:00:00Z", updated_at: "2026-01-01T00:00:00Z", usage: {}, steps_done: 0, steps_total: 1,
};

// A fake server: answers each request with the next status of script
// (then 200 or 201 with a run), counting sends by method.
function fakeFetch(script: number[]) {
  const sends: string[] = [];
  const f: typeof fetch = async (input, init) => {
    const method = (init?.method ?? (input instanceof Request ? input.method : "GET")).toUpperCase();
    sends.push(method);
    const status = script.shift();
    if (status !== undefined) {
      return new Response(JSON.stringify({ status, title: "err", detail: "injected" }), {
        status, headers: { "Content-Type": "application/problem+json", "Retry-After": "0" },
      });
    }
    const body = method === "GET" ? run : { run, existed: false };
    return new Response(JSON.stringify(body), { status: method === "GET" ? 200 : 201, headers: { "Content-Type": "application/json" } });
  };
  return { f, sends };
}

test("a GET is sent again after a server error; a start is not, but is after a 503 or 429", async () => {
  {
    const { f, sends } = fakeFetch([502, 500]);
    const c = new Client({ server: "http://127.0.0.1:1", fetch: f });
    const got = await c.get(run.id);
    assert.equal(got.id, run.id);
    assert.deepEqual(sends, ["GET", "GET", "GET"]);
  }
  {
    const { f, sends } = fakeFetch([500]);
    const c = new Client({ server: "http://127.0.0.1:1", fetch: f });
    await assert.rejects(c.start("w"));
    assert.deepEqual(sends, ["POST"], "a 500 of a start may have applied it: not sent again");
  }
  {
    const { f, sends } = fakeFetch([503, 429]);
    const c = new Client({ server: "http://127.0.0.1:1", fetch: f });
    const got = await c.start("w");
    assert.equal(got.run.id, run.id);
    assert.deepEqual(sends, ["POST", "POST", "POST"]);
  }
  {
    const { f, sends } = fakeFetch([502, 502, 502, 502, 502]);
    const c = new Client({ server: "http://127.0.0.1:1", fetch: f });
    await assert.rejects(c.get(run.id));
    assert.equal(sends.length, 4, "at most 4 sends");
  }
});

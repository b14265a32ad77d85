// Payloads by reference. A value larger than the server's inline limit
// (a run's input, a step's output, a state value, an event payload)
// reaches clients as a reference, {"$cairn_payload":{"sha256":…,"bytes":…}};
// the server stores any client value that is an object whose first key is
// "$cairn_payload" by reference itself, so an inline value is never one.
// The client resolves the references of the runs it returns, and a worker
// those of a lease (input, outputs, state) before the body runs.

import type { API, Lease, Run } from "./client.js";
import { unwrap } from "./client.js";

export interface PayloadRef {
  sha256: string;
  bytes: number;
}

/** The reference v is, or undefined. */
export function asPayloadRef(v: unknown): PayloadRef | undefined {
  if (typeof v !== "object" || v === null || Array.isArray(v)) return undefined;
  const keys = Object.keys(v);
  if (keys.length !== 1 || keys[0] !== "$cairn_payload") return undefined;
  const p = (v as Record<string, unknown>)["$cairn_payload"];
  if (typeof p !== "object" || p === null) return undefined;
  const { sha256, bytes } = p as Record<string, unknown>;
  if (typeof sha256 !== "string" || !/^[0-9a-f]{64}$/.test(sha256) || typeof bytes !== "number") return undefined;
  return { sha256, bytes };
}

/** At most this many payload reads at once per resolution. */
const parallel = 8;

async function resolveAll(slots: { get: () => unknown; set: (v: unknown) => void }[], fetch: (ref: PayloadRef) => Promise<unknown>): Promise<void> {
  const todo = slots.filter((s) => asPayloadRef(s.get()) !== undefined);
  let next = 0;
  const lane = async () => {
    while (next < todo.length) {
      const s = todo[next++]!;
      s.set(await fetch(asPayloadRef(s.get())!));
    }
  };
  await Promise.all(Array.from({ length: Math.min(parallel, todo.length) }, lane));
}

async function fetchText(r: Promise<{ data?: unknown; error?: unknown; response: Response }>): Promise<unknown> {
  return JSON.parse(unwrap(await r) as string) as unknown;
}

function mapSlots(m: Record<string, unknown> | undefined): { get: () => unknown; set: (v: unknown) => void }[] {
  if (!m) return [];
  return Object.keys(m).map((k) => ({ get: () => m[k], set: (v: unknown) => (m[k] = v) }));
}

/** A value of run, or the value it references when it is stored by reference. */
export async function resolveRunValue(api: API, run: string, v: unknown): Promise<unknown> {
  const ref = asPayloadRef(v);
  if (!ref) return v;
  return fetchText(api.GET("/v1/api/runs/{run}/payloads/{sha256}", { params: { path: { run, sha256: ref.sha256 } }, parseAs: "text" }));
}

/** Replaces the references in a run (input, output, state, step outputs) by their values, in place. */
export async function resolveRun(api: API, r: Run): Promise<Run> {
  const run = r.id;
  const fetch = (ref: PayloadRef) =>
    fetchText(api.GET("/v1/api/runs/{run}/payloads/{sha256}", { params: { path: { run, sha256: ref.sha256 } }, parseAs: "text" }));
  const slots = [
    { get: () => r.input, set: (v: unknown) => (r.input = v) },
    ...mapSlots(r.state as Record<string, unknown> | undefined),
    ...r.steps.map((s) => ({ get: () => s.output, set: (v: unknown) => (s.output = v) })),
  ];
  if (asPayloadRef(r.output)) slots.push({ get: () => r.output, set: (v: unknown) => (r.output = v) });
  else if (r.steps.length > 0 && typeof r.output === "object" && r.output !== null && !Array.isArray(r.output)) {
    // Several sinks: an object of their outputs by step id.
    const sinks = r.output as Record<string, unknown>;
    if (Object.keys(sinks).every((k) => r.steps.some((s) => s.id === k))) slots.push(...mapSlots(sinks));
  }
  await resolveAll(slots, fetch);
  return r;
}

/** Replaces the references in a lease (input, outputs, state) by their values, in place, read through the lease. */
export async function resolveLease(api: API, l: Lease): Promise<void> {
  const lease = l.id;
  const fetch = (ref: PayloadRef) =>
    fetchText(api.GET("/v1/api/steps/{lease}/payloads/{sha256}", { params: { path: { lease, sha256: ref.sha256 } }, parseAs: "text" }));
  await resolveAll(
    [{ get: () => l.input, set: (v: unknown) => (l.input = v) }, ...mapSlots(l.steps as Record<string, unknown>), ...mapSlots(l.state as Record<string, unknown>)],
    fetch,
  );
}

/** v, or the value it references when it is a reference, read through lease. */
export async function resolveLeaseValue(api: API, lease: string, v: unknown): Promise<unknown> {
  const ref = asPayloadRef(v);
  if (!ref) return v;
  return fetchText(api.GET("/v1/api/steps/{lease}/payloads/{sha256}", { params: { path: { lease, sha256: ref.sha256 } }, parseAs: "text" }));
}

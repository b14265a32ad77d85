// Progress streams: a step body publishes progress (ctx.progress), and a
// client follows a run's status, journal and progress as Server-Sent
// Events (client.stream).
import { APIError } from "./errors.js";
import type { components } from "./schema.gen.js";

type Schemas = components["schemas"];
export type ProgressEvent = Schemas["ProgressEvent"];
export type JournalEvent = Schemas["JournalEvent"];

/** One event of a run's stream; `kind` says which field is set. */
export type StreamEvent =
  | { kind: "status" | "end"; id: string; status: Schemas["RunProgress"] }
  | { kind: "journal"; id: string; journal: JournalEvent }
  | { kind: "progress"; progress: ProgressEvent };

/** How the stream reaches the server: the client's base URL, headers and fetch. */
export interface StreamTransport {
  server: string;
  headers: Record<string, string>;
  fetch: typeof fetch;
}

const wait = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => (clearTimeout(t), reject(signal.reason)), { once: true });
  });

async function problem(res: Response): Promise<APIError> {
  const body = (await res.json().catch(() => undefined)) as ConstructorParameters<typeof APIError>[1];
  return new APIError(res.status, body);
}

/**
 * Publishes a step's progress value (any JSON value, at most 16 KiB) to
 * its run's watchers. Nothing is stored. Over the lease's rate (50 a
 * second) it waits as the server asks and sends again, so values keep
 * their order. Throws an APIError when the attempt is over (409).
 */
export async function sendProgress(t: StreamTransport, lease: string, value: unknown, signal?: AbortSignal): Promise<void> {
  for (;;) {
    const res = await t.fetch(`${t.server}/v1/api/steps/${encodeURIComponent(lease)}/progress`, {
      method: "POST",
      headers: { ...t.headers, "Content-Type": "application/json" },
      body: JSON.stringify({ value: value === undefined ? null : value }),
      signal,
    });
    if (res.ok) return void (await res.body?.cancel());
    if (res.status !== 429) throw await problem(res);
    await res.body?.cancel();
    await wait(Math.max(10, Number(res.headers.get("retry-after-ms")) || 100), signal);
  }
}

/** Parses Server-Sent Events from a response body. */
async function* events(body: ReadableStream<Uint8Array>): AsyncGenerator<{ event: string; id: string; data: string }> {
  const dec = new TextDecoder();
  let buf = "";
  let ev = { event: "", id: "", data: "" };
  for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
    buf += dec.decode(chunk, { stream: true });
    let nl: number;
    while ((nl = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, nl).replace(/\r$/, "");
      buf = buf.slice(nl + 1);
      if (line === "") {
        if (ev.event) yield ev;
        ev = { event: "", id: "", data: "" };
        continue;
      }
      const i = line.indexOf(":");
      const k = i < 0 ? line : line.slice(0, i);
      const v = i < 0 ? "" : line.slice(i + 1).replace(/^ /, "");
      if (k === "event") ev.event = v;
      else if (k === "id") ev.id = v;
      else if (k === "data") ev.data += v;
    }
  }
}

function typed(e: { event: string; id: string; data: string }): StreamEvent | undefined {
  const data = JSON.parse(e.data);
  switch (e.event) {
    case "status":
    case "end":
      return { kind: e.event, id: e.id, status: data };
    case "journal":
      return { kind: "journal", id: e.id, journal: data };
    case "progress":
      return { kind: "progress", progress: data };
  }
  return undefined; // a kind this client does not know
}

/**
 * Follows a run until it ends (the last event is `end`) or signal aborts.
 * A connection the server closes (streams are bounded in time) or that
 * breaks is opened again from the last event id: status and journal
 * resume, progress sent meanwhile is missed.
 */
export async function* streamRun(t: StreamTransport, run: string, signal?: AbortSignal): AsyncGenerator<StreamEvent> {
  let last = "";
  let fails = 0;
  for (;;) {
    let got = false;
    try {
      const headers: Record<string, string> = { ...t.headers, Accept: "text/event-stream" };
      if (last) headers["Last-Event-ID"] = last;
      const res = await t.fetch(`${t.server}/v1/api/runs/${encodeURIComponent(run)}/stream`, { headers, signal });
      if (!res.ok || !res.body) throw await problem(res);
      for await (const raw of events(res.body)) {
        const ev = typed(raw);
        got = true;
        if (!ev) continue;
        if ("id" in ev && ev.id) last = ev.id;
        yield ev;
        if (ev.kind === "end") return;
      }
    } catch (err) {
      if (signal?.aborted || (err instanceof APIError && !err.temporary) || fails > 5) throw err;
    }
    fails = got ? 0 : fails + 1;
    if (fails > 0) await wait(200 * fails, signal);
  }
}

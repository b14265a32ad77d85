// The long-term store: a key-value store, kept in the engine's bucket, for
// data that outlives runs (per-user memory, learned facts). Needs a key with
// the store scope. Writes are not part of a run's history: a retried step
// writes again, so write values derived from the step, or use update, which
// writes over the version it read. With a codec, values are encrypted whole.
import type { Client } from "./client.js";
import { unwrap } from "./client.js";
import { open } from "./codec.js";
import { isConflict, isNotFound } from "./errors.js";
import type { components } from "./schema.gen.js";

export type StoreEntry = components["schemas"]["StoreEntry"];
export type StoreKeyInfo = components["schemas"]["StoreKeyInfo"];

/** A write's condition: over that version only, or only where there is no value. Another value is a 409 (isConflict) and nothing is written. */
export interface StoreCondition {
  ifVersion?: string;
  ifAbsent?: boolean;
}

/** One namespace of the long-term store (Client.store). */
export class Store {
  constructor(
    readonly client: Client,
    readonly namespace: string,
  ) {}

  private path(key: string) {
    return { params: { path: { namespace: this.namespace, key } } };
  }

  /** The value (decrypted) and its version; undefined when the key has none. */
  async get<T = unknown>(key: string): Promise<(StoreEntry & { value: T }) | undefined> {
    try {
      const e = unwrap(await this.client.api.GET("/v1/api/store/{namespace}/{key}", this.path(key)));
      return { ...e, value: open(this.client.codec, e.value) as T };
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  /** Writes value (any JSON value) under cond; answers the new version. */
  async put(key: string, value: unknown, cond: StoreCondition = {}): Promise<StoreEntry> {
    const body = {
      value: this.client.codec ? this.client.codec.encrypt(value) : value,
      if_version: cond.ifVersion,
      if_absent: cond.ifAbsent,
    };
    return unwrap(await this.client.api.PUT("/v1/api/store/{namespace}/{key}", { ...this.path(key), body }));
  }

  /**
   * Reads key, calls fn with its value (undefined when it has none) and writes
   * what fn returns over the version it read, again from the read when another
   * writer came first: no concurrent update is lost. fn may run several times.
   */
  async update<T = unknown>(key: string, fn: (old: T | undefined) => unknown): Promise<StoreEntry> {
    for (;;) {
      const cur = await this.get<T>(key);
      const next = await fn(cur?.value);
      try {
        return await this.put(key, next, cur ? { ifVersion: cur.version } : { ifAbsent: true });
      } catch (err) {
        if (!isConflict(err)) throw err;
      }
    }
  }

  /** Deletes key's value; with ifVersion only that version (another value, or none, is a 409). */
  async delete(key: string, ifVersion?: string): Promise<void> {
    unwrap(await this.client.api.DELETE("/v1/api/store/{namespace}/{key}", { params: { ...this.path(key).params, query: { if_version: ifVersion } } }));
  }

  /** The keys that start with prefix, in key order, a page at a time. */
  async *keys(prefix?: string): AsyncGenerator<StoreKeyInfo> {
    let cursor: string | undefined;
    do {
      const page = unwrap(
        await this.client.api.GET("/v1/api/store/{namespace}", { params: { path: { namespace: this.namespace }, query: { prefix, cursor } } }),
      );
      yield* page.keys;
      cursor = page.next_cursor;
    } while (cursor);
  }
}

// Client-side encryption of JSON values: the same format as the Go SDK's
// sdk/codec package (its testdata/vectors.json is checked here too).
//
//   {"$cairn_encrypted":{"v":1,"alg":"A256GCM","kid":"k2","nonce":"…","ct":"…"}}
//
// The plaintext is the UTF-8 JSON text of the value, sealed with
// AES-256-GCM (node:crypto) under the key kid names; the additional data
// is "cairn-codec-v1:" + kid. A keyring's first key encrypts, every key
// decrypts: to rotate, put a new key first.
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";

export const MARKER = "$cairn_encrypted";
const AAD_PREFIX = "cairn-codec-v1:";
const NONCE = 12;
const TAG = 16;

export interface Envelope {
  v: number;
  alg: string;
  kid: string;
  nonce: string;
  ct: string;
}
export type EncryptedValue = { [MARKER]: Envelope };

/** Why a value did not decrypt: unknown_key (kid names it), auth (wrong key or changed value), malformed. */
export class CodecError extends Error {
  override readonly name = "CodecError";
  constructor(
    readonly kind: "unknown_key" | "auth" | "malformed",
    message: string,
    readonly kid?: string,
  ) {
    super(`cairn codec: ${message}`);
  }
}

export interface Key {
  id: string;
  secret: Uint8Array;
}

/** Whether v is an encrypted value: an object whose one key is $cairn_encrypted, holding an object. */
export function isEncrypted(v: unknown): v is EncryptedValue {
  if (typeof v !== "object" || v === null || Array.isArray(v)) return false;
  const keys = Object.keys(v);
  const inner = (v as Record<string, unknown>)[MARKER];
  return keys.length === 1 && keys[0] === MARKER && typeof inner === "object" && inner !== null && !Array.isArray(inner);
}

const b64 = /^[A-Za-z0-9+/]*={0,2}$/;
function fromB64(s: unknown, what: string): Buffer {
  if (typeof s !== "string" || s.length % 4 !== 0 || !b64.test(s)) throw new CodecError("malformed", `${what} is not standard base64`);
  return Buffer.from(s, "base64");
}

/** A keyring: the first key encrypts, every key decrypts. */
export class Keyring {
  private readonly keys: { id: string; secret: Buffer }[];

  constructor(keys: Key[]) {
    if (keys.length === 0) throw new Error("cairn codec: a keyring needs at least one key");
    const seen = new Set<string>();
    this.keys = keys.map((k, i) => {
      if (!/^[\x21-\x7e]{1,128}$/.test(k.id)) throw new Error(`cairn codec: key ${i}: id ${JSON.stringify(k.id)} must be 1 to 128 printable ASCII characters without spaces`);
      if (seen.has(k.id)) throw new Error(`cairn codec: key id ${JSON.stringify(k.id)} appears twice`);
      seen.add(k.id);
      if (k.secret.length !== 32) throw new Error(`cairn codec: key ${JSON.stringify(k.id)} is ${k.secret.length} bytes, want 32 (AES-256)`);
      return { id: k.id, secret: Buffer.from(k.secret) };
    });
  }

  /** Reads a keyring's JSON form, {"keys":[{"id":"k2","key":"<base64 of 32 bytes>"},…]}, newest first. */
  static parse(json: string | { keys?: { id?: unknown; key?: unknown }[] }): Keyring {
    const f = typeof json === "string" ? (JSON.parse(json) as { keys?: { id?: unknown; key?: unknown }[] }) : json;
    if (!Array.isArray(f?.keys)) throw new Error("cairn codec: keyring: no keys array");
    return new Keyring(
      f.keys.map((k, i) => {
        if (typeof k.id !== "string") throw new Error(`cairn codec: keyring: key ${i}: no id`);
        let secret: Buffer;
        try {
          secret = fromB64(k.key, `key ${k.id}`);
        } catch (err) {
          throw new Error(`cairn codec: keyring: key ${i} (${k.id}): not standard base64`, { cause: err });
        }
        return { id: k.id, secret };
      }),
    );
  }

  /** Reads a keyring file. */
  static load(path: string): Keyring {
    return Keyring.parse(readFileSync(path, "utf8"));
  }

  /** The key ids, the encrypting one first. */
  get keyIDs(): string[] {
    return this.keys.map((k) => k.id);
  }

  /** v encrypted with the first key under a fresh nonce; an encrypted value is returned as it is. */
  encrypt(v: unknown): EncryptedValue {
    if (isEncrypted(v)) return v;
    const text = JSON.stringify(v === undefined ? null : v);
    return this._seal(this.keys[0]!.id, randomBytes(NONCE), text);
  }

  /** Seals the exact JSON text with kid under nonce (the vectors use it). */
  _seal(kid: string, nonce: Uint8Array, text: string): EncryptedValue {
    const k = this.keys.find((x) => x.id === kid);
    if (!k) throw new CodecError("unknown_key", `unknown key id ${JSON.stringify(kid)}`, kid);
    const c = createCipheriv("aes-256-gcm", k.secret, nonce, { authTagLength: TAG });
    c.setAAD(Buffer.from(AAD_PREFIX + kid, "ascii"));
    const ct = Buffer.concat([c.update(text, "utf8"), c.final(), c.getAuthTag()]);
    return { [MARKER]: { v: 1, alg: "A256GCM", kid, nonce: Buffer.from(nonce).toString("base64"), ct: ct.toString("base64") } };
  }

  /** The plaintext JSON text of an encrypted value. */
  decryptText(env: unknown): string {
    if (!isEncrypted(env)) throw new CodecError("malformed", `not an object whose one key is ${MARKER}`);
    const e = env[MARKER];
    if (e.v !== 1) throw new CodecError("malformed", `version ${String(e.v)}, this codec reads 1`);
    if (e.alg !== "A256GCM") throw new CodecError("malformed", `algorithm ${JSON.stringify(e.alg)}, this codec reads "A256GCM"`);
    const k = this.keys.find((x) => x.id === e.kid);
    if (!k) throw new CodecError("unknown_key", `unknown key id ${JSON.stringify(e.kid)} (the keyring holds ${JSON.stringify(this.keyIDs)})`, e.kid);
    const nonce = fromB64(e.nonce, "nonce");
    if (nonce.length !== NONCE) throw new CodecError("malformed", `nonce is ${nonce.length} bytes, want ${NONCE}`);
    const ct = fromB64(e.ct, "ct");
    if (ct.length < TAG) throw new CodecError("malformed", `ct is ${ct.length} bytes, shorter than the tag`);
    try {
      const d = createDecipheriv("aes-256-gcm", k.secret, nonce, { authTagLength: TAG });
      d.setAAD(Buffer.from(AAD_PREFIX + e.kid, "ascii"));
      d.setAuthTag(ct.subarray(ct.length - TAG));
      return Buffer.concat([d.update(ct.subarray(0, ct.length - TAG)), d.final()]).toString("utf8");
    } catch {
      throw new CodecError("auth", `value does not decrypt with key ${JSON.stringify(e.kid)} (wrong key, or the value was changed)`, e.kid);
    }
  }

  /** The value an encrypted value holds. */
  decrypt(env: unknown): unknown {
    const text = this.decryptText(env);
    try {
      return JSON.parse(text) as unknown;
    } catch {
      throw new CodecError("malformed", "plaintext is not JSON");
    }
  }

  /** v with every encrypted value anywhere inside it replaced by its plaintext. */
  decodeDeep(v: unknown, depth = 0): unknown {
    if (depth > 1000) throw new CodecError("malformed", "nested more than 1000 deep");
    if (typeof v !== "object" || v === null) return v;
    if (isEncrypted(v)) return this.decodeDeep(this.decrypt(v), depth + 1);
    if (Array.isArray(v)) return v.map((x) => this.decodeDeep(x, depth + 1));
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) out[k] = this.decodeDeep(x, depth + 1);
    return out;
  }
}

/** Encrypts each top-level value of an object (but the clear keys), any other value whole. */
export function sealTop(k: Keyring | undefined, v: unknown, clear: ReadonlySet<string> = new Set()): unknown {
  if (!k || v === undefined) return v;
  if (typeof v !== "object" || v === null || Array.isArray(v) || isEncrypted(v)) return k.encrypt(v);
  return sealMap(k, v as Record<string, unknown>, clear);
}

/** A map with its values encrypted, but those of the clear keys. */
export function sealMap<T extends Record<string, unknown> | undefined>(k: Keyring | undefined, m: T, clear: ReadonlySet<string> = new Set()): T {
  if (!k || !m) return m;
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(m)) out[key] = clear.has(key) || v === undefined ? v : k.encrypt(v);
  return out as T;
}

/** decodeDeep when there is a keyring. */
export function open(k: Keyring | undefined, v: unknown): unknown {
  return k && v !== undefined ? k.decodeDeep(v) : v;
}

// cairn's TypeScript SDK: a client for runs and a worker for step bodies,
// over the client generated from the committed OpenAPI document.
export * from "./client.js";
export { CodecError, isEncrypted, Keyring, type EncryptedValue, type Envelope, type Key } from "./codec.js";
export * from "./errors.js";
export * from "./workflow.js";
export { ContinueAsNew, defineFunction, FunctionSuspended, type Call, type DurableContext, type DurableStepOptions, type FunctionBody, type FunctionOptions, type MapOptions, type Received } from "./function.js";
export * from "./worker.js";
export { sendProgress, type JournalEvent, type ProgressEvent, type StreamEvent } from "./stream.js";
export { runHere, type RunHereOptions } from "./here.js";
export { Store, type StoreCondition, type StoreEntry, type StoreKeyInfo } from "./store.js";
export { asPayloadRef, type PayloadRef } from "./payloads.js";
export type { components, paths, operations } from "./schema.gen.js";

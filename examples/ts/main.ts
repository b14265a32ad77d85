// The triage worker of examples/triage, in TypeScript (the workflow is in
// triage.ts). Run: make run (terminal 1), then here: npm install && npm start.
import { Client, consoleLogger, Worker } from "@cairn-dev/cairn";

import { triage } from "./triage.js";
import { triageFunction } from "./triage-function.js";

// $CAIRN_SERVER (default http://127.0.0.1:8080), $CAIRN_KEY.
const worker = new Worker(new Client(), { concurrency: 8, logger: consoleLogger(), labels: { example: "triage-ts" } }).register(triage, triageFunction);
// Drains on SIGTERM/SIGINT: running bodies finish and report first.
await worker.serve({ handleSignals: true });

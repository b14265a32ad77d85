// The TypeScript member of the Python SDK's mixed-fleet test
// (tests/test_fleet.py): a TypeScript SDK worker (the build in
// $CAIRN_TS_SDK, sdk/ts/dist) serving bench/e2e's fan-out workflow, whose
// 200 no-op steps a Go and a Python worker serve too. It prints "ready"
// once registered and drains on SIGTERM.
const { Client, Worker, defineWorkflow } = await import(process.env.CAIRN_TS_SDK);

const wf = defineWorkflow({ name: "e2e-fanout200", version: "1" });
for (let i = 0; i < 200; i++) wf.task(`p${String(i).padStart(3, "0")}`, async () => ({}));
const quiet = { debug() {}, info() {}, warn() {}, error: (m, a) => console.error(m, a) };
const w = new Worker(new Client({ server: process.env.CAIRN_SERVER }), {
  name: "ts-worker",
  concurrency: 1,
  claimWaitMs: 1000,
  logger: quiet,
}).register(wf);
const serve = w.serve({ handleSignals: true });
await Promise.race([w.ready, serve]);
console.log("ready");
await serve;

// The npm tarball carries the package's README and LICENSE beside the
// built code: npm pack --dry-run lists what `npm publish` would upload.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { test } from "node:test";

const root = fileURLToPath(new URL("../../", import.meta.url)); // sdk/ts, from dist/test

test("the npm tarball includes README.md and LICENSE", () => {
  const out = execFileSync("npm", ["pack", "--dry-run", "--json", "--ignore-scripts"], {
    cwd: root,
    encoding: "utf8",
    timeout: 60_000,
  });
  const [pack] = JSON.parse(out) as { files: { path: string }[] }[];
  assert.ok(pack, `npm pack printed no package: ${out}`);
  const files = pack.files.map((f) => f.path);
  for (const want of ["README.md", "LICENSE", "package.json", "dist/index.js"]) {
    assert.ok(files.includes(want), `${want} is not in the tarball: ${files.join(", ")}`);
  }
  assert.ok(!files.some((f) => f.startsWith("dist/test/")), `the tests are in the tarball: ${files.join(", ")}`);
});

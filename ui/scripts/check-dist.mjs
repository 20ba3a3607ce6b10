// Checks the production build after `vite build`: no test code and none of
// the test fixtures' texts are in it, and the page carries its content
// security policy. Exits non-zero (failing `npm run build`) otherwise.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";

const dist = new URL("../dist/", import.meta.url).pathname;
const files = [];
(function walk(dir) {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p);
    else files.push(p);
  }
})(dist);

// Strings that exist only in the tests' data (src/mocks/) and helpers (src/testing/).
const TEST_MARKERS = ["worldloom-vitest", "harbor-books", "web-large-tree", "Lantern Weather"];
let bad = 0;
for (const f of files) {
  const text = readFileSync(f, "utf8");
  for (const m of TEST_MARKERS) {
    if (text.includes(m)) {
      console.error(`check-dist: ${f} contains "${m}": test code or data leaked into the production build`);
      bad += 1;
    }
  }
}
const index = readFileSync(join(dist, "index.html"), "utf8");
if (!/<meta http-equiv="Content-Security-Policy" content="default-src 'self'/.test(index)) {
  console.error("check-dist: dist/index.html has no Content-Security-Policy meta");
  bad += 1;
}
if (bad) process.exit(1);
console.log(`check-dist: ${files.length} files, no test code or data, CSP present`);

/**
 * Vitest global set-up: the view tests run against the real API, the
 * `worldloom` binary serving a workspace each test makes (`server.ts`), never
 * a second implementation of it in TypeScript. This checks the binary is
 * there (`$WORLDLOOM_BIN`) and writes the dev fixtures
 * (`src/mocks/fixtures/*.json`) and a 20,000-line tree once as native
 * trajectory files (`e2e/nativeFixtures.mjs`'s conversion, each named by its
 * fixture id) for the tests to import.
 */
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { TestProject } from "vitest/node";
import { largeTreeFixture, toNative } from "../../e2e/nativeFixtures.mjs";

declare module "vitest" {
  export interface ProvidedContext {
    /** The `worldloom` binary the tests start. */
    worldloomBin: string;
    /** The dev fixtures as native trajectory files, by fixture id (`web-harbor-books`). */
    fixturePaths: Record<string, string>;
    /** A web trajectory whose accessibility tree has 20,000 lines (`large-tree`), as a native file. */
    largeTreePath: string;
    /** The repository's root (`samples/` is there). */
    repoDir: string;
  }
}

const uiDir = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");

export default function setup(project: TestProject): () => void {
  const bin = process.env.WORLDLOOM_BIN;
  if (!bin) {
    throw new Error(
      "WORLDLOOM_BIN is not set. The UI tests run against the real server: build it with " +
        "`cargo build -p worldloom-cli` (from the repository root) and run " +
        "`WORLDLOOM_BIN=$CARGO_TARGET_DIR/debug/worldloom npm test` (target/debug/worldloom without CARGO_TARGET_DIR).",
    );
  }
  if (!existsSync(bin)) {
    throw new Error(`WORLDLOOM_BIN=${bin}: no such file. Build it with \`cargo build -p worldloom-cli\` from the repository root.`);
  }
  const fixtureDir = join(uiDir, "src", "mocks", "fixtures");
  const out = mkdtempSync(join(tmpdir(), "worldloom-vitest-fixtures-"));
  const write = (fixture: { id: string }): string => {
    const path = join(out, `${fixture.id}.json`);
    const trajectory = { ...toNative(fixture), id: fixture.id };
    writeFileSync(path, JSON.stringify({ format: "worldloom-trajectory", version: 1, trajectories: [trajectory] }));
    return path;
  };
  const fixturePaths: Record<string, string> = {};
  for (const name of readdirSync(fixtureDir).filter((n) => n.endsWith(".json"))) {
    const fixture = JSON.parse(readFileSync(join(fixtureDir, name), "utf8")) as { id: string };
    fixturePaths[fixture.id] = write(fixture);
  }
  project.provide("worldloomBin", resolve(bin));
  project.provide("fixturePaths", fixturePaths);
  project.provide("largeTreePath", write(largeTreeFixture(20000)));
  project.provide("repoDir", resolve(uiDir, ".."));
  return () => rmSync(out, { recursive: true, force: true });
}

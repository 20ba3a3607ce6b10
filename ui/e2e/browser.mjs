// Launches Debian's Chromium through playwright-core with a fresh profile and
// the flags that keep it from talking to anything on its own, and starts the
// `worldloom serve` the pages talk to.
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

export const CHROMIUM = process.env.WL_CHROMIUM ?? "/usr/bin/chromium";

/**
 * The places an e2e script works with: `uiDir`, `repo`, `shots` (ui/e2e/screenshots,
 * made if missing) and `bin`, the CLI ($WORLDLOOM_BIN, else $CARGO_TARGET_DIR/debug/worldloom,
 * else target/debug/worldloom).
 */
export function places() {
  const here = dirname(fileURLToPath(import.meta.url));
  const uiDir = resolve(here, "..");
  const repo = resolve(uiDir, "..");
  const shots = join(here, "screenshots");
  mkdirSync(shots, { recursive: true });
  const bin = process.env.WORLDLOOM_BIN ?? join(process.env.CARGO_TARGET_DIR ?? join(repo, "target"), "debug", "worldloom");
  return { uiDir, repo, shots, bin };
}

export const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
];

/** Returns `{ context, close }` for a persistent context on a fresh user-data dir. */
/**
 * Reads `read()` every 100 ms until `ok(value)` holds or `timeoutMs` passes, and returns the
 * last value read: for a page that updates after a request (a refetch), instead of a fixed wait.
 */
export async function settle(read, ok, timeoutMs = 15_000) {
  const deadline = Date.now() + timeoutMs;
  let value = await read();
  while (!ok(value) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100));
    value = await read();
  }
  return value;
}

export async function launch({ width = 1600, height = 900, colorScheme = "light" } = {}) {
  const profile = mkdtempSync(join(tmpdir(), "worldloom-e2e-profile-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    // The fresh profile directory is Chromium's --user-data-dir.
    args: CHROMIUM_ARGS,
    headless: true,
    viewport: { width, height },
    colorScheme,
  });
  return {
    context,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/**
 * Starts `BIN serve ARGS…` in its own process group and waits (up to 90 s) for
 * the tokened URL it prints. Returns `{ url, stop }`; `stop` sends SIGTERM to
 * the group and also runs when the process exits.
 */
export async function serve(bin, args) {
  const server = spawn(bin, ["serve", ...args], {
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
  const stop = () => {
    try {
      process.kill(-server.pid, "SIGTERM");
    } catch {
      // already gone
    }
  };
  process.on("exit", stop);
  const url = await new Promise((ok, fail) => {
    let seen = "";
    const timer = setTimeout(() => fail(new Error(`worldloom serve printed no URL:\n${seen}`)), 90_000);
    const onData = (chunk) => {
      seen += chunk.toString();
      const m = seen.match(/http:\/\/127\.0\.0\.1:\d+\/\?token=[A-Za-z0-9_-]+/);
      if (m) {
        clearTimeout(timer);
        ok(m[0]);
      }
    };
    server.stdout.on("data", onData);
    server.stderr.on("data", onData);
  });
  return { url, stop };
}

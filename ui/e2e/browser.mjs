// Launches Debian's Chromium through playwright-core with a fresh profile and
// the flags that keep it from talking to anything on its own.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

export const CHROMIUM = process.env.WL_CHROMIUM ?? "/usr/bin/chromium";

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

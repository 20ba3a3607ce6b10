// End-to-end check of the studio in a real browser (Debian Chromium driven by
// playwright-core).
//
//   npm run e2e              against `worldloom serve --port 0` on samples/ plus
//                            the dev fixtures written as native files (the binary is
//                            $WORLDLOOM_BIN, else $CARGO_TARGET_DIR/debug/worldloom)
//   WL_E2E_URL=http://127.0.0.1:PORT/?token=… npm run e2e
//                            against a server that is already running
//
// Then the laboratory checks of e2e/lab.mjs (stepping, branching, authoring,
// export, Stop on a slow endpoint, a local model); `--lab-only` runs only those.
//
// Checks: a Web, an OS and an Android trajectory open; both panes render;
// diff marks appear where real and predicted differ; ←/→, j/k, Home/End move
// between turns; hovering a node highlights its counterpart in the other pane;
// the hostile page (src/mocks/fixtures/web-hostile.json, served as a native
// trajectory file; real and predicted sides are both hostile HTML) runs no
// script and makes no request beyond the app's own origin (a trap server
// counts hits; a positive control proves the script detector works).
// The screenshot view of the Android sample with screenshots is checked by
// e2e/screenshots.mjs. Sample trajectories are preferred; the fixtures (ids `e2e-…`) stand in for a
// domain whose samples did not import. Screenshots go to e2e/screenshots/.
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, statSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { launch } from "./browser.mjs";
import { runLab } from "./lab.mjs";
import { checkScreenshots } from "./screenshots.mjs";
import { writeNativeFixtures } from "./nativeFixtures.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const uiDir = resolve(here, "..");
const repo = resolve(uiDir, "..");
const shots = join(here, "screenshots");
mkdirSync(shots, { recursive: true });
/** `--lab-only`: skip the viewing checks, run only the laboratory (e2e/lab.mjs). */
const labOnly = process.argv.includes("--lab-only");
/** The port the hostile fixtures point at (see src/mocks/fixtures/web-hostile.json). */
const TRAP_PORT = 47931;

let failures = 0;
const children = [];
function check(ok, what) {
  console.log(`${ok ? "ok  " : "FAIL"} ${what}`);
  if (!ok) failures += 1;
}

function cleanupChildren() {
  for (const c of children) {
    try {
      process.kill(-c.pid, "SIGTERM");
    } catch {
      // already gone
    }
  }
}
process.on("exit", cleanupChildren);

/** Starts a command in its own process group; resolves with the first stdout/stderr match of `pattern`. */
function startAndWait(cmd, args, pattern, options = {}) {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(cmd, args, { detached: true, stdio: ["ignore", "pipe", "pipe"], ...options });
    children.push(child);
    let seen = "";
    const timer = setTimeout(() => reject(new Error(`${cmd} printed no URL within 90 s:\n${seen}`)), 90_000);
    const onData = (chunk) => {
      seen += chunk.toString();
      const m = seen.match(pattern);
      if (m) {
        clearTimeout(timer);
        resolvePromise(m[0]);
      }
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", onData);
    child.on("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`${cmd} exited with ${code}: ${seen}`));
    });
  });
}

async function startApp() {
  if (process.env.WL_E2E_URL) return process.env.WL_E2E_URL; // a server someone else started
  const bin = process.env.WORLDLOOM_BIN ?? join(process.env.CARGO_TARGET_DIR ?? "/root/.cache/worldloom-target", "debug", "worldloom");
  if (!existsSync(bin)) {
    console.error(`worldloom binary not found at ${bin}: build it (cargo build -p worldloom-cli) or set WORLDLOOM_BIN`);
    process.exit(2);
  }
  // The samples, plus the dev fixtures as native files (the hostile page, a
  // text domain, a 20,000-node tree, stand-ins should a sample not import),
  // in a fresh workspace, serving this checkout's build.
  const fixtures = writeNativeFixtures(join(uiDir, "src", "mocks", "fixtures"));
  const workspaceDir = mkdtempSync(join(tmpdir(), "worldloom-e2e-workspace-"));
  const serve = (paths, name) =>
    startAndWait(
      bin,
      ["serve", "--port", "0", "--workspace", join(workspaceDir, `${name}.worldloom`), "--ui-dir", join(uiDir, "dist"), ...paths],
      /https?:\/\/[^\s]+token=[^\s]+/,
    );
  try {
    const url = await serve([...samplePaths(), ...fixtures], "samples");
    check(true, "worldloom serve imports every sample trajectory and the fixtures");
    return url;
  } catch (e) {
    // Report it, then run every other check on the fixtures alone.
    check(
      false,
      `worldloom serve imports every sample trajectory (${String(e.message ?? e)
        .trim()
        .split("\n")
        .slice(-2)
        .join(" ")})`,
    );
    return await serve(fixtures, "fixtures");
  }
}

/**
 * Every sample trajectory: the web JSON files (their `.predictions.jsonl`
 * sidecars are found by the importer) and each OS / Android trajectory folder.
 */
function samplePaths() {
  const root = join(repo, "samples");
  const out = [];
  for (const domain of ["web", "os", "android"]) {
    const dir = join(root, domain);
    if (!existsSync(dir)) continue;
    for (const name of readdirSync(dir).sort()) {
      const p = join(dir, name);
      if (domain === "web" ? name.endsWith(".json") : statSync(p).isDirectory()) out.push(p);
    }
  }
  return out;
}

function startTrap() {
  const hits = [];
  const server = createServer((req, res) => {
    hits.push(`${req.method} ${req.url}`);
    res.writeHead(204).end();
  });
  return new Promise((ok) => server.listen(TRAP_PORT, "127.0.0.1", () => ok({ hits, server })));
}

const trap = await startTrap();
const appUrl = await startApp();
const appOrigin = new URL(appUrl).origin;
console.log(`app at ${appOrigin} (worldloom serve)`);

const { context, close } = await launch({ width: 1600, height: 900 });
const foreignRequests = [];
const dialogs = [];
const pageErrors = [];
context.on("request", (req) => {
  const url = req.url();
  if (/^(data|about|blob):/.test(url)) return;
  if (new URL(url).origin !== appOrigin) foreignRequests.push(url);
});
// Listen for the hostile page's "I ran" messages in every document, from the start.
await context.addInitScript(() => {
  window.__wlScriptRan = [];
  window.addEventListener("message", (e) => {
    if (typeof e.data === "string" && e.data.startsWith("wl-script-ran")) window.__wlScriptRan.push(e.data);
  });
});
const page = context.pages()[0] ?? (await context.newPage());
page.on("dialog", (d) => {
  dialogs.push(d.message());
  void d.dismiss();
});
page.on("pageerror", (e) => pageErrors.push(e.message));

// Positive control: the detector sees a frame that is allowed to run scripts.
await page.goto(
  `data:text/html,${encodeURIComponent(`<iframe sandbox="allow-scripts" srcdoc="<script>parent.postMessage('wl-script-ran:control','*')</script>"></iframe>`)}`,
);
await page.waitForFunction(() => window.__wlScriptRan.length > 0, null, { timeout: 5000 }).catch(() => {});
check((await page.evaluate(() => window.__wlScriptRan)).includes("wl-script-ran:control"), "positive control: a frame with allow-scripts is detected");

await page.goto(appUrl);
const real = page.getByRole("region", { name: "Real observation" });
const predicted = page.getByRole("region", { name: "Predicted observation" });
await real.waitFor({ timeout: 20_000 });
check(!(await page.url()).includes("token="), "the token is removed from the address bar");
await page
  .getByLabel("Live updates")
  .waitFor({ timeout: 10_000 })
  .catch(() => {});
check((await page.getByLabel("Live updates").count()) === 1, "the server's event stream is connected (hello received)");

const turnText = () => page.getByLabel("Current turn").innerText();
const opened = [];

/** Opens the first trajectory of `domain` whose name matches one of `hints`, in order. */
async function openTrajectory(domain, hints = [""]) {
  for (const hint of hints) {
    // Filter the (windowed) list down first, as a user would.
    await page.getByLabel("Domain filter").selectOption(domain);
    await page.getByLabel("Search trajectories").fill(hint);
    await page.waitForTimeout(200);
    const target = page.locator("nav[aria-label=Trajectories] .traj").first();
    if ((await target.count()) === 0) continue;
    opened.push(`${domain}: ${(await target.locator(".traj-name").innerText()).trim()}`);
    await target.click();
    await page.waitForTimeout(600);
    return true;
  }
  return false;
}

async function clickTab(label) {
  const tab = real.getByRole("tab", { name: label, exact: true });
  if ((await tab.count()) === 0) return false;
  await tab.first().click();
  await page.waitForTimeout(400);
  return true;
}

async function diffMarks(region) {
  return region.locator('[data-diff="added"], [data-diff="changed"], [data-diff="removed"]').count();
}

async function keyboardNavigation(domain) {
  await page.keyboard.press("Home");
  await page.waitForTimeout(250);
  const atStart = await turnText();
  await page.keyboard.press("ArrowRight");
  await page.waitForTimeout(250);
  const one = await turnText();
  await page.keyboard.press("j");
  await page.waitForTimeout(250);
  const two = await turnText();
  await page.keyboard.press("k");
  await page.waitForTimeout(250);
  const back = await turnText();
  await page.keyboard.press("End");
  await page.waitForTimeout(250);
  const end = await turnText();
  const total = end.split("/")[1]?.trim();
  check(
    atStart.startsWith("initial") && one.startsWith("turn 1 ") && two.startsWith("turn 2 ") && back.startsWith("turn 1 ") && end === `turn ${total} / ${total}`,
    `${domain}: keyboard turn navigation (${[atStart, one, two, back, end].join(" → ")})`,
  );
}

/** Nodes aligned across the panes (tree rows or wireframe boxes), in the real pane. */
async function alignedMarks(region) {
  return region
    .locator('[role=treeitem][data-diff="unchanged"], [role=treeitem][data-diff="changed"], rect[data-diff="unchanged"], rect[data-diff="changed"]')
    .count();
}

/** Walks turns from the first until the panes show diff marks next to aligned nodes. */
async function findDiffTurn() {
  await page.keyboard.press("Home");
  for (let i = 0; i < 12; i++) {
    await page.keyboard.press("ArrowRight");
    await page.waitForTimeout(600);
    if ((await diffMarks(predicted)) + (await diffMarks(real)) > 0 && (await alignedMarks(real)) > 0) return await turnText();
  }
  return null;
}

/** The real pane's "where the action landed" caption, when it names a node. */
async function landedCaption() {
  const note = real.getByLabel("Real action target");
  if ((await note.count()) !== 1) return null;
  const text = (await note.innerText()).trim();
  return text.includes("→") ? text : null;
}

/** Walks turns from the first until the real pane says where the action landed. */
async function findLandedTurn() {
  await page.keyboard.press("Home");
  for (let i = 0; i < 12; i++) {
    await page.keyboard.press("ArrowRight");
    await page.waitForTimeout(600);
    const caption = await landedCaption();
    if (caption) return `${await turnText()}: ${caption}`;
  }
  return null;
}

/** Where the action landed, in the tree and wireframe of a screen domain (`Screen + tree`, `Device + tree`). */
async function landingOnScreen(domain, tab) {
  await clickTab(tab);
  const at = await findLandedTurn();
  check(at !== null, `${domain}: the real pane says where the action landed (${at})`);
  if (at === null) return;
  await page.waitForTimeout(400);
  check((await real.locator("rect.wtarget").count()) === 1, `${domain}: the landed element is outlined on the wireframe`);
  check((await real.locator(".wpoint").count()) === 1, `${domain}: the action's point is drawn`);
  check((await real.locator("[role=treeitem][data-landed]").count()) === 1, `${domain}: the landed row is revealed and marked in the tree`);
  await page.screenshot({ path: join(shots, `landing-${domain}.png`) });
}

if (!labOnly) {
  // ---- Web ----
  if (await openTrajectory("web", ["larkmail", "quillpost", "tidewell", "harbor"])) {
    await keyboardNavigation("web");
    await clickTab("AX tree");
    const at = await findDiffTurn();
    check(at !== null, `web: accessibility-tree diff marks appear (${at})`);
    check((await real.getByRole("treeitem").count()) > 5 && (await predicted.getByRole("treeitem").count()) > 5, "web: both panes show tree rows");
    // Hover an aligned row in the real pane: its counterpart lights up in the predicted pane.
    const aligned = real.locator('[role=treeitem][data-diff="unchanged"], [role=treeitem][data-diff="changed"]');
    if ((await aligned.count()) > 2) await aligned.nth(2).hover();
    await page.waitForTimeout(200);
    check((await predicted.locator(".trow.is-hover").count()) === 1, "web: hovering a real node highlights its predicted counterpart");
    await page.screenshot({ path: join(shots, "web-axtree.png") });
    if (await clickTab("Render")) {
      const frames = page.locator("iframe.render-frame");
      check((await frames.count()) >= 1, "web: HTML render frame present");
      check((await frames.first().getAttribute("sandbox")) === "", 'web: render frame has sandbox=""');
      const srcdocs = await frames.evaluateAll((fs) => fs.map((f) => f.getAttribute("srcdoc") ?? ""));
      check(
        srcdocs.every((s) => s.includes("Content-Security-Policy") && s.includes("default-src 'none'")),
        "web: every srcdoc carries the no-load policy",
      );
      await page.screenshot({ path: join(shots, "web-render.png") });
    } else {
      check(false, "web: a Render tab exists");
    }
    await clickTab("AX source");
    await page.screenshot({ path: join(shots, "web-source.png") });
    // Where the action landed: the bid's row in the AX tree, its element in the render.
    await clickTab("AX tree");
    const landed = await findLandedTurn();
    check(landed !== null, `web: the real pane says where the action landed (${landed})`);
    if (landed !== null) {
      await page.waitForTimeout(400);
      check((await real.locator("[role=treeitem][data-landed]").count()) === 1, "web: the bid's row is revealed and marked in the AX tree");
      await page.screenshot({ path: join(shots, "landing-web-axtree.png") });
      if (await clickTab("Render")) {
        const srcdoc = (await page.locator("iframe.render-frame").first().getAttribute("srcdoc")) ?? "";
        check(srcdoc.includes('data-wl-target=""'), "web: the bid's element is marked in the real render (data-wl-target)");
        await page.screenshot({ path: join(shots, "landing-web-render.png") });
      }
    }
  } else check(false, "a web trajectory is listed");

  // ---- OS ----
  if (await openTrajectory("os", ["thunar", "pluma", "power", "calculator"])) {
    await keyboardNavigation("os");
    await clickTab("Screen");
    const at = await findDiffTurn();
    check(at !== null, `os: wireframe diff marks appear (${at})`);
    check((await real.locator("rect.wbox").count()) > 3 && (await predicted.locator("rect.wbox").count()) > 3, "os: both panes draw screen boxes");
    await page.screenshot({ path: join(shots, "os-screen.png") });
    await clickTab("Tree");
    await page.screenshot({ path: join(shots, "os-tree.png") });
    await landingOnScreen("os", "Screen + tree");
  } else check(false, "an os trajectory is listed");

  // ---- Android ----
  if (await openTrajectory("android", ["settings_airplane", "harbor-messenger", "pinecone", "settings"])) {
    await keyboardNavigation("android");
    await clickTab("Device");
    const at = await findDiffTurn();
    check(at !== null, `android: device diff marks appear (${at})`);
    check(
      (await real.locator("rect.device-bezel").count()) === 1 && (await predicted.locator("rect.device-bezel").count()) === 1,
      "android: both panes draw the device frame",
    );
    check((await real.locator("rect.wbox").count()) > 3, "android: node bounds drawn");
    await page.screenshot({ path: join(shots, "android-device.png") });
    await landingOnScreen("android", "Device + tree");
  } else check(false, "an android trajectory is listed");

  // ---- the screenshot view (e2e/screenshots.mjs) ----
  await checkScreenshots({ page, check, shots, appUrl, openTrajectory, real });

  // ---- text domain (the fixtures include one; samples may not) ----
  if (await openTrajectory("terminal", ["build"])) {
    await page.keyboard.press("End");
    await page.waitForTimeout(400);
    check(
      (await real.locator(".line-removed").count()) > 0 && (await predicted.locator(".line-added").count()) > 0,
      "terminal: side-by-side text diff marks lines",
    );
    await page.screenshot({ path: join(shots, "terminal-text.png") });
  }

  // ---- hostile page ----
  const hitsBefore = trap.hits.length;
  const foreignBefore = foreignRequests.length;
  if (await openTrajectory("web", ["hostile"])) {
    await page.keyboard.press("End");
    await page.waitForTimeout(400);
    check(await clickTab("Render"), "hostile: Render tab");
    await page.waitForTimeout(2500);
    const ran = await page.evaluate(() => window.__wlScriptRan);
    check(ran.length === 0, `hostile: no script ran (${ran.join(", ") || "none"})`);
    check(dialogs.length === 0, `hostile: no dialog opened (${dialogs.join(", ") || "none"})`);
    check(trap.hits.length === hitsBefore, `hostile: the trap server got no request (${trap.hits.slice(hitsBefore).join(", ") || "none"})`);
    check(
      foreignRequests.length === foreignBefore,
      `hostile: no request beyond the app's origin (${foreignRequests.slice(foreignBefore).join(", ") || "none"})`,
    );
    // Clicking the links inside the frame must not navigate anywhere either.
    const frame = page.frameLocator("iframe.render-frame").first();
    await frame
      .locator("#extlink")
      .click({ timeout: 3000 })
      .catch(() => {});
    await frame
      .locator("#jslink")
      .click({ timeout: 3000 })
      .catch(() => {});
    await page.waitForTimeout(800);
    check(
      trap.hits.length === hitsBefore && (await page.evaluate(() => window.__wlScriptRan.length)) === 0,
      "hostile: clicking its links runs and loads nothing",
    );
    await page.screenshot({ path: join(shots, "hostile-render.png") });
  } else check(false, "the hostile page is listed");
  check(foreignRequests.length === 0, `the whole session made no request beyond the app's origin (${foreignRequests.length})`);
  check(trap.hits.length === 0, `the trap server was never reached (${trap.hits.length})`);

  // ---- large tree: 20,000 nodes ----
  if (await openTrajectory("web", ["large tree", "large-tree"])) {
    await clickTab("AX tree");
    await page.keyboard.press("End");
    // A 20,000-node turn is a large reply (about 17 MB of JSON from a debug build): wait for it.
    await real.getByRole("treeitem").first().waitFor({ timeout: 90_000 });
    await predicted.getByRole("treeitem").first().waitFor({ timeout: 90_000 });
    const rows = await real.getByRole("treeitem").count();
    check(rows > 10 && rows < 100, `large tree: only a window of rows is in the DOM (${rows})`);
    await real.locator("[role=tree]").evaluate((el) => (el.scrollTop = 200_000));
    await page.waitForTimeout(300);
    const label = await real.getByRole("treeitem").first().innerText();
    check(/Row \d{4,}|r\d{4,}/.test(label), `large tree: scrolled rows render (${label.replace(/\s+/g, " ").slice(0, 40)})`);
    await page.screenshot({ path: join(shots, "large-tree.png") });
  } else check(false, "the large tree is listed");
}

// ---- the laboratory: stepping, branching, authoring, export (e2e/lab.mjs) ----
const labStarted = Date.now();
try {
  await runLab({ page, check, shots, appUrl, repo, openTrajectory });
} catch (e) {
  check(false, `lab: stopped by an error: ${String(e?.message ?? e).split("\n")[0]}`);
  await page.screenshot({ path: join(shots, "lab-error.png") }).catch(() => {});
  // Close whatever dialog was left open, so the remaining checks can run.
  for (let i = 0; i < 3; i++) await page.keyboard.press("Escape").catch(() => {});
}
console.log(`lab checks took ${((Date.now() - labStarted) / 1000).toFixed(1)} s`);

// ---- dark theme ----
await openTrajectory("android", ["settings_airplane", "settings"]);
await page.getByRole("button", { name: "Switch to dark theme" }).click();
await page.waitForTimeout(300);
await page.screenshot({ path: join(shots, "android-dark.png") });
check((await page.evaluate(() => document.documentElement.dataset.theme)) === "dark", "dark theme applies");

check(pageErrors.length === 0, `no uncaught page errors (${pageErrors.join(" | ") || "none"})`);
console.log(`opened: ${opened.join("; ")}`);

await close();
trap.server.close();
cleanupChildren();
console.log(failures === 0 ? "e2e: all checks passed" : `e2e: ${failures} check(s) failed`);
process.exit(failures === 0 ? 0 : 1);

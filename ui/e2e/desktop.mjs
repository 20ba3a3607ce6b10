// End-to-end check of the desktop app: the built `worldloom-studio` under Xvfb,
// driven through tauri-driver + WebKitWebDriver with plain W3C WebDriver calls.
//
//   node ui/e2e/desktop.mjs      (scripts/test.sh runs it after building the app)
//
// Needs: the app binary ($WORLDLOOM_STUDIO_BIN, else
// $CARGO_TARGET_DIR/debug/worldloom-studio), `tauri-driver` 2.1.0 ($TAURI_DRIVER,
// PATH or ~/.cargo/bin), /usr/bin/WebKitWebDriver (apt webkit2gtk-driver) and
// Xvfb (apt xvfb) unless $DISPLAY is set and WL_DESKTOP_XVFB=0.
//
// The app starts as a user would start it:
//   worldloom-studio --workspace TMP/desktop.worldloom <android sample> <web sample> <hostile page>
// with HOME / XDG folders in a temporary directory. Checks: the panes appear;
// region "Real observation" shows text from the sample's uiautomator dump of
// that turn and region "Predicted observation" shows the prediction; the API
// answers through the generic IPC command (and an unknown command is refused
// with the API's error shape); the event channel says hello; the workspace is
// remembered in the recent list; the hostile page (src/mocks/fixtures/
// web-hostile.json) renders in its frame yet runs no script, opens no dialog
// and reaches no server (a trap server on its port counts hits); the app's
// own page cannot fetch or load an image from the network, under the shell's
// Content-Security-Policy; the page loads nothing beyond the app's own
// protocol and the IPC; a run (the official script's predictions.jsonl)
// opens through the Import dialog (the native file chooser, driven with
// xdotool) and the Runs view shows its dashboard. Screenshots:
// e2e/screenshots/desktop-*.png (desktop-$WL_DESKTOP_LABEL-*.png when that is set:
// scripts/test-deb.sh runs the installed app as "installed"). Exit status: the
// number of failed checks.
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { createServer as createHttpServer } from "node:http";
import { homedir, tmpdir } from "node:os";
import { delimiter, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { toNative } from "./nativeFixtures.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const uiDir = resolve(here, "..");
const repo = resolve(uiDir, "..");
const shots = join(here, "screenshots");
mkdirSync(shots, { recursive: true });
/** The port the hostile fixture points at (src/mocks/fixtures/web-hostile.json); rewritten to a free one here. */
const FIXTURE_TRAP_PORT = 47931;
const ANDROID_SAMPLE = join(repo, "samples", "android", "harbor-messenger_send_trajectory");
const WEB_SAMPLE = join(repo, "samples", "web", "agentlab_larkmail-reply_6steps.json");
const started = Date.now();

let failures = 0;
function check(ok, what) {
  console.log(`${ok ? "ok  " : "FAIL"} ${what}`);
  if (!ok) failures += 1;
}
function fatal(message) {
  console.error(`desktop e2e: ${message}`);
  cleanup();
  process.exit(100);
}

// ---- processes ----
const children = [];
let scratch = null;
function cleanup() {
  for (const c of children.reverse()) {
    try {
      process.kill(-c.pid, "SIGTERM");
    } catch {
      // already gone
    }
  }
  children.length = 0;
  if (scratch) rmSync(scratch, { recursive: true, force: true });
  scratch = null;
}
process.on("exit", cleanup);
for (const sig of ["SIGINT", "SIGTERM"]) process.on(sig, () => process.exit(130));

function start(cmd, args, env, name) {
  const child = spawn(cmd, args, { detached: true, stdio: ["ignore", "pipe", "pipe"], env });
  let log = "";
  const keep = (chunk) => {
    log = (log + chunk.toString()).slice(-20000);
  };
  child.stdout.on("data", keep);
  child.stderr.on("data", keep);
  child.on("error", (e) => fatal(`${name}: ${e.message}`));
  children.push(child);
  return { child, log: () => log };
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function waitFor(what, fn, timeoutMs, intervalMs = 250) {
  const end = Date.now() + timeoutMs;
  let last;
  while (Date.now() < end) {
    try {
      last = await fn();
      if (last) return last;
    } catch (e) {
      last = e;
    }
    await sleep(intervalMs);
  }
  throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}${last instanceof Error ? `: ${last.message}` : ""}`);
}

function freePort() {
  return new Promise((ok, fail) => {
    const srv = createServer();
    srv.once("error", fail);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => ok(port));
    });
  });
}

function which(name, extra = []) {
  for (const dir of [...(process.env.PATH ?? "").split(delimiter), ...extra]) {
    const p = join(dir, name);
    if (dir && existsSync(p)) return p;
  }
  return null;
}

// ---- W3C WebDriver over fetch ----
let base = "";
let session = "";
/** The W3C WebDriver element reference key. */
const ELEMENT = "element-6066-11e4-a52e-4f735466cecf";

async function wd(method, path, body) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await res.json().catch(() => ({}));
  if (!res.ok) {
    const v = json.value ?? {};
    const err = new Error(`${method} ${path}: ${v.error ?? res.status}: ${v.message ?? ""}`);
    err.code = v.error;
    throw err;
  }
  return json.value;
}
const s = (path) => `/session/${session}${path}`;
const exec = (script, args = []) => wd("POST", s("/execute/sync"), { script, args });
const execAsync = (script, args = []) => wd("POST", s("/execute/async"), { script, args });
const find = async (css, from) => {
  const found = await wd("POST", from ? s(`/element/${from}/elements`) : s("/elements"), { using: "css selector", value: css });
  return found.map((e) => e[ELEMENT]);
};
const textOf = (el) => wd("GET", s(`/element/${el}/text`));
async function screenshot(name) {
  const png = Buffer.from(await wd("GET", s("/screenshot")), "base64");
  const label = process.env.WL_DESKTOP_LABEL ? `${process.env.WL_DESKTOP_LABEL}-` : "";
  const path = join(shots, `desktop-${label}${name}.png`);
  writeFileSync(path, png);
  console.log(`     screenshot: ${path} (${png.length} bytes)`);
  return png;
}
/** Calls the shell's generic `api` command from the page; resolves with {ok} or {err}. */
function callApi(command, request) {
  return execAsync(
    `const [command, request, done] = arguments;
     window.__TAURI_INTERNALS__.invoke("api", { command, request })
       .then((ok) => done({ ok }), (err) => done({ err }));`,
    [command, request],
  );
}

/** `text` and `content-desc` values of a uiautomator dump. */
function dumpTexts(xmlPath) {
  const xml = readFileSync(xmlPath, "utf8");
  const out = new Set();
  for (const m of xml.matchAll(/\s(?:text|content-desc)="([^"]+)"/g)) {
    const t = m[1]
      .replace(/&amp;/g, "&")
      .replace(/&quot;/g, '"')
      .replace(/&apos;/g, "'")
      .replace(/&lt;/g, "<")
      .replace(/&gt;/g, ">")
      .trim();
    if (t.length >= 4) out.add(t);
  }
  return [...out];
}

// ---- tools ----
const bin = resolve(
  process.env.WORLDLOOM_STUDIO_BIN ?? join(process.env.CARGO_TARGET_DIR ?? join(homedir(), ".cache", "worldloom-target"), "debug", "worldloom-studio"),
);
if (!existsSync(bin)) fatal(`app not found at ${bin}: build it (cargo build -p worldloom-studio) or set WORLDLOOM_STUDIO_BIN`);
const tauriDriver = process.env.TAURI_DRIVER ?? which("tauri-driver", [join(homedir(), ".cargo", "bin")]);
if (!tauriDriver) fatal("tauri-driver not found: cargo install tauri-driver --version 2.1.0 --locked (scripts/setup.sh does)");
const nativeDriver = which("WebKitWebDriver", ["/usr/bin"]);
if (!nativeDriver) fatal("WebKitWebDriver not found: apt-get install webkit2gtk-driver (scripts/setup.sh does)");

// ---- scratch folders and inputs ----
scratch = mkdtempSync(join(tmpdir(), "worldloom-desktop-e2e-"));
const workspace = join(scratch, "desktop.worldloom");
// The fixture's URLs point at a trap port; use a free one so a browser e2e run
// at the same time (which listens on the fixture's port) does not collide.
const TRAP_PORT = await freePort();
const hostileFixture = JSON.parse(
  readFileSync(join(uiDir, "src", "mocks", "fixtures", "web-hostile.json"), "utf8").replaceAll(`127.0.0.1:${FIXTURE_TRAP_PORT}`, `127.0.0.1:${TRAP_PORT}`),
);
const hostilePath = join(scratch, "e2e-web-hostile.json");
writeFileSync(hostilePath, JSON.stringify({ format: "worldloom-trajectory", version: 1, trajectories: [toNative(hostileFixture)] }));
const env = {
  ...process.env,
  HOME: join(scratch, "home"),
  XDG_CONFIG_HOME: join(scratch, "config"),
  XDG_DATA_HOME: join(scratch, "data"),
  XDG_CACHE_HOME: join(scratch, "cache"),
  NO_AT_BRIDGE: "1",
};
for (const d of [env.HOME, env.XDG_CONFIG_HOME, env.XDG_DATA_HOME, env.XDG_CACHE_HOME]) mkdirSync(d, { recursive: true });

// Every request the hostile page could make lands here.
const trapHits = [];
const trap = createHttpServer((req, res) => {
  trapHits.push(`${req.method} ${req.url}`);
  res.writeHead(204).end();
});
await new Promise((ok, fail) => {
  trap.once("error", (e) => fail(new Error(`trap server on 127.0.0.1:${TRAP_PORT}: ${e.message}`)));
  trap.listen(TRAP_PORT, "127.0.0.1", ok);
}).catch((e) => fatal(e.message));

// ---- display ----
if (!process.env.DISPLAY || process.env.WL_DESKTOP_XVFB !== "0") {
  let n = 90;
  while (existsSync(`/tmp/.X11-unix/X${n}`) || existsSync(`/tmp/.X${n}-lock`)) n += 1;
  start("Xvfb", [`:${n}`, "-screen", "0", "1440x900x24", "-nolisten", "tcp"], env, "Xvfb");
  await waitFor("Xvfb", () => existsSync(`/tmp/.X11-unix/X${n}`), 10_000).catch((e) => fatal(e.message));
  env.DISPLAY = `:${n}`;
}
delete env.WAYLAND_DISPLAY;

// ---- tauri-driver ----
const port = await freePort();
const nativePort = await freePort();
const driver = start(tauriDriver, ["--port", String(port), "--native-port", String(nativePort), "--native-driver", nativeDriver], env, "tauri-driver");
base = `http://127.0.0.1:${port}`;
await waitFor("tauri-driver", async () => (await fetch(`${base}/status`)).ok, 20_000).catch((e) => fatal(`${e.message}\n${driver.log()}`));

const args = ["--workspace", workspace, ANDROID_SAMPLE, WEB_SAMPLE, hostilePath];
console.log(`app: ${bin} ${args.join(" ")}`);
try {
  const created = await wd("POST", "/session", {
    capabilities: { alwaysMatch: { "tauri:options": { application: bin, args } } },
  });
  session = created.sessionId;
} catch (e) {
  fatal(`cannot start a session: ${e.message}\n${driver.log()}`);
}
check(true, "the app starts under tauri-driver");

const realSel = '[aria-label="Real observation"]';
const predSel = '[aria-label="Predicted observation"]';

try {
  // ---- the panes ----
  await waitFor("the panes", async () => (await find(realSel)).length === 1 && (await find(predSel)).length === 1, 60_000);
  check(true, 'regions "Real observation" and "Predicted observation" are shown');

  // ---- the generic IPC command ----
  const list = await callApi("list_trajectories", {});
  const trajectories = list.ok?.trajectories ?? [];
  check(
    trajectories.length === 3,
    `api(list_trajectories) through IPC lists the 3 imported trajectories (${trajectories.map((t) => `${t.domain}:${t.name}`).join(", ")})`,
  );
  const unknown = await callApi("no_such_command", {});
  check(
    unknown.err?.error?.code === "unknown_command",
    `an unknown command is refused with the API's error shape (${JSON.stringify(unknown.err ?? unknown.ok).slice(0, 120)})`,
  );
  const bad = await callApi("get_turn", { nonsense: true });
  check(bad.err?.error?.code === "bad_request", `a malformed request is refused as bad_request (${bad.err?.error?.message ?? "no error"})`);

  // ---- events ----
  const live = await waitFor("the event channel", async () => (await find('[aria-label="Live updates"]')).length === 1, 10_000).catch(() => false);
  check(live, "subscribe_events: the page received the channel's hello (Live updates shown)");

  // ---- recent workspaces ----
  const recentFile = join(env.XDG_CONFIG_HOME, "org.worldloom.studio", "recent-workspaces.json");
  const recent = existsSync(recentFile) ? JSON.parse(readFileSync(recentFile, "utf8")) : null;
  check(recent?.workspaces?.[0] === workspace, `the workspace is first in ${recentFile}`);

  // ---- Android sample: real content in the real pane ----
  const android = trajectories.find((t) => t.domain === "android");
  if (android) {
    // The hash keeps the place: `t=<trajectory>&turn=<index>` (index 2 is the third turn).
    await exec(`location.hash = arguments[0]; location.reload();`, [`t=${encodeURIComponent(android.id)}&turn=2`]);
    await sleep(500);
    const label = await waitFor(
      "the turn label",
      async () => {
        const [el] = await find('[aria-label="Current turn"]');
        const t = el ? await textOf(el) : "";
        return /^turn \d+/.test(t) ? t : null;
      },
      60_000,
    ).catch(() => "");
    const turn = Number(/^turn (\d+)/.exec(label)?.[1] ?? NaN);
    check(turn === 3, `the place in the URL hash opens the Android trajectory at turn 3 ("${label}")`);
    // The real observation after the third action is the fourth dump, step_03.xml.
    const dump = `step_${String(Number.isNaN(turn) ? 3 : turn).padStart(2, "0")}.xml`;
    const expected = dumpTexts(join(ANDROID_SAMPLE, dump));
    let shown = [];
    let realText = "";
    await waitFor(
      "the Android turn's texts in the real pane",
      async () => {
        const [real] = await find(realSel);
        realText = real ? await textOf(real) : "";
        shown = expected.filter((t) => realText.includes(t));
        return shown.length >= 3;
      },
      60_000,
    ).catch(() => {});
    check(shown.length >= 3, `Real observation shows texts of ${dump} (${shown.length}/${expected.length}: ${shown.slice(0, 5).join(" | ")})`);
    const [pred] = await find(predSel);
    const predText = pred ? await textOf(pred) : "";
    check(
      predText.trim().length > 40 && expected.some((t) => predText.includes(t)),
      `Predicted observation shows the prediction (${predText.length} characters)`,
    );
    console.log(`     real pane (first 300 characters): ${JSON.stringify(realText.slice(0, 300))}`);
    await screenshot("android");

    // Native menu shortcuts, pressed on the X display: Go › Next / Previous
    // turn (Alt+Right / Alt+Left) and Edit › Undo (Ctrl+Z) reach the page
    // through the shell's menu event.
    const turnLabel = async () => {
      const [el] = await find('[aria-label="Current turn"]');
      return el ? await textOf(el) : "";
    };
    const xdotool = which("xdotool", ["/usr/bin"]);
    if (xdotool) {
      const press = (keys) =>
        new Promise((ok) => {
          const p = spawn(xdotool, ["mousemove", "700", "450", "key", "--clearmodifiers", keys], { env, stdio: "ignore" });
          p.on("exit", ok);
          p.on("error", ok);
        });
      await press("alt+Right");
      const next = await waitFor("turn 4", async () => ((await turnLabel()).startsWith("turn 4") ? turnLabel() : null), 5000).catch(() => turnLabel());
      await press("alt+Left");
      const back = await waitFor("turn 3", async () => ((await turnLabel()).startsWith("turn 3") ? turnLabel() : null), 5000).catch(() => turnLabel());
      check(
        next.startsWith("turn 4") && back.startsWith("turn 3"),
        `menu shortcuts Alt+Right / Alt+Left move between turns ("${label}" → "${next}" → "${back}")`,
      );
      // Undo then redo (the newest change is the last import: redo brings it back).
      const noticeAfter = async (keys, pattern) => {
        await press(keys);
        return waitFor(
          `the notice after ${keys}`,
          async () => {
            const m = (await exec("return document.body.innerText;")).match(pattern);
            return m ? m[0] : null;
          },
          5000,
        ).catch(() => "");
      };
      const undone = await noticeAfter("ctrl+z", /(Nothing to undo|Undid)[^\n]*/);
      const redone = await noticeAfter("ctrl+shift+z", /(Nothing to redo|Redid)[^\n]*/);
      check(
        undone.startsWith("Undid") && redone.startsWith("Redid"),
        `menu shortcuts Ctrl+Z / Ctrl+Shift+Z run the page's undo and redo ("${undone}", "${redone}")`,
      );
    } else check(false, "xdotool is installed (apt xdotool) to press the menu shortcuts");
  } else check(false, "the Android sample is listed");

  // ---- Web sample ----
  const web = trajectories.find((t) => t.domain === "web" && !t.name.includes("hostile") && !t.id.includes("hostile"));
  if (web) {
    await exec(`location.hash = arguments[0]; location.reload();`, [`t=${encodeURIComponent(web.id)}&turn=1`]);
    await sleep(500);
    let realText = "";
    await waitFor(
      "the web turn",
      async () => {
        const [real] = await find(realSel);
        realText = real ? await textOf(real) : "";
        return realText.length > 100;
      },
      60_000,
    ).catch(() => {});
    check(realText.length > 100, `web sample: the real pane has content (${realText.length} characters)`);
    await screenshot("web");
  }

  // ---- hostile page ----
  const hostile = trajectories.find((t) => `${t.id} ${t.name}`.includes("hostile"));
  if (hostile) {
    // Listen for the page's "I ran" messages before it renders: load the app
    // on another trajectory, install the listener, then select this one.
    await exec(`window.__wlScriptRan = []; window.addEventListener("message", (e) => { window.__wlScriptRan.push(String(e.data)); }, true);`);
    const clicked = await exec(
      `const id = arguments[0], name = arguments[1];
       const nav = document.querySelector('nav[aria-label="Trajectories"]') ?? document;
       const items = [...nav.querySelectorAll('button, a, [role="option"], li, .traj')];
       const hit = items.find((el) => (el.textContent ?? "").includes(name)) ?? items.find((el) => (el.textContent ?? "").toLowerCase().includes("hostile"));
       if (!hit) return false;
       hit.click();
       return true;`,
      [hostile.id, hostile.name],
    );
    check(clicked, "hostile: the trajectory is listed and can be selected");
    await sleep(800);
    await exec(`window.dispatchEvent(new KeyboardEvent("keydown", { key: "End", bubbles: true }));`);
    await sleep(800);
    // The Render tab, if it is not already shown.
    await exec(
      `const region = document.querySelector(arguments[0]);
       const tab = region && [...region.querySelectorAll('[role="tab"]')].find((t) => t.textContent.trim() === "Render");
       if (tab) tab.click();`,
      [realSel],
    );
    await sleep(2500);
    const frames = await find(`${realSel} iframe`);
    check(frames.length >= 1, `hostile: the real pane renders the page in a frame (${frames.length})`);
    if (frames.length) {
      const sandbox = await exec(`return document.querySelector(arguments[0]).getAttribute("sandbox");`, [`${realSel} iframe`]);
      check(sandbox === "", `hostile: the frame is sandboxed without permissions (sandbox="${sandbox}")`);
      // Read the frame's own document through WebDriver: it rendered under the app's CSP (frames: srcdoc only).
      await wd("POST", s("/frame"), { id: { [ELEMENT]: frames[0] } });
      let heading = "";
      try {
        const [h1] = await find("h1");
        heading = h1 ? await textOf(h1) : "";
      } finally {
        await wd("POST", s("/frame/parent"), {});
      }
      check(heading.includes("Hostile page"), `hostile: the frame's document is rendered (h1 "${heading}")`);
    }
    const ran = await exec(`return window.__wlScriptRan;`);
    check(Array.isArray(ran) && ran.length === 0, `hostile: no script ran (${(ran ?? []).join(", ") || "none"})`);
    let alertText = null;
    try {
      alertText = await wd("GET", s("/alert/text"));
    } catch {
      // "no such alert": good
    }
    check(alertText === null, `hostile: no dialog opened (${alertText ?? "none"})`);
    await screenshot("hostile");
  } else check(false, "the hostile page is listed");

  // The app's own page cannot reach the network either: its policy (the
  // shell's CSP, src-tauri/tauri.conf.json) blocks a fetch and an image.
  const probe = await execAsync(
    `const [base, done] = arguments;
     const policies = new Set();
     document.addEventListener("securitypolicyviolation", (e) => policies.add(e.originalPolicy));
     const img = new Promise((ok) => { const i = new Image(); i.onload = () => ok("loaded"); i.onerror = () => ok("blocked"); i.src = base + "/probe.png"; });
     const fetched = fetch(base + "/probe-fetch").then(() => "loaded", () => "blocked");
     Promise.all([fetched, img]).then(([f, i]) => setTimeout(() => done({ fetch: f, img: i, policies: [...policies] }), 300));`,
    [`http://127.0.0.1:${TRAP_PORT}`],
  );
  check(
    probe.fetch === "blocked" && probe.img === "blocked",
    `the app page's own fetch and image to 127.0.0.1 are blocked (fetch ${probe.fetch}, image ${probe.img})`,
  );
  check(
    probe.policies.some((p) => p.includes("frame-src 'none'") && p.includes("connect-src ipc: http://ipc.localhost")),
    `the shell's Content-Security-Policy is in force (violations reported by: ${probe.policies.map((p) => p.slice(0, 60)).join(" | ") || "none"})`,
  );

  await sleep(1000);
  check(trapHits.length === 0, `no request reached the trap server on 127.0.0.1:${TRAP_PORT} (${trapHits.join(", ") || "none"})`);
  const urls = await exec(
    `return [location.href, ...performance.getEntriesByType("navigation").map((e) => e.name), ...performance.getEntriesByType("resource").map((e) => e.name)];`,
  );
  const foreign = urls.filter((u) => !/^(tauri:|ipc:|data:|about:|blob:|http:\/\/ipc\.localhost\/|http:\/\/tauri\.localhost\/)/.test(u));
  check(foreign.length === 0, `the page loaded nothing beyond the app protocol and the IPC (${urls.length} loads; foreign: ${foreign.join(", ") || "none"})`);

  await openRunThroughTheImportDialog();
} catch (e) {
  check(false, `unexpected error: ${e.message}`);
  await screenshot("error").catch(() => {});
} finally {
  await wd("DELETE", s("")).catch(() => {});
  trap.close();
}

/**
 * A run opens through the Import dialog and shows its dashboard: the
 * official script's `predictions.jsonl` (the AgentWorldBench sample with a
 * `gen` per row) is picked in the native file chooser (GTK, driven with
 * xdotool: a typed path opens its location field, Enter opens the file),
 * imported as a run, and the Runs view draws its dashboard.
 */
async function openRunThroughTheImportDialog() {
  const xdotool = which("xdotool", ["/usr/bin"]);
  if (!xdotool) {
    check(false, "xdotool is installed (apt xdotool) to drive the Import dialog");
    return;
  }
  const x = (args) =>
    new Promise((ok) => {
      const p = spawn(xdotool, args, { env, stdio: ["ignore", "pipe", "ignore"] });
      let out = "";
      p.stdout.on("data", (c) => (out += c.toString()));
      p.on("exit", (code) => ok({ code, out: out.trim() }));
      p.on("error", () => ok({ code: -1, out: "" }));
    });
  const dataset = join(repo, "samples", "agentworldbench", "agentworldbench_sample.jsonl");
  const runDir = join(scratch, "model-x");
  mkdirSync(runDir, { recursive: true });
  const runFile = join(runDir, "predictions.jsonl");
  const rows = readFileSync(dataset, "utf8")
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((line) => {
      const row = JSON.parse(line);
      const real = String(row.response[row.turn_idx - 1] ?? "")
        .replace(/^\*\*Environment Observation:\*\*\s*/, "")
        .trim();
      return JSON.stringify({ ...row, gen: `<predicted_observation>\n${real}\n</predicted_observation>` });
    });
  writeFileSync(runFile, `${rows.join("\n")}\n`);

  // The page's Import… opens its dialog; "Choose files…" the native one.
  const clickButton = (text) =>
    exec(
      `const b = [...document.querySelectorAll("button")].find((el) => (el.textContent ?? "").trim() === arguments[0]);
       if (b) b.click();
       return !!b;`,
      [text],
    );
  check(await clickButton("Import…"), "the top bar's Import… button is there");
  await waitFor("the Import dialog", () => clickButton("Choose files…"), 10_000).catch(() => false);
  const chooser = await waitFor(
    "the native file chooser",
    async () => {
      const r = await x(["search", "--name", "Import trajectory files"]);
      return r.code === 0 && r.out !== "" ? r.out.split("\n")[0] : null;
    },
    20_000,
  ).catch(() => null);
  check(chooser !== null, `the native "Import trajectory files" dialog opens (window ${chooser ?? "none"})`);
  if (chooser === null) return;
  // Keys go through XTEST to the focused window (GTK ignores events sent
  // to a window directly); Ctrl+L opens the chooser's location field.
  // The pauses are generous: on a loaded machine GTK opens the location
  // field late, and keys typed before it land in the file list instead.
  await x(["windowfocus", "--sync", chooser]);
  await sleep(1500);
  await x(["key", "--clearmodifiers", "ctrl+l"]);
  await sleep(1500);
  await x(["type", "--delay", "25", runFile]);
  await sleep(1500);
  await x(["key", "Return"]);
  const runs = await waitFor(
    "the imported run",
    async () => {
      const r = await callApi("list_runs", {});
      return (r.ok?.runs ?? []).length > 0 ? r.ok.runs : null;
    },
    30_000,
  ).catch(() => []);
  const run = runs.find((r) => r.name === "model-x/predictions.jsonl");
  check(
    run !== undefined && run.row_count === rows.length,
    `the picked predictions.jsonl is imported as a run (${runs.map((r) => `${r.name}: ${r.row_count} rows`).join(", ") || "none"})`,
  );
  await clickButton("Close").catch(() => false);
  await exec(`document.dispatchEvent(new KeyboardEvent("keydown", { key: "Escape", bubbles: true }));`).catch(() => {});
  await clickButton("Runs");
  const charts = await waitFor(
    "the run's dashboard",
    async () => {
      const titles = await exec(
        `return document.querySelectorAll(".runs-table tbody tr").length > 0 && document.querySelectorAll(".chart canvas").length >= 3
           ? [...document.querySelectorAll(".chart figcaption > span:first-child")].map((e) => e.textContent)
           : null;`,
      );
      return titles && titles.some((t) => t.startsWith("Fidelity by turn")) ? titles : null;
    },
    30_000,
  ).catch(() => []);
  check(
    charts.some((t) => t.startsWith("Metric distributions — model-x/predictions.jsonl")) && charts.some((t) => t.startsWith("Fidelity by turn")),
    `the Runs view shows the run's dashboard (${charts.join(" | ") || "no chart"})`,
  );
  await sleep(800);
  await screenshot("runs-dashboard");
}

const secs = ((Date.now() - started) / 1000).toFixed(1);
console.log(failures ? `desktop e2e: ${failures} check(s) failed (${secs} s)` : `desktop e2e: all checks passed (${secs} s)`);
cleanup();
process.exit(failures);

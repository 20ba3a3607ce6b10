// End-to-end check of the Runs view in Debian Chromium (playwright-core):
// two runs of the AgentWorldBench sample made by `worldloom eval` with the
// `copy` and `replay` baselines, imported by `worldloom serve` beside the
// dataset; the dashboard's charts; the comparison filtered to "A better";
// a row opened in the turn view; a full-text search (the workspace's index)
// with the searched word marked in the row panel and Enter opening the best
// hit; the drift chart (fidelity by turn); labels and a note written with the
// keyboard, undone; "Copy link" opening the row's turn after a reload; the
// labelled rows exported as CSV; the report; the atlas (a cell opens its rows,
// a row its turn with the nodes marked); a run started in the studio with
// the `copy` baseline.
//
//   npm run build && node e2e/runs.mjs
//
// The binary is $WORLDLOOM_BIN, else $CARGO_TARGET_DIR/debug/worldloom.
// `WL_RUNS_EXTRA=FILE[,FILE]` imports more run files (a judged one, say) for
// screenshots. Screenshots go to e2e/screenshots/runs-*.png.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { launch, places, serve, settle } from "./browser.mjs";

const { uiDir, repo, shots, bin } = places();
const dataset = join(repo, "samples", "agentworldbench", "agentworldbench_sample.jsonl");

let failures = 0;
function check(ok, what) {
  console.log(`${ok ? "ok  " : "FAIL"} ${what}`);
  if (!ok) failures += 1;
}

// 1. Two runs with the baselines. The replay source answers even rows with the
// real observation and odd rows with the first line of it only, so the two
// runs differ row by row.
const work = mkdtempSync(join(tmpdir(), "worldloom-e2e-runs-"));
const rows = readFileSync(dataset, "utf8")
  .split("\n")
  .filter((l) => l.trim() !== "");
const source = rows
  .map((line, i) => {
    const row = JSON.parse(line);
    const real = String(row.response[row.turn_idx - 1] ?? "")
      .replace(/^\*\*Environment Observation:\*\*\s*/, "")
      .trim();
    const text = i % 2 === 0 ? real : (real.split("\n")[0] ?? "");
    return JSON.stringify({ ...row, gen: `<predicted_observation>\n${text}\n</predicted_observation>` });
  })
  .join("\n");
writeFileSync(join(work, "replay-source.jsonl"), `${source}\n`);
const copyRun = join(work, "copy.jsonl");
const replayRun = join(work, "replay.jsonl");
execFileSync(bin, ["eval", "--data", dataset, "--engine", "copy", "-o", copyRun], { stdio: "inherit" });
execFileSync(bin, ["eval", "--data", dataset, "--engine", "replay", "--replay", join(work, "replay-source.jsonl"), "-o", replayRun], { stdio: "inherit" });
const extra = (process.env.WL_RUNS_EXTRA ?? "").split(",").filter((p) => p !== "");

// 2. The studio on the dataset and both runs.
const { url, stop } = await serve(bin, [
  "--port",
  "0",
  "--workspace",
  join(work, "runs.worldloom"),
  "--ui-dir",
  join(uiDir, "dist"),
  dataset,
  replayRun,
  copyRun,
  ...extra,
]);

for (const colorScheme of ["light", "dark"]) {
  const browser = await launch({ width: 1600, height: 1000, colorScheme });
  const page = browser.context.pages()[0] ?? (await browser.context.newPage());
  await browser.context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: new URL(url).origin });
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("dialog", (d) => console.log(`dialog: ${d.message()}`));
  await page.goto(url);
  await page.getByRole("button", { name: "Runs", exact: true }).click();
  await page.locator(".runs-table tbody tr", { hasText: "copy.jsonl" }).waitFor();
  const runNames = await page.locator(".runs-table tbody tr td:nth-child(2)").allTextContents();
  check(runNames.includes("copy.jsonl") && runNames.includes("replay.jsonl"), `${colorScheme}: both runs listed (${runNames.join(", ")})`);
  // Run A: the replay run, B: the copy run.
  const a = await page.locator(".runs-table tbody tr", { hasText: "replay.jsonl" }).first();
  check((await a.count()) === 1, "the replay run is in the list");
  await page.getByLabel("Run A").selectOption({ label: (await page.getByLabel("Run A").locator("option", { hasText: "replay.jsonl" }).textContent()) ?? "" });
  await page.getByLabel("Run B").selectOption({ label: (await page.getByLabel("Run B").locator("option", { hasText: "copy.jsonl" }).textContent()) ?? "" });
  // Dashboard: the metric distributions and status counts are drawn.
  await page.locator(".chart canvas").first().waitFor();
  const charts = await page.locator(".chart figcaption > span:first-child").allTextContents();
  check(
    charts.some((c) => c.startsWith("Metric distributions")) && charts.some((c) => c.startsWith("Status counts")),
    `${colorScheme}: dashboard charts drawn (${charts.join(" | ")})`,
  );
  // Drift: fidelity by turn of A and B, drawn from the API's per-turn means.
  const drift = page.locator(".chart", { hasText: "Fidelity by turn" });
  await drift.locator("canvas").first().waitFor();
  const driftTitle = (await drift.locator("figcaption > span:first-child").textContent()) ?? "";
  check(driftTitle.includes("replay.jsonl vs copy.jsonl"), `${colorScheme}: the drift chart compares A and B by turn (${driftTitle})`);
  await page.waitForTimeout(800);
  await page.screenshot({ path: join(shots, `runs-dashboard-${colorScheme}.png`), fullPage: true });
  if (extra.length > 0) {
    // The first extra run's dashboard (a judged run shows the judge's bar chart).
    const runA = page.getByLabel("Run A");
    const options = await runA.locator("option").allTextContents();
    const pick = options.find((o) => !o.startsWith("replay.jsonl") && !o.startsWith("copy.jsonl"));
    if (pick) {
      await runA.selectOption({ label: pick });
      await page.waitForTimeout(1000);
      await page.screenshot({ path: join(shots, `runs-dashboard-extra-${colorScheme}.png`), fullPage: true });
      await runA.selectOption({ label: options.find((o) => o.startsWith("replay.jsonl")) ?? "" });
      await page.getByLabel("Run B").selectOption({ label: (await page.getByLabel("Run B").locator("option", { hasText: "copy.jsonl" }).textContent()) ?? "" });
    }
  }

  // Compare: A better only.
  await page.getByRole("tab", { name: "Compare A | B" }).click();
  const better = page.getByRole("radio", { name: /^A better \(\d+\)$/ });
  await better.waitFor();
  const label = (await better.textContent()) ?? "";
  const expected = Number(label.match(/\((\d+)\)/)?.[1] ?? -1);
  await better.click();
  await page.waitForTimeout(500);
  const pairRows = await page.locator(".pair-row.outcome-a_better").count();
  const otherRows = await page.locator(".pair-row.outcome-b_better, .pair-row.outcome-tie, .pair-row.outcome-unscored").count();
  check(expected > 0 && pairRows === expected && otherRows === 0, `${colorScheme}: "A better" shows ${pairRows} pairs of ${expected}, no others`);
  await page.waitForTimeout(800);
  await page.screenshot({ path: join(shots, `runs-compare-${colorScheme}.png`), fullPage: true });

  // Real | A | B of the first pair where B predicted something (a failed
  // prediction counts 0, so B's errors are among A's wins), each
  // prediction's differing lines marked.
  const predictedPair = page.locator('.pair-row.outcome-a_better[data-b-status="ok"]').first();
  await predictedPair.locator("span").first().click();
  await page.locator(".three-panes .three-text").nth(2).waitFor();
  const panes = await page.locator(".three-panes .three-text").count();
  const changedB = await page.locator('.three-text[aria-label="B\'s prediction"] .line.changed').count();
  check(panes === 3 && changedB > 0, `${colorScheme}: three panes real | A | B, ${changedB} of B's lines marked`);
  await page.waitForTimeout(300);
  await page.screenshot({ path: join(shots, `runs-three-panes-${colorScheme}.png`), fullPage: true });

  if (colorScheme === "light") {
    // Open A's prediction of the first pair in the turn view.
    const first = predictedPair;
    const trajectory = (await first.locator("span").first().textContent()) ?? "";
    await first.getByRole("button", { name: "A", exact: true }).click();
    await page.locator(".topbar h1", { hasText: trajectory }).waitFor();
    // The fidelity panel names the engine of the prediction shown.
    const shown = await page
      .getByText(/overall · replay/)
      .first()
      .waitFor({ timeout: 15_000 })
      .then(() => true)
      .catch(() => false);
    check(shown, `a row opens in the turn view (trajectory ${trajectory}, A's replay prediction shown)`);
    await page.waitForTimeout(600);
    await page.screenshot({ path: join(shots, "runs-open-row.png") });

    // Search inside observations: a word of one real observation. The Runs
    // view kept its choice of runs while the row was open.
    await page.getByRole("button", { name: "Runs", exact: true }).click();
    const kept = (await page.getByLabel("Run A").locator("option:checked").textContent()) ?? "";
    check(kept.startsWith("replay.jsonl"), `the Runs view keeps run A after a row was opened (${kept})`);
    await page.getByRole("tab", { name: "Rows" }).click();
    await page.getByLabel("Search observations and actions").fill("evt_41");
    await page.waitForTimeout(800);
    const found = await page.locator(".run-table .run-row").count();
    const status = (await page.locator(".run-filters [role=status]").textContent()) ?? "";
    check(found > 0 && status.startsWith(`${found} row`), `search "evt_41" finds ${found} rows (${status})`);
    await page.getByLabel("Search observations and actions").fill("zzzqqqnotthere");
    await page.waitForTimeout(800);
    // The best hit is the panel's row: the searched word marked in its real observation.
    await page.getByLabel("Search observations and actions").fill("evt_41");
    await page.waitForTimeout(800);
    const marks = page.locator('.row-panel [aria-label="Real observation: lines with the searched words"] mark');
    await marks.first().waitFor({ timeout: 15_000 });
    const marked = await marks.allTextContents();
    check(marked.length > 0 && marked.every((m) => m.toLowerCase() === "evt_41"), `the hit's real observation marks the word (${marked.join(", ")})`);
    check((await page.locator(".run-row.search-hit.is-active").count()) === 1, "the best hit is highlighted in the table");
    await page.screenshot({ path: join(shots, "runs-search.png") });
    // Enter in the search box opens the best hit in the turn view.
    const hitTrajectory = (await page.locator(".run-row.is-active .col-trajectory").textContent()) ?? "";
    await page.getByLabel("Search observations and actions").press("Enter");
    const opened = await page
      .locator(".topbar h1", { hasText: hitTrajectory })
      .waitFor({ timeout: 15_000 })
      .then(() => true)
      .catch(() => false);
    check(opened, `Enter in the search opens the best hit (${hitTrajectory})`);
    await page.getByRole("button", { name: "Runs", exact: true }).click();
    await page.getByRole("tab", { name: "Rows" }).click();
    await page.getByLabel("Search observations and actions").fill("zzzqqqnotthere");
    await page.waitForTimeout(800);
    check((await page.locator(".run-table .run-row").count()) === 0, "a word in no observation finds nothing");

    // Label a row, filter by the label, undo it from the top bar.
    await page.getByLabel("Search observations and actions").fill("");
    await page.waitForTimeout(800);
    // With the keyboard: focus row 1, ↓ to row 2, `2` toggles the second label.
    await page.locator(".run-table .run-row").first().focus();
    await page.keyboard.press("ArrowDown");
    await page.keyboard.press("2");
    await page.locator(".label-chip", { hasText: "hallucinated element" }).first().waitFor();
    await page.getByLabel("Label", { exact: true }).selectOption("hallucinated element");
    await page.waitForTimeout(800);
    const labelled = await page.locator(".run-table .run-row").count();
    check(labelled === 1, `the label filter shows the labelled row (${labelled})`);
    await page.screenshot({ path: join(shots, "runs-labelled.png") });
    await page.getByRole("button", { name: "Undo" }).click();
    await page.waitForTimeout(1000);
    check((await page.locator(".label-chip").count()) === 0, "undo removes the label");

    // A note with the keyboard: row 1, `j` to row 2, `n` writes, Ctrl+Enter saves.
    await page.getByLabel("Label", { exact: true }).selectOption("");
    await page.waitForTimeout(600);
    await page.locator(".run-table .run-row").first().focus();
    await page.keyboard.press("j");
    await page.keyboard.press("n");
    const noteBox = page.getByLabel("Note on row 2");
    await noteBox.waitFor();
    check(await noteBox.evaluate((el) => el === document.activeElement), "`n` puts the cursor in the row's note");
    await page.keyboard.type("invents the toast after Save");
    await page.keyboard.press("Control+Enter");
    const noted = page.locator('.run-row[data-index="1"] .col-note', { hasText: "invents the toast after Save" });
    const shownNote = await noted
      .waitFor({ timeout: 10_000 })
      .then(() => true)
      .catch(() => false);
    check(shownNote, "the note is saved and shown in the table");
    check(await page.evaluate(() => document.activeElement?.getAttribute("data-index") === "1"), "Ctrl+Enter gives the keyboard back to the row");
    await page.waitForTimeout(400);
    await page.screenshot({ path: join(shots, "runs-row-note.png") });
    await page.getByRole("button", { name: "Undo" }).click();
    await page.waitForTimeout(1000);
    check((await page.locator(".run-row .col-note", { hasText: "invents" }).count()) === 0, "undo removes the note");
    await page.getByRole("button", { name: "Redo" }).click();
    await noted.waitFor({ timeout: 10_000 });
    check(true, "redo brings the note back");

    // The labelled (or noted) rows as CSV, from the API.
    const [csvDownload] = await Promise.all([page.waitForEvent("download"), page.locator(".export-rows").getByRole("button", { name: "CSV" }).click()]);
    const csvPath = join(work, "rows.csv");
    await csvDownload.saveAs(csvPath);
    const csv = readFileSync(csvPath, "utf8");
    check(
      csv.startsWith("\ufeffrun,engine,row,trajectory,turn,") && csv.includes("invents the toast after Save") && csv.trim().split("\r\n").length === 2,
      `the labelled rows' CSV carries the note (${csv.trim().split("\r\n").length - 1} row)`,
    );

    // Copy link: the studio URL that opens the row's turn, here after a reload.
    await page.locator('.run-row[data-index="1"]').focus();
    await page.getByRole("button", { name: "Copy link" }).click();
    const copied = (await page.locator(".row-panel [role=status]").textContent()) ?? "";
    const link = await page.getByLabel("Link to this row").inputValue();
    const clip = await page.evaluate(() => navigator.clipboard.readText()).catch(() => null);
    check(copied === "Link copied" && clip === link, `copy link puts the row's link on the clipboard (${copied}: ${clip})`);
    const rowTrajectory = (await page.locator('.run-row[data-index="1"] .col-trajectory').textContent()) ?? "";
    const rowTurn = Number((await page.locator('.run-row[data-index="1"] .col-turn').textContent()) ?? "0");
    check(/#t=\d+&turn=\d+&p=\d+$/.test(link) && !link.includes("token"), `the link names trajectory, turn and prediction, no token (${link})`);
    await page.goto(link);
    await page.reload();
    const atRow = await page
      .locator(".topbar h1", { hasText: rowTrajectory })
      .waitFor({ timeout: 20_000 })
      .then(() => true)
      .catch(() => false);
    const turnShown = await page
      .getByText(/overall · replay/)
      .first()
      .waitFor({ timeout: 15_000 })
      .then(() => true)
      .catch(() => false);
    check(atRow && turnShown, `the link opens ${rowTrajectory} with the row's replay prediction`);
    check(new URL(page.url()).hash.includes(`turn=${rowTurn - 1}`), `the link opens turn ${rowTurn} (${new URL(page.url()).hash})`);
    await page.screenshot({ path: join(shots, "runs-link-opened.png") });
    // The reload chose the newest runs again: back to A = replay, B = copy.
    await page.getByRole("button", { name: "Runs", exact: true }).click();
    await page.locator(".runs-table tbody tr", { hasText: "copy.jsonl" }).waitFor();
    await page.getByLabel("Run A").selectOption({ label: (await page.getByLabel("Run A").locator("option", { hasText: "replay.jsonl" }).textContent()) ?? "" });
    await page.getByLabel("Run B").selectOption({ label: (await page.getByLabel("Run B").locator("option", { hasText: "copy.jsonl" }).textContent()) ?? "" });
    await page.getByRole("tab", { name: "Rows" }).click();
    await page.locator(".run-table .run-row").first().waitFor();

    // A report with a labelled row, opened from disk with the network off.
    await page.getByLabel("Label", { exact: true }).selectOption("");
    await page.waitForTimeout(600);
    await page.getByLabel("Label row 3").selectOption("wrong page");
    await page.locator(".label-chip", { hasText: "wrong page" }).first().waitFor();
    const [download] = await Promise.all([page.waitForEvent("download"), page.getByRole("button", { name: "Export report…" }).click()]);
    const reportPath = join(work, "report.html");
    await download.saveAs(reportPath);
    const report = readFileSync(reportPath, "utf8");
    check(!/<script/i.test(report) && !/(src|href)\s*=\s*["']?(https?:)?\/\//i.test(report), "the report holds no script and no external reference");
    await browser.context.setOffline(true);
    const requests = [];
    const offline = await browser.context.newPage();
    offline.on("request", (r) => requests.push(r.url()));
    await offline.goto(`file://${reportPath}`);
    const svgs = await offline.locator("svg").count();
    const text = (await offline.locator("body").textContent()) ?? "";
    check(
      svgs >= 4 &&
        text.includes("wrong page") &&
        text.includes("A better") &&
        text.includes("invents the toast after Save") &&
        text.includes("Fidelity by turn") &&
        text.includes("Fidelity atlas") &&
        text.includes("Action type × error kind"),
      `the report opens from disk offline: ${svgs} charts (drift included), the labelled and the noted row, the comparison, the atlas`,
    );
    check(
      requests.every((u) => u.startsWith("file://")),
      `the report requests nothing beyond itself (${requests.filter((u) => !u.startsWith("file://")).join(", ")})`,
    );
    await offline.screenshot({ path: join(shots, "runs-report.png"), fullPage: true });
    await offline.close();
    await browser.context.setOffline(false);

    // The workspace's label set, edited.
    await page.getByText("Labels…").click();
    await page.getByLabel("Label set, one per line").fill("wrong page\nleaks the goal\n");
    await page.getByRole("button", { name: "Save labels" }).click();
    const wantLabels = "any label|wrong page|leaks the goal";
    const offered = await settle(
      () => page.getByLabel("Label", { exact: true }).locator("option").allTextContents(),
      (labels) => labels.join("|") === wantLabels,
    );
    check(offered.join("|") === wantLabels, `the label set is saved (${offered.join(", ")})`);

    // The atlas of A (replay) beside B (copy): a cell opens its rows, a row
    // its turn with the nodes' lines marked in real | A | B, then the turn view.
    await page.getByRole("tab", { name: "Atlas" }).click();
    const heat = page.getByRole("table", { name: "Heat map: action type × error kind" });
    await heat.waitFor({ timeout: 60_000 });
    const heatCells = await heat.locator("button.atlas-cell:not([disabled])").count();
    check(heatCells > 0, `the atlas heat map has ${heatCells} cells (action type × error kind)`);
    await page.getByRole("tab", { name: "Overall" }).click();
    const overall = page.getByRole("table", { name: "Atlas overall" });
    const forgottenCell = overall.getByRole("button", { name: "all Forgotten" });
    await forgottenCell.waitFor();
    const cellTitle = (await forgottenCell.getAttribute("title")) ?? "";
    const inRows = Number(cellTitle.match(/ in (\d+) of \d+ scored rows/)?.[1] ?? -1);
    const bShare = cellTitle.includes(" · B ");
    await forgottenCell.click();
    const cellRows = page.getByRole("region", { name: "Atlas rows" });
    await cellRows.locator("header .muted", { hasText: / rows$/ }).waitFor();
    const listed = (await cellRows.locator("header .muted").textContent()) ?? "";
    check(inRows > 0 && listed === `${inRows} rows` && bShare, `the "forgotten" cell opens its ${listed} (the cell says ${inRows}, with B's share)`);
    await page.screenshot({ path: join(shots, "runs-atlas.png"), fullPage: true });
    const firstRow = cellRows.locator(".run-table .atlas-row").first();
    const rowTrajectory2 = (await firstRow.locator("span").first().textContent()) ?? "";
    await firstRow.click();
    const turn = page.getByRole("region", { name: "Atlas turn" });
    await turn.locator(".three-text").nth(2).waitFor({ timeout: 15_000 });
    const realMarked = await turn.locator('.three-text[aria-label="Real observation"] .line.changed').count();
    const columns = await turn.locator(".three-text").count();
    check(columns === 3 && realMarked > 0, `a row opens real | A | B with ${realMarked} forgotten nodes' lines marked in the real state`);
    await turn.scrollIntoViewIfNeeded();
    await page.waitForTimeout(300);
    await cellRows.screenshot({ path: join(shots, "runs-atlas-turn.png") });
    await firstRow.getByRole("button", { name: "Turn" }).click();
    const openedTurn = await page
      .locator(".topbar h1", { hasText: rowTrajectory2 })
      .waitFor({ timeout: 15_000 })
      .then(() => true)
      .catch(() => false);
    check(openedTurn, `an atlas row opens in the turn view (${rowTrajectory2})`);

    // The atlas of a selection: the rows the Rows tab's label filter shows.
    await page.getByRole("button", { name: "Runs", exact: true }).click();
    await page.getByRole("tab", { name: "Rows" }).click();
    await page.getByLabel("Label", { exact: true }).selectOption("wrong page");
    await page.waitForTimeout(600);
    const selected = await page.locator(".run-table .run-row").count();
    await page.getByRole("tab", { name: "Atlas" }).click();
    await page.getByLabel(/Only the rows the Rows tab shows/).check();
    const counts = page.locator(".atlas-counts", { hasText: `A: ${selected} rows` });
    const narrowedAtlas = await counts
      .waitFor({ timeout: 15_000 })
      .then(() => true)
      .catch(() => false);
    check(selected === 1 && narrowedAtlas, `the atlas of the Rows tab's selection counts its ${selected} row`);
    await page.getByLabel(/Only the rows the Rows tab shows/).uncheck();
    await page.getByRole("tab", { name: "Rows" }).click();
    await page.getByLabel("Label", { exact: true }).selectOption("");
  }
  check(errors.length === 0, `${colorScheme}: no page errors ${errors.join("; ")}`);
  await browser.close();
}
// 3. A run started in the studio: the copy baseline over every trajectory of
// the workspace (the dataset's 7), its progress to the end, the run listed.
{
  const browser = await launch({ width: 1600, height: 1000, colorScheme: "light" });
  const page = browser.context.pages()[0] ?? (await browser.context.newPage());
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  await page.goto(url);
  await page.getByRole("button", { name: "Runs", exact: true }).click();
  await page.getByRole("button", { name: "Start a run…" }).click();
  const form = page.getByRole("form", { name: "Start a run" });
  await form.getByRole("radio", { name: "copy baseline" }).click();
  await form.getByRole("checkbox").first().waitFor();
  await form.getByRole("button", { name: "Choose all" }).click();
  const chosen = (await form.getByText(/ of \d+ chosen$/).textContent()) ?? "";
  await page.screenshot({ path: join(shots, "runs-start-run.png"), fullPage: true });
  await form.getByRole("button", { name: "Start run" }).click();
  const job = page.locator(".run-job", { hasText: "copy · teacher-forced" }).first();
  await job.locator(".run-job-state", { hasText: "done in" }).waitFor({ timeout: 60_000 });
  const state = (await job.locator(".run-job-state").textContent()) ?? "";
  check(state.startsWith("17 / 17 predicted · 7 failed"), `a studio run of the copy baseline over ${chosen} ends: ${state}`);
  const listed = page.locator(".runs-table tbody tr", { hasText: "copy · teacher-forced · 7 trajectories" });
  await listed.waitFor();
  const cells = await listed.locator("td").allTextContents();
  check(cells[2] === "copy" && cells[4] === "17", `the studio run is listed with its rows (${cells.join(" | ")})`);
  // The same baseline through `worldloom eval` scored the same.
  const evalCells = await page.locator(".runs-table tbody tr", { hasText: "copy.jsonl" }).first().locator("td").allTextContents();
  check(cells[7] === evalCells[7], `its mean text F1 is that of \`worldloom eval --engine copy\` (${cells[7]} = ${evalCells[7]})`);
  await page.waitForTimeout(400);
  await page.screenshot({ path: join(shots, "runs-started.png"), fullPage: true });
  check(errors.length === 0, `studio run: no page errors ${errors.join("; ")}`);
  await browser.close();
}

stop();
rmSync(work, { recursive: true, force: true });
console.log(failures === 0 ? "runs e2e: all checks passed" : `runs e2e: ${failures} failed`);
process.exit(failures === 0 ? 0 : 1);

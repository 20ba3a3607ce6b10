// End-to-end checks of the studio's laboratory (called from run.mjs after the
// viewing checks, on the same page and server):
//
// - step a Web, an OS and an Android trajectory with the `copy` baseline;
// - edit an action (a branch), see it in the branch tree, open it from there,
//   step it, author an observation, add a perturbation, roll out two turns;
// - undo / redo with the keyboard; compare two branches;
// - export a curriculum (preview, and the written file against the preview);
// - reload the page and find everything again;
// - Stop a slow stream: a local HTTP server speaks the OpenAI chat-completions
//   streaming protocol, one chunk every 300 ms; Stop must end the stream at
//   once and store nothing;
// - the tiny real checkpoint assets/tiny-world-model as a local engine (cpu, f32).
//
// Screenshots: lab-step-*.png, lab-branch-tree.png, lab-streaming.png,
// lab-authored-editor.png, lab-authored.png, lab-compare.png, lab-export.png, lab-uncertainty.png,
// lab-engine-local.png, lab-tree-dark.png.
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

/** Milliseconds between two chunks of the slow endpoint. */
const SLOW_CHUNK_MS = 300;

/**
 * A tiny OpenAI-compatible server: `POST /v1/chat/completions` with
 * `stream: true` answers server-sent `chat.completion.chunk` events, one every
 * SLOW_CHUNK_MS, for about a minute; `GET /v1/models` lists one model. It
 * records when each stream started and when the client went away.
 */
export function startSlowEndpoint() {
  const streams = [];
  const server = createServer((req, res) => {
    if (req.method === "GET" && req.url?.endsWith("/models")) {
      res.writeHead(200, { "Content-Type": "application/json" }).end(JSON.stringify({ object: "list", data: [{ id: "slow-model", object: "model" }] }));
      return;
    }
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      let request = {};
      try {
        request = JSON.parse(body || "{}");
      } catch {
        // answered below as a plain completion
      }
      // "slow-model": one chunk every SLOW_CHUNK_MS, for about a minute; "fast-model": a short answer at once,
      // with log-probabilities when asked (lines mentioning "unsure" get p = 0.12, the rest p = 0.97).
      const fast = request.model === "fast-model";
      const pieces = ["<think>", "The page ", "probably ", "shows ", "an error. ", "</think>\n", "<predicted_observation>\n"];
      const answerFrom = pieces.length;
      for (let i = 0; i < (fast ? 6 : 200); i++) pieces.push(fast && i % 3 === 1 ? `<p>unsure line ${i}</p>\n` : `<p>slow line ${i}</p>\n`);
      pieces.push("</predicted_observation>");
      const every = fast ? 5 : SLOW_CHUNK_MS;
      const logprob = (i) => (i >= answerFrom && pieces[i].includes("unsure") ? Math.log(0.12) : Math.log(0.97));
      if (!request.stream) {
        res.writeHead(200, { "Content-Type": "application/json" }).end(
          JSON.stringify({
            id: "cmpl-1",
            object: "chat.completion",
            model: "slow-model",
            choices: [{ index: 0, message: { role: "assistant", content: pieces.join("") }, finish_reason: "stop" }],
            usage: { prompt_tokens: 10, completion_tokens: pieces.length, total_tokens: 10 + pieces.length },
          }),
        );
        return;
      }
      const record = { started_ms: Date.now(), closed_ms: null, chunks: 0 };
      streams.push(record);
      res.writeHead(200, { "Content-Type": "text/event-stream", "Cache-Control": "no-cache", Connection: "keep-alive" });
      let i = 0;
      const timer = setInterval(() => {
        if (i >= pieces.length) {
          res.write("data: [DONE]\n\n");
          res.end();
          clearInterval(timer);
          return;
        }
        const choice = { index: 0, delta: i === 0 ? { role: "assistant", content: pieces[i] } : { content: pieces[i] }, finish_reason: null };
        if (request.logprobs) choice.logprobs = { content: [{ token: pieces[i], logprob: logprob(i), bytes: null, top_logprobs: [] }] };
        const chunk = { id: "cmpl-1", object: "chat.completion.chunk", created: 0, model: request.model ?? "slow-model", choices: [choice] };
        res.write(`data: ${JSON.stringify(chunk)}\n\n`);
        record.chunks += 1;
        i += 1;
      }, every);
      res.on("close", () => {
        clearInterval(timer);
        record.closed_ms ??= Date.now();
      });
    });
  });
  return new Promise((ok) => server.listen(0, "127.0.0.1", () => ok({ server, streams, port: server.address().port })));
}

/** Polls `fn` until it returns a truthy value or `timeoutMs` passes; returns the last value. */
async function until(fn, timeoutMs = 10_000, everyMs = 100) {
  const end = Date.now() + timeoutMs;
  let v;
  for (;;) {
    try {
      v = await fn();
    } catch {
      v = undefined;
    }
    if (v || Date.now() > end) return v;
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/**
 * Runs the laboratory checks.
 * @param {{ page: import("playwright-core").Page, check: (ok: boolean, what: string) => void, shots: string,
 *   appUrl: string, repo: string, openTrajectory: (domain: string, hints: string[]) => Promise<boolean> }} ctx
 */
export async function runLab({ page, check, shots, appUrl, repo, openTrajectory }) {
  const predicted = page.getByRole("region", { name: "Predicted observation" });
  const stepStatus = page.getByLabel("Step status");
  const turnText = () => page.getByLabel("Current turn").innerText();
  const shot = (name) => page.screenshot({ path: join(shots, name) });

  async function goTurn(n) {
    // Click the turn's cell (keys would go to a focused render frame, if any).
    await page
      .getByRole("list", { name: "Turns" })
      .getByRole("button", { name: new RegExp(`^Turn ${n}: `) })
      .click();
    await until(async () => (await turnText()).startsWith(`turn ${n} `), 5000);
    await page.waitForTimeout(300);
  }

  async function predictionOptions() {
    const picker = predicted.getByLabel("Prediction shown");
    if ((await picker.count()) === 0) return [];
    return picker.locator("option").allInnerTexts();
  }

  async function setEngine(configure) {
    await page.getByRole("button", { name: /^Engine: / }).click();
    const dialog = page.getByRole("dialog", { name: "Engine" });
    await dialog.waitFor({ timeout: 5000 });
    await configure(dialog);
    await dialog.getByRole("button", { name: "Save engine" }).click();
    const closed = await until(async () => (await dialog.count()) === 0, 120_000, 250);
    if (!closed) {
      const err = await dialog
        .getByRole("alert")
        .allInnerTexts()
        .catch(() => []);
      await dialog
        .getByRole("button", { name: "Cancel" })
        .click()
        .catch(() => {});
      return { ok: false, error: err.join(" ") };
    }
    return { ok: true, error: null };
  }

  const useCopy = () =>
    setEngine(async (d) => {
      await d.getByRole("radio", { name: "Baseline" }).check();
      await d.getByLabel("Baseline engine").selectOption("copy");
    });

  /** Presses Step and waits for the step to finish; returns the status text. */
  async function stepAndWait(timeoutMs = 30_000) {
    await page.getByRole("button", { name: "Step", exact: true }).click();
    const done = await until(
      async () => {
        const t = await stepStatus.innerText();
        return /tokens\/s|done \(|stopped|error|failed|no_observation|empty|truncated/.test(t) && !t.startsWith("streaming") ? t : null;
      },
      timeoutMs,
      150,
    );
    await page.waitForTimeout(600); // the turn reloads with the stored prediction
    return done ?? (await stepStatus.innerText());
  }

  const engineSet = await useCopy();
  check(engineSet.ok, `lab: the engine dialog saves the copy baseline ${engineSet.error ?? ""}`);

  // ---- step a Web, an OS and an Android sample with the copy baseline ----
  for (const [domain, hints] of [
    ["web", ["larkmail", "harbor"]],
    ["os", ["thunar", "calculator"]],
    ["android", ["settings_airplane", "settings"]],
  ]) {
    if (!(await openTrajectory(domain, hints))) {
      check(false, `lab: a ${domain} trajectory to step`);
      continue;
    }
    await goTurn(2);
    const before = (await predictionOptions()).filter((o) => o.includes("copy")).length;
    const status = await stepAndWait();
    const after = await until(async () => {
      const opts = (await predictionOptions()).filter((o) => o.includes("copy"));
      return opts.length > before ? opts : null;
    }, 8000);
    check(
      /\d+(\.\d+)? tokens\/s/.test(status) && /\d+ of \d+ prompt tokens re-read/.test(status),
      `lab ${domain}: Step with copy finishes with figures (${status})`,
    );
    check(!!after, `lab ${domain}: the new copy prediction is stored and listed (${after?.length ?? 0} copy predictions, ${before} before)`);
    const fid = await page
      .getByLabel("Overall fidelity")
      .innerText()
      .catch(() => "");
    check(/\d/.test(fid), `lab ${domain}: the stored prediction is scored against the real observation (${fid.replace(/\s+/g, " ")})`);
    await shot(`lab-step-${domain}.png`);
  }

  // ---- edit an action: a new branch ----
  if (!(await openTrajectory("web", ["larkmail", "harbor"]))) return;
  await goTurn(2);
  const branchOptionsBefore = await page.getByLabel("Branch", { exact: true }).locator("option").count();
  await page.getByRole("button", { name: "Edit action" }).click();
  const edit = page.getByRole("dialog", { name: "Edit action" });
  await edit.waitFor({ timeout: 5000 });
  // The form opens on the BrowserGym call the back end read; switch to raw text and write another action.
  const formShown = !!(await until(async () => (await edit.getByLabel("Action name").count()) === 1 || null, 5000));
  check(formShown, "lab: Edit action opens the BrowserGym form for a web action");
  await edit.getByRole("button", { name: "Raw text" }).click();
  await edit.getByLabel("Raw action", { exact: true }).fill("click('7')");
  const parsedLine = await until(async () => {
    const t = await edit.getByLabel("Action check").innerText();
    return t.includes("click") && !t.includes("checking") ? t : null;
  }, 5000);
  check(!!parsedLine && !/error|not a/i.test(parsedLine), `lab: parse_action checks the edited action (${parsedLine})`);
  await edit.getByRole("button", { name: "Save as new branch" }).click();
  await until(async () => (await edit.count()) === 0, 5000);
  const branchOptionsAfter = await until(async () => {
    const n = await page.getByLabel("Branch", { exact: true }).locator("option").count();
    return n > branchOptionsBefore ? n : null;
  }, 5000);
  check(!!branchOptionsAfter, `lab: editing an action adds a branch (${branchOptionsBefore} → ${branchOptionsAfter})`);
  const actionShown = await until(async () => {
    const t = await page.locator(".action-raw").innerText();
    return t === "click('7')" ? t : null;
  }, 5000).then((t) => t ?? page.locator(".action-raw").innerText());
  check(actionShown === "click('7')", `lab: the new branch is open at the edited turn (${actionShown})`);
  const newBranch = await page.getByLabel("Branch", { exact: true }).inputValue();

  // ---- the branch tree ----
  await page.getByRole("button", { name: "Branch tree" }).click();
  const tree = page.getByRole("region", { name: "Branch tree" });
  await tree.waitFor({ timeout: 5000 });
  await page.waitForTimeout(800);
  const edgeLabel = tree.locator(".react-flow__edge-text", { hasText: "click('7')" });
  check((await edgeLabel.count()) === 1, "lab: the branch tree shows the edited action on its edge");
  const states = await tree.locator(".flow-state").count();
  check(states >= 4, `lab: the branch tree draws every state (${states})`);
  check(
    (await tree.locator(".flow-state.kind-real").count()) > 0 && (await tree.locator(".flow-state.kind-empty, .flow-state.kind-predicted").count()) > 0,
    "lab: tree nodes are coloured by kind (real and not-yet-real)",
  );
  await shot("lab-branch-tree.png");
  // Click the new state: the turn view opens on that branch and turn.
  await tree.locator(`.flow-state[data-node-id="${newBranch}"]`).click();
  await until(async () => (await page.getByRole("region", { name: "Predicted observation" }).count()) === 1, 5000);
  await page.waitForTimeout(500);
  check(
    (await page.locator(".action-raw").innerText()) === "click('7')" && (await page.getByLabel("Branch", { exact: true }).inputValue()) === newBranch,
    "lab: clicking a tree node jumps to its branch and turn",
  );

  // ---- step the branch ----
  const branchStep = await stepAndWait();
  check(/tokens\/s/.test(branchStep), `lab: the edited branch steps (${branchStep})`);
  check((await predicted.locator(".kind-badge.kind-predicted").count()) >= 1, "lab: the branch's state shows as predicted");

  // ---- author an observation ----
  await page.getByRole("button", { name: "Author observation" }).click();
  const author = page.getByRole("dialog", { name: "Author observation" });
  await author.waitFor({ timeout: 5000 });
  const repSelect = author.getByLabel("Representation");
  const editor = author.locator(".cm-content");
  const replaceText = async (text) => {
    await editor.click();
    await page.keyboard.press("Control+a");
    await page.keyboard.press("Delete");
    await page.keyboard.insertText(text);
  };
  // A JSON observation (as MCP tools return) with a syntax error: the parser names line and column.
  await repSelect.selectOption("json");
  await replaceText('{\n  "status": 500,\n  "error": \n}\n');
  await author.getByRole("button", { name: "Validate" }).click();
  const problems = await until(async () => ((await author.getByLabel("Problems").count()) ? author.getByLabel("Problems").innerText() : null), 5000);
  check(
    !!problems && /line 4, column 1/.test(problems),
    `lab: validate_observation reports a broken observation with its line and column (${(problems ?? "").replace(/\s+/g, " ").slice(0, 120)})`,
  );
  // Back to HTML: highlighted, validated, saved.
  await repSelect.selectOption("html");
  await replaceText(
    '<html>\n  <body>\n    <h1 class="error">500 Internal Server Error</h1>\n    <p>The server returned an error page.</p>\n  </body>\n</html>\n',
  );
  check((await author.locator(".cm-line span").count()) > 3, "lab: the editor highlights HTML syntax");
  await author.getByRole("button", { name: "Validate" }).click();
  const okLine = await until(async () => ((await author.locator(".validation .ok").count()) ? author.locator(".validation .ok").innerText() : null), 5000);
  check(!!okLine, `lab: the HTML observation validates (${okLine})`);
  await shot("lab-authored-editor.png");
  await author.getByRole("button", { name: "Save authored observation" }).click();
  await until(async () => (await author.count()) === 0, 5000);
  const authoredBanner = await until(
    async () =>
      (
        await predicted
          .getByRole("note")
          .innerText()
          .catch(() => "")
      ).includes("Authored") || null,
    5000,
  );
  check(
    !!authoredBanner && (await predicted.locator(".pane-head .kind-badge.kind-authored").count()) === 1,
    "lab: the turn shows the authored observation, marked authored",
  );
  await shot("lab-authored.png");

  // ---- a perturbation ----
  await page.getByRole("button", { name: /control instruction/ }).click();
  await page.getByLabel("Control instruction", { exact: true }).fill("the server returns an error page");
  await page.getByRole("button", { name: "Save instruction" }).click();
  const chip = await until(
    async () => ((await page.locator(".perturbation-chip").count()) ? page.locator(".perturbation-chip").first().innerText() : null),
    5000,
  );
  check(!!chip && chip.includes("the server returns an error page"), `lab: the control instruction shows on the turn (${chip})`);
  check((await page.locator(".tcell .perturbation-mark").count()) >= 1, "lab: the timeline marks the perturbed turn");

  // ---- undo / redo ----
  await page
    .locator("body")
    .click({ position: { x: 5, y: 5 } })
    .catch(() => {});
  await page.keyboard.press("Control+z");
  const undone = await until(async () => (await page.locator(".action-bar .perturbation-chip").count()) === 0, 5000);
  check(!!undone, "lab: Ctrl+Z undoes the perturbation");
  await page.keyboard.press("Control+Shift+z");
  const redone = await until(async () => (await page.locator(".action-bar .perturbation-chip").count()) === 1, 5000);
  check(!!redone, "lab: Ctrl+Shift+Z redoes it");
  await page.getByRole("button", { name: "History" }).click();
  const history = page.getByRole("dialog", { name: "History" });
  await history.waitFor({ timeout: 5000 });
  const changeCount = await until(async () => {
    const n = await history.locator(".change").count();
    return n >= 3 ? n : null;
  }, 5000);
  check(!!changeCount, `lab: the history lists the changes (${changeCount})`);
  await history.getByRole("button", { name: "Close" }).last().click();

  // ---- roll out two turns from the branch's leaf ----
  await page.getByRole("button", { name: "Roll out N" }).click();
  const rollDialog = page.getByRole("dialog", { name: "Roll out" });
  await rollDialog.getByLabel("Rollout actions").fill("scroll(0, 200)\nclick('3')");
  await rollDialog.getByRole("button", { name: "Roll out 2" }).click();
  const rolled = await until(
    async () => {
      const t =
        (await rollDialog
          .getByLabel("Rollout progress")
          .innerText()
          .catch(() => "")) || "";
      return /2 of 2 turns/.test(t) ? t : null;
    },
    30_000,
    200,
  );
  check(!!rolled, `lab: Roll out 2 reports progress to the end (${rolled})`);
  await rollDialog.getByRole("button", { name: "Close" }).last().click();
  await page.waitForTimeout(600);
  const afterRoll = await turnText();
  check(/^turn 4 \/ 4/.test(afterRoll), `lab: the rollout's last turn is shown (${afterRoll})`);

  // ---- add a turn at the leaf, with the form ----
  await page.getByRole("button", { name: "Add turn" }).click();
  const add = page.getByRole("dialog", { name: "Add turn" });
  await add.waitFor({ timeout: 5000 });
  await add.getByLabel("Action name").selectOption("go_back");
  const preview = await until(async () => ((await add.getByLabel("Raw action preview").innerText()) === "go_back()" ? "go_back()" : null), 5000);
  check(preview === "go_back()", "lab: Add turn builds go_back() from the form");
  await add.getByRole("button", { name: "Add turn" }).click();
  // The turn number moves first; the turn's action shows once its detail has loaded.
  const added = await until(async () => {
    const t = await turnText();
    const raw = await page
      .locator(".action-raw")
      .innerText()
      .catch(() => "");
    return /^turn 5 \/ 5/.test(t) && raw === "go_back()" ? `${t}, ${raw}` : null;
  }, 10000);
  check(!!added, `lab: the new turn continues the branch (${added ?? (await turnText())})`);

  // ---- compare two branches ----
  await page.getByRole("button", { name: "Branch tree" }).click();
  await tree.waitFor({ timeout: 5000 });
  await page.waitForTimeout(600);
  const boxes = tree.getByRole("checkbox");
  const boxCount = await boxes.count();
  check(boxCount >= 2, `lab: every leaf has a compare checkbox (${boxCount})`);
  if (boxCount >= 2) {
    await boxes.nth(0).check();
    await boxes.nth(boxCount - 1).check();
    await tree.getByRole("button", { name: "Compare" }).click();
    const cmp = page.getByRole("region", { name: "Branch comparison" });
    await cmp.waitFor({ timeout: 5000 });
    const rows = await until(async () => {
      const n = await cmp.locator(".cmp-row:not(.cmp-header)").count();
      return n > 0 ? n : null;
    }, 5000);
    check(
      !!rows && (await cmp.locator(".cmp-row.is-diverged").count()) >= 1,
      `lab: the compare view lists turns side by side and marks where they diverge (${rows} rows)`,
    );
    await shot("lab-compare.png");
    await cmp.getByRole("button", { name: "Back to the tree" }).click();
  }
  await page.getByRole("button", { name: "Turn", exact: true }).click();

  // ---- export a curriculum ----
  await page.getByRole("button", { name: "Export curriculum…" }).click();
  const exp = page.getByRole("dialog", { name: "Export curriculum" });
  await exp.waitFor({ timeout: 5000 });
  const picks = exp.locator(".branch-picks input[type=checkbox]");
  for (let i = 0; i < (await picks.count()); i++) await picks.nth(i).check();
  await exp.getByLabel("Format").selectOption("agentworldbench");
  await exp.getByRole("button", { name: "Preview" }).click();
  const previewRows = await until(async () => {
    const n = await exp.locator(".preview-rows li").count();
    return n > 0 ? n : null;
  }, 10_000);
  const firstRow = previewRows ? await exp.locator(".preview-rows li").first().innerText() : "";
  check(/^\{"/.test(firstRow) && firstRow.includes('"prompt"'), `lab: the AgentWorldBench preview shows JSONL rows (${firstRow.slice(0, 80)})`);
  const summary = await exp.getByLabel("Export preview").locator("p").first().innerText();
  const total = Number(/(\d+) rows/.exec(summary)?.[1] ?? "0");
  check(total >= 4, `lab: the export counts its rows (${summary})`);
  const out = join(mkdtempSync(join(tmpdir(), "worldloom-e2e-export-")), "curriculum.jsonl");
  await exp.getByLabel("Output path").fill(out);
  await exp.getByRole("button", { name: "Write file" }).click();
  await until(async () => existsSync(out), 10_000);
  const lines = existsSync(out)
    ? readFileSync(out, "utf8")
        .split("\n")
        .filter((l) => l !== "")
    : [];
  let row = null;
  try {
    row = JSON.parse(lines[0] ?? "");
  } catch {
    // reported below
  }
  const shownPrefix = firstRow.replace(/…$/, "");
  check(
    lines.length === total && (lines[0] ?? "").startsWith(shownPrefix),
    `lab: the written file has the previewed rows (${lines.length} lines, ${total} expected, first line as previewed: ${(lines[0] ?? "").startsWith(shownPrefix)})`,
  );
  check(
    !!row && Array.isArray(row.prompt) && Array.isArray(row.response) && typeof row.turn_idx === "number",
    `lab: a written row has AgentWorldBench fields (${Object.keys(row ?? {}).join(", ")})`,
  );
  await exp.getByRole("button", { name: "Write file" }).click();
  await page.waitForTimeout(500);
  const again = existsSync(out)
    ? readFileSync(out, "utf8")
        .split("\n")
        .filter((l) => l !== "")
    : [];
  check(again.join("\n") === lines.join("\n"), "lab: writing again gives the same bytes (deterministic)");
  await shot("lab-export.png");
  await exp.getByRole("button", { name: "Close" }).last().click();

  // ---- reload: everything is still there ----
  // A real reload: leave the page, then open the app's URL (with its token) at the same place.
  const reopen = async () => {
    const hash = new URL(page.url()).hash;
    await page.goto("about:blank");
    await page.goto(`${appUrl}${hash}`);
  };
  await reopen();
  await predicted.waitFor({ timeout: 20_000 });
  await page.waitForTimeout(1200);
  const branchesNow = await page.getByLabel("Branch", { exact: true }).locator("option").allInnerTexts();
  check(
    branchesNow.length >= 2 && branchesNow.some((b) => /branch at turn 2/.test(b)),
    `lab: after a reload the branches are there (${branchesNow.join(" | ")})`,
  );
  await page
    .getByLabel("Branch", { exact: true })
    .selectOption(newBranch)
    .catch(() => {});
  await page.waitForTimeout(500);
  await goTurn(2);
  check((await page.locator(".action-raw").innerText()) === "click('7')", "lab: after a reload the edited action is there");
  check((await page.locator(".action-bar .perturbation-chip").count()) === 1, "lab: after a reload the perturbation is there");
  check((await predicted.locator(".pane-head .kind-badge.kind-authored").count()) === 1, "lab: after a reload the authored observation is there");

  // ---- import in the browser: files and a folder, uploaded with their relative paths ----
  await page.getByRole("button", { name: "Import…" }).click();
  const imp = page.getByRole("dialog", { name: "Import" });
  await imp.waitFor({ timeout: 5000 });
  await imp.getByLabel("Choose a folder").setInputFiles(join(repo, "samples", "os", "pluma_edit-menu_trajectory"));
  const folderResult = await until(async () => ((await imp.getByLabel("Import result").count()) ? imp.getByLabel("Import result").innerText() : null), 20_000);
  check(
    !!folderResult && /pluma/i.test(folderResult) && !/failed/.test(folderResult.split("\n")[0]),
    `lab: a folder picked in the browser imports (${(folderResult ?? "").replace(/\s+/g, " ").slice(0, 140)})`,
  );
  await imp.getByLabel("Choose files").setInputFiles([join(repo, "samples", "web", "agentlab_larkmail-reply_6steps.json")]);
  const fileResult = await until(async () => {
    const t =
      (await imp
        .getByLabel("Import result")
        .innerText()
        .catch(() => "")) || "";
    return /larkmail/i.test(t) ? t : null;
  }, 20_000);
  check(!!fileResult, `lab: files picked in the browser import (${(fileResult ?? "").replace(/\s+/g, " ").slice(0, 140)})`);
  await imp.getByRole("button", { name: "Close" }).click();

  // ---- Stop cancels a slow stream ----
  const slow = await startSlowEndpoint();
  try {
    const set = await setEngine(async (d) => {
      await d.getByRole("radio", { name: "OpenAI-compatible endpoint" }).check();
      await d.getByLabel("Base URL").fill(`http://127.0.0.1:${slow.port}/v1`);
      await d.getByLabel("Model", { exact: true }).fill("slow-model");
      await d.getByLabel("API key environment variable").fill("");
    });
    check(set.ok, `lab: the engine dialog saves an OpenAI-compatible endpoint ${set.error ?? ""}`);
    await openTrajectory("web", ["quillpost", "tidewell", "larkmail"]);
    await goTurn(3);
    const predsBefore = (await predictionOptions()).length;
    await page.getByRole("button", { name: "Step", exact: true }).click();
    const streaming = await until(
      async () => {
        const t = await predicted
          .getByLabel("Streaming observation")
          .innerText()
          .catch(() => "");
        return t.includes("slow line 1") ? t : null;
      },
      20_000,
      100,
    );
    check(!!streaming, "lab: the predicted pane fills as the observation streams");
    const reasoningShown = await page
      .getByRole("region", { name: "Reasoning" })
      .innerText()
      .catch(() => "");
    check(/probably/.test(reasoningShown), `lab: the reasoning streams into its panel (${reasoningShown.replace(/\s+/g, " ").slice(0, 60)})`);
    await shot("lab-streaming.png");
    const stopAt = Date.now();
    await page.getByRole("button", { name: "Stop", exact: true }).click();
    const stopped = await until(async () => (await stepStatus.innerText()).includes("stopped"), 5000, 50);
    const uiMs = Date.now() - stopAt;
    check(!!stopped && uiMs < 1500, `lab: Stop ends the step at once in the UI (${uiMs} ms)`);
    await until(() => slow.streams.at(-1)?.closed_ms, 3000, 50);
    const s = slow.streams.at(-1);
    const serverMs = s?.closed_ms ? s.closed_ms - stopAt : null;
    check(
      serverMs !== null && serverMs < 1500,
      `lab: the endpoint sees its stream closed soon after Stop (${serverMs} ms after, ${s?.chunks ?? 0} chunks sent)`,
    );
    await page.waitForTimeout(800);
    const chunksAtStop = slow.streams.at(-1)?.chunks ?? 0;
    await page.waitForTimeout(900);
    check((slow.streams.at(-1)?.chunks ?? 0) === chunksAtStop, "lab: no more chunks are read after Stop");
    const predsShown = (await predictionOptions()).length;
    // The server keeps it all across a reload.
    await reopen();
    await predicted.waitFor({ timeout: 20_000 });
    await page.waitForTimeout(1000);
    const predsAfter = (await predictionOptions()).length;
    check(
      predsShown === predsBefore && predsAfter === predsBefore,
      `lab: a stopped step stores nothing (${predsBefore} predictions before, ${predsShown} after Stop, ${predsAfter} after a reload)`,
    );

    // ---- uncertainty shading from the endpoint's log-probabilities ----
    const fastSet = await setEngine(async (d) => {
      await d.getByRole("radio", { name: "OpenAI-compatible endpoint" }).check();
      await d.getByLabel("Base URL").fill(`http://127.0.0.1:${slow.port}/v1`);
      await d.getByLabel("Model", { exact: true }).fill("fast-model");
      await d.getByLabel("API key environment variable").fill("");
      await d.getByLabel("Token log-probabilities").check();
    });
    check(fastSet.ok, `lab: the engine dialog saves an endpoint with log-probabilities ${fastSet.error ?? ""}`);
    await goTurn(2);
    const fastStatus = await stepAndWait(30_000);
    check(/tokens\/s/.test(fastStatus), `lab: a step on the endpoint finishes (${fastStatus})`);
    await predicted.getByRole("combobox", { name: "Uncertainty" }).selectOption("probability");
    const shaded = await until(async () => {
      const n = await predicted.locator(".shaded .unc").count();
      return n > 0 ? n : null;
    }, 5000);
    const unsure = await predicted.locator(".shaded .unc-4").allInnerTexts();
    const sure = await predicted.locator(".shaded .unc-0").allInnerTexts();
    check(
      !!shaded && unsure.join("").includes("unsure line 1") && !unsure.join("").includes("slow line 0") && sure.join("").includes("slow line 0"),
      `lab: shading by probability marks the unsure tokens darkest (${unsure.length} darkest runs, ${sure.length} lightest)`,
    );
    check((await predicted.getByLabel("Uncertainty legend (probability)").count()) === 1, "lab: the shading has a legend");
    await shot("lab-uncertainty.png");
    await predicted.getByRole("combobox", { name: "Uncertainty" }).selectOption("entropy");
    const noEntropy = await predicted
      .getByRole("note")
      .innerText()
      .catch(() => "");
    check(/No token entropies/.test(noEntropy), `lab: entropy shading says when the engine gave no entropies (${noEntropy})`);
    await predicted.getByRole("combobox", { name: "Uncertainty" }).selectOption("off");
  } finally {
    slow.server.closeAllConnections?.();
    slow.server.close();
  }

  // ---- the tiny real checkpoint as a local engine ----
  const modelDir = resolve(repo, "assets", "tiny-world-model");
  let inspected = "";
  const set = await setEngine(async (d) => {
    await d.getByRole("radio", { name: "Local model directory" }).check();
    await d.getByLabel("Model directory", { exact: true }).fill(modelDir);
    await d.getByRole("button", { name: "Inspect" }).click();
    inspected =
      (await until(
        async () => ((await d.getByLabel("Model directory details").count()) ? d.getByLabel("Model directory details").innerText() : null),
        20_000,
      )) ?? "";
    await d.getByLabel("Device").selectOption("cpu");
    await d.getByLabel("Dtype").selectOption("f32");
    await d.getByLabel("Max new tokens").fill("24");
    await d.getByLabel("Temperature").fill("0");
    await page.screenshot({ path: join(shots, "lab-engine-local.png") });
  });
  check(
    /architecture/.test(inspected) && /f32: /.test(inspected) && /parameters/.test(inspected),
    `lab: inspect_model_dir shows architecture, parameters and memory per dtype before loading (${inspected.replace(/\s+/g, " ").slice(0, 140)})`,
  );
  check(set.ok, `lab: the tiny checkpoint loads as a local engine on cpu, f32 ${set.error ?? ""}`);
  if (set.ok) {
    await openTrajectory("web", ["larkmail", "harbor"]);
    await goTurn(1);
    const before = (await predictionOptions()).length;
    const status = await stepAndWait(180_000);
    // A tiny random checkpoint writes no <predicted_observation>: the step still runs, is measured and stored as such.
    const generated = Number(/(\d+) generated/.exec(status)?.[1] ?? "0");
    check(
      /[1-9][\d.]* tokens\/s/.test(status) && generated > 0 && /\d+ of \d+ prompt tokens re-read/.test(status),
      `lab: the local engine generates and reports its figures (${status})`,
    );
    const after = await until(async () => {
      const n = (await predictionOptions()).length;
      return n > before ? n : null;
    }, 5000);
    check(!!after, `lab: the local engine's prediction is stored with its status (${before} → ${after})`);
    await shot("lab-step-local.png");
  }
  await useCopy();

  // ---- the branch tree in the dark theme ----
  await openTrajectory("web", ["larkmail", "harbor"]);
  const dark = page.getByRole("button", { name: "Switch to dark theme" });
  if ((await dark.count()) === 1) await dark.click();
  await page.getByRole("button", { name: "Branch tree" }).click();
  await page.waitForTimeout(800);
  await shot("lab-tree-dark.png");
  await page.getByRole("button", { name: "Turn", exact: true }).click();
  const light = page.getByRole("button", { name: "Switch to light theme" });
  if ((await light.count()) === 1) await light.click();
}

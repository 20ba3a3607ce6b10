// The screenshot view, end to end (called by e2e/run.mjs): the committed
// Android sample `settings_airplane-mode_trajectory` has a screenshot per
// state (step_NN.png, 270×600 for its 1080×2400 screen, made by
// samples/tools/android.py). Checks: the page's Content-Security-Policy lets
// images come from the app, data: and blob: only; the real pane's Screenshot
// tab draws the image (its pixels read back where the generator painted
// them); a node selected in the tree is outlined on the image at its bounds
// scaled to the image (the outline's pixels checked in a screenshot of the
// page, and absent before); hovering the image marks the topmost node under
// the pointer and selects it (the inspector follows); the action's point is drawn.
// Screenshots: e2e/screenshots/screenshot-*.png.
import { join } from "node:path";

/** The sample's title "Network & internet" on the Settings home page: its bounds in screen px (samples/tools/android.py). */
const NETWORK_TITLE = { left: 210, top: 506, right: 800, bottom: 564 };
/** The "Battery" row's title on the home page (row 4): a point inside it, in screen px. */
const BATTERY_POINT = { x: 300, y: 454 + 4 * 210 + 80 };
/** The accent colour of the light theme (--accent), which outlines the selection. */
const ACCENT = [47, 111, 222];
/** The status bar's colour in the sample screenshots. */
const STATUS_BAR = [32, 33, 36];

const near = (a, b, tolerance = 12) => a.every((v, i) => Math.abs(v - b[i]) <= tolerance);

/** The RGB of `png` (a page screenshot) at each `[x, y]`, read through a canvas in the page. */
async function pixels(page, png, points) {
  return page.evaluate(
    async ({ b64, points }) => {
      const img = new Image();
      img.src = `data:image/png;base64,${b64}`;
      await img.decode();
      const canvas = document.createElement("canvas");
      canvas.width = img.width;
      canvas.height = img.height;
      const g = canvas.getContext("2d");
      g.drawImage(img, 0, 0);
      return points.map(([x, y]) => Array.from(g.getImageData(Math.round(x), Math.round(y), 1, 1).data.slice(0, 3)));
    },
    { b64: png.toString("base64"), points },
  );
}

/** The drawn screen rectangle of the screenshot view (`data-screen`) and its scale, in the svg's px. */
async function geometry(svg) {
  const [x, y, w, h] = (await svg.getAttribute("data-screen")).split(",").map(Number);
  return { x, y, w, h, scale: Number(await svg.getAttribute("data-scale")) };
}

export async function checkScreenshots({ page, check, shots, appUrl, openTrajectory, real }) {
  // The policy as served and as the page carries it: images from the app, data: and blob: only.
  const served = (await page.request.get(new URL("/", appUrl).toString())).headers()["content-security-policy"] ?? "";
  const imgSrc = (policy) =>
    policy
      .split(";")
      .map((d) => d.trim())
      .find((d) => d.startsWith("img-src"));
  check(imgSrc(served) === "img-src 'self' data: blob:", `screenshot: the server's CSP allows blob: images and nothing more (${imgSrc(served)})`);
  const meta = await page.evaluate(() => document.querySelector('meta[http-equiv="Content-Security-Policy"]')?.getAttribute("content") ?? "");
  check(imgSrc(meta) === "img-src 'self' data: blob:", `screenshot: the page's CSP says the same (${imgSrc(meta)})`);

  if (!(await openTrajectory("android", ["settings_airplane"]))) {
    check(false, "screenshot: the Android sample with screenshots is listed");
    return;
  }
  await page.keyboard.press("Home");
  await page.waitForTimeout(500);
  const tab = real.getByRole("tab", { name: "Screenshot", exact: true });
  check((await tab.count()) === 1, "screenshot: the real pane has a Screenshot tab");
  if ((await tab.count()) !== 1) return;
  await tab.click();
  const svg = real.locator('svg[aria-label="Real screenshot"]');
  await svg.waitFor({ timeout: 10_000 });
  await page.waitForSelector('svg[aria-label="Real screenshot"][data-loaded="true"]', { timeout: 10_000 }).catch(() => {});
  check((await svg.getAttribute("data-loaded")) === "true", "screenshot: the image loaded (bytes fetched, shown from a blob: URL)");
  const href = await svg.locator("image.shot-image").getAttribute("href");
  check(href?.startsWith("blob:") === true, `screenshot: the image is a blob: URL (${href?.slice(0, 12)})`);

  const g = await geometry(svg);
  const dpr = (await page.evaluate(() => window.devicePixelRatio)) || 1;
  /** Screen px → device px of a page screenshot. */
  const at = async (x, y) => {
    const box = await svg.boundingBox();
    return [(box.x + g.x + x * g.scale) * dpr, (box.y + g.y + y * g.scale) * dpr];
  };
  const probes = async () => [
    await at((NETWORK_TITLE.left + NETWORK_TITLE.right) / 2, NETWORK_TITLE.top),
    await at(NETWORK_TITLE.left, (NETWORK_TITLE.top + NETWORK_TITLE.bottom) / 2),
    await at(540, 20),
    await at(540, 1500),
  ];
  await page.mouse.move(2, 2);
  await page.waitForTimeout(200);
  const [top0, left0, bar] = await pixels(page, await page.screenshot(), await probes());
  check(near(bar, STATUS_BAR), `screenshot: the image's pixels are drawn where the screen is (status bar ${bar})`);
  check(!near(top0, ACCENT) && !near(left0, ACCENT), `screenshot: nothing selected, no outline on the title's edges (${top0}; ${left0})`);

  // Select the title in the tree; the selection is shared by every view.
  await real.getByRole("tab", { name: "Tree", exact: true }).click();
  const row = real.locator("[role=treeitem]", { hasText: "Network & internet" }).last();
  await row.waitFor({ timeout: 10_000 });
  const nodeId = await row.getAttribute("data-node-id");
  await row.click();
  await tab.click();
  await page.waitForSelector('svg[aria-label="Real screenshot"][data-loaded="true"]', { timeout: 10_000 }).catch(() => {});
  await page.mouse.move(2, 2);
  await page.waitForTimeout(300);
  const selected = real.locator("rect.shot-selected");
  check(
    (await selected.getAttribute("data-selected").catch(() => null)) === nodeId,
    `screenshot: the node selected in the tree (${nodeId}) is outlined on the image`,
  );
  const shot = await page.screenshot();
  const [top, left, , outside] = await pixels(page, shot, await probes());
  check(near(top, ACCENT) && near(left, ACCENT), `screenshot: the outline's pixels lie on the node's bounds scaled to the image (top ${top}, left ${left})`);
  const rect = {
    x: Number(await selected.getAttribute("x")),
    y: Number(await selected.getAttribute("y")),
    w: Number(await selected.getAttribute("width")),
  };
  const expected = { x: g.x + NETWORK_TITLE.left * g.scale, y: g.y + NETWORK_TITLE.top * g.scale, w: (NETWORK_TITLE.right - NETWORK_TITLE.left) * g.scale };
  check(
    Math.abs(rect.x - expected.x) < 1 && Math.abs(rect.y - expected.y) < 1 && Math.abs(rect.w - expected.w) < 1,
    `screenshot: the outline is the bounds [210,506][800,564] × ${g.scale} (${rect.x.toFixed(1)}, ${rect.y.toFixed(1)}, ${rect.w.toFixed(1)} wide)`,
  );
  await page.screenshot({ path: join(shots, "screenshot-selected.png") });
  // Elsewhere on the image, no accent: the outline is drawn only at the selection.
  check(!near(outside, ACCENT), `screenshot: no outline away from the selected node (${outside})`);

  // Hover the image: the topmost node under the pointer is selected (no click), and the inspector follows.
  const [hx, hy] = (await at(BATTERY_POINT.x, BATTERY_POINT.y)).map((v) => v / dpr);
  await page.mouse.move(hx, hy);
  await page.waitForTimeout(300);
  const hovered = real.locator("rect.shot-hover");
  const hoverTitle = (await hovered.count()) === 1 ? await hovered.locator("title").textContent() : null;
  check(hoverTitle?.includes("Battery") === true, `screenshot: hovering the image marks the topmost node under the pointer (${hoverTitle})`);
  const selectedTitle = await selected.locator("title").textContent();
  check(selectedTitle?.includes("Battery") === true, `screenshot: hovering the image selects that node (${selectedTitle})`);
  const inspector = await page.getByRole("region", { name: "Selected node" }).innerText();
  check(inspector.includes("Battery"), "screenshot: the node inspector shows the node hovered on the image");
  await page.screenshot({ path: join(shots, "screenshot-hover.png") });

  // Turn 1: the tap on the "Network & internet" row is drawn at its point.
  await page.keyboard.press("ArrowRight");
  await page.waitForTimeout(800);
  const point = await real
    .locator(".wpoint")
    .getAttribute("data-point", { timeout: 5000 })
    .catch(() => null);
  check(point === "540,559", `screenshot: where the action landed is drawn on the image (point ${point})`);
  await page.screenshot({ path: join(shots, "screenshot-landing.png") });
}

// Writes the dev mock's trajectory fixtures (src/mocks/fixtures/*.json) as
// native Worldloom trajectory files (`{"format": "worldloom-trajectory",
// "version": 1, "trajectories": [...]}`, see crates/worldloom-core/src/native.rs)
// so `worldloom serve` can import them next to samples/. Their ids start with
// `e2e-`. Returns the written paths.
import { mkdtempSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const ACTION_FORMAT = { web: "browsergym", os: "pyautogui", android: "android-json", terminal: "shell" };

function observation(o) {
  const [main, ...rest] = o.views;
  const out = { representation: main.representation, text: main.text };
  if (rest.length) out.views = rest.map((v) => ({ name: v.name, representation: v.representation, text: v.text }));
  if (o.meta && Object.keys(o.meta).length) out.metadata = o.meta;
  return out;
}

function prediction(p, id) {
  const main = p.views[0];
  const think = p.reasoning ? `<think>${p.reasoning}</think>\n` : "";
  return {
    id,
    engine: p.engine,
    ...(p.seed !== undefined ? { seed: p.seed } : {}),
    context: "teacher-forced",
    raw_output: `${think}<predicted_observation>\n${main.text}\n</predicted_observation>`,
    observation: main.text,
    status: "ok",
    representation: main.representation,
  };
}

/** Converts one mock fixture to a native trajectory. */
export function toNative(f) {
  const nodes = [{ id: 0, real: observation(f.initial) }];
  const edges = [];
  f.turns.forEach((t, i) => {
    const node = { id: i + 1, parent_edge: i, real: observation(t.real) };
    if (t.predictions.length) node.predictions = t.predictions.map(prediction);
    nodes.push(node);
    edges.push({ id: i, from: i, to: i + 1, action: { raw: t.action, format: ACTION_FORMAT[f.domain] ?? "text" } });
  });
  return { id: `e2e-${f.id}`, domain: f.domain, source: { format: "native" }, goal: f.goal ?? null, nodes, edges };
}

/** A web trajectory whose accessibility tree has `count` lines (rows of four cells), for the windowed list. */
export function largeTreeFixture(count = 20000) {
  const lines = ["RootWebArea 'Large inventory table', focused"];
  let bid = 1;
  while (lines.length < count) {
    lines.push(`\t[${bid++}] row 'Row ${lines.length}', visible`);
    for (let c = 0; c < 4 && lines.length < count; c++) lines.push(`\t\t[${bid++}] cell 'r${lines.length} c${c}', visible`);
  }
  const real = lines.join("\n");
  const predicted = lines.map((l, i) => (i % 997 === 5 ? l.replace("visible", "visible, focused") : l)).join("\n");
  return {
    id: "large-tree",
    domain: "web",
    goal: "Scroll a very large accessibility tree.",
    initial: { views: [{ name: "axtree_txt", representation: "axtree", text: real }] },
    turns: [
      {
        action: "scroll(0, 800)",
        real: { views: [{ name: "axtree_txt", representation: "axtree", text: real }] },
        predictions: [{ engine: "copy", seed: 0, views: [{ name: "axtree_txt", representation: "axtree", text: predicted }] }],
      },
    ],
  };
}

export function writeNativeFixtures(fixtureDir) {
  const out = mkdtempSync(join(tmpdir(), "worldloom-e2e-fixtures-"));
  const paths = [];
  const fixtures = readdirSync(fixtureDir)
    .filter((n) => n.endsWith(".json"))
    .sort()
    .map((name) => JSON.parse(readFileSync(join(fixtureDir, name), "utf8")));
  fixtures.push(largeTreeFixture(20000));
  for (const f of fixtures) {
    const path = join(out, `e2e-${f.id}.json`);
    writeFileSync(path, `${JSON.stringify({ format: "worldloom-trajectory", version: 1, trajectories: [toNative(f)] }, null, 2)}\n`);
    paths.push(path);
  }
  return paths;
}

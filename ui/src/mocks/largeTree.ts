/**
 * A generated web state with a very large accessibility tree, for the
 * windowed tree list: the text and its tree are written together (one node
 * per line under a synthetic document root, the shape `worldloom-obs` gives
 * BrowserGym text), so nothing here parses. Dev and tests only.
 */
import type { UiNode, UiTree } from "../api/types";

/** The text and tree of a large state, and a prediction differing in a few focus flags. */
export interface LargeTree {
  text: string;
  tree: UiTree;
  predictedText: string;
  predictedTree: UiTree;
}

interface Line {
  depth: number;
  bid: number | null;
  role: string;
  name: string;
  props: string[];
}

function lineText(l: Line): string {
  const head = l.bid === null ? `${l.role} '${l.name}'` : `[${l.bid}] ${l.role} '${l.name}'`;
  return `${"\t".repeat(l.depth)}${[head, ...l.props].join(", ")}`;
}

function treeOf(lines: Line[]): UiTree {
  const nodes: UiNode[] = [{ id: 0, parent: null, children: [], depth: 0, role: "document", name: "", states: {}, synthetic: true }];
  const stack: number[] = [0];
  for (const l of lines) {
    const id = nodes.length;
    const parent = stack[l.depth]!;
    const focused = l.props.includes("focused");
    nodes.push({
      id,
      parent,
      children: [],
      depth: l.depth + 1,
      role: l.role,
      name: l.name,
      key: l.bid === null ? null : String(l.bid),
      states: focused ? { focused: true } : {},
    });
    nodes[parent]!.children.push(id);
    stack[l.depth + 1] = id;
    stack.length = l.depth + 2;
  }
  return { representation: "axtree", nodes };
}

/** A state of `count` lines: a focused root area, rows of four cells. */
export function largeTree(count: number): LargeTree {
  const lines: Line[] = [{ depth: 0, bid: null, role: "RootWebArea", name: "Large inventory table", props: ["focused"] }];
  let bid = 1;
  while (lines.length < count) {
    lines.push({ depth: 1, bid: bid++, role: "row", name: `Row ${lines.length}`, props: ["visible"] });
    for (let c = 0; c < 4 && lines.length < count; c++) lines.push({ depth: 2, bid: bid++, role: "cell", name: `r${lines.length} c${c}`, props: ["visible"] });
  }
  const predicted = lines.map((l, i) => (i % 997 === 5 ? { ...l, props: ["visible", "focused"] } : l));
  return {
    text: lines.map(lineText).join("\n"),
    tree: treeOf(lines),
    predictedText: predicted.map(lineText).join("\n"),
    predictedTree: treeOf(predicted),
  };
}

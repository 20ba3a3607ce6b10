/**
 * Dev-only stand-ins for the `worldloom-obs` parsers and tree diff, so the UI
 * can be developed and tested before (and without) the server. They follow
 * the same tree shape (`UiTree`, flat pre-order arena) but are deliberately
 * simple: HTML and XML through `DOMParser`, BrowserGym accessibility-tree
 * text by tab indentation, alignment by stable key then by role and name.
 * Never part of the production bundle.
 */
import type { Attribute, BoundsPx, DiffStatus, FieldChange, NodeStates, Representation, TreeDiff, UiNode, UiTree } from "../api/types";

/** States with nothing stated. */
function noStates(): NodeStates {
  return { checked: null, selected: null, focused: null, enabled: null, expanded: null, editable: null };
}

function bounds(left: number, top: number, right: number, bottom: number): BoundsPx {
  const anomalies: string[] = [];
  if (left < 0 || top < 0) anomalies.push("negative");
  if (right < left || bottom < top) anomalies.push("inverted");
  else if (right === left || bottom === top) anomalies.push("empty");
  return { left, top, right, bottom, anomalies };
}

function lineStarts(text: string): number[] {
  const starts = [0];
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) === 10) starts.push(i + 1);
  return starts;
}

function lineOf(starts: number[], offset: number): number {
  let lo = 0;
  let hi = starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (starts[mid]! <= offset) lo = mid;
    else hi = mid - 1;
  }
  return lo + 1;
}

class Builder {
  nodes: UiNode[] = [];
  constructor(readonly representation: Representation) {}
  push(parent: number | null, role: string, fields: Partial<UiNode> = {}): number {
    const id = this.nodes.length;
    const depth = parent === null ? 0 : this.nodes[parent]!.depth + 1;
    this.nodes.push({
      id,
      parent,
      children: [],
      depth,
      role,
      name: "",
      value: null,
      key: null,
      attributes: [],
      states: noStates(),
      bounds_px: null,
      span: null,
      synthetic: false,
      ...fields,
    });
    if (parent !== null) this.nodes[parent]!.children.push(id);
    return id;
  }
  tree(): UiTree {
    return { representation: this.representation, nodes: this.nodes };
  }
}

function attrsOf(el: Element): Attribute[] {
  return Array.from(el.attributes).map((a) => ({ name: a.name, value: a.value }));
}

function ownText(el: Element): string {
  let s = "";
  for (const c of Array.from(el.childNodes)) if (c.nodeType === 3) s += c.textContent ?? "";
  return s.replace(/\s+/g, " ").trim();
}

/** Finds where `<tag` occurrences start, in order, to give elements approximate source spans. */
function tagOffsets(text: string): Map<string, number[]> {
  const out = new Map<string, number[]>();
  const re = /<([a-zA-Z][\w:.-]*)/g;
  let m: RegExpExecArray | null;
  while ((m = re.exec(text))) {
    const tag = m[1]!.toLowerCase();
    const list = out.get(tag) ?? [];
    list.push(m.index);
    out.set(tag, list);
  }
  return out;
}

function bool(v: string | null): boolean | null {
  return v === null ? null : v === "true";
}

function parseAndroidBounds(v: string | null): BoundsPx | null {
  const m = v?.match(/\[(-?\d+),(-?\d+)\]\[(-?\d+),(-?\d+)\]/);
  if (!m) return null;
  return bounds(+m[1]!, +m[2]!, +m[3]!, +m[4]!);
}

function parseXmlLike(text: string, representation: Representation): UiTree {
  const isHtml = representation === "html";
  const doc = new DOMParser().parseFromString(text, isHtml ? "text/html" : "application/xml");
  const b = new Builder(representation);
  const starts = lineStarts(text);
  const offsets = tagOffsets(text);
  const used = new Map<string, number>();
  const stack: Array<[Element, number | null]> = [[doc.documentElement, null]];
  while (stack.length) {
    const [el, parent] = stack.pop()!;
    const tag = isHtml ? el.localName.toLowerCase() : el.tagName;
    const idx = used.get(tag.toLowerCase()) ?? 0;
    used.set(tag.toLowerCase(), idx + 1);
    const start = offsets.get(tag.toLowerCase())?.[idx];
    const attrs = attrsOf(el);
    const get = (n: string) => el.getAttribute(n);
    const fields: Partial<UiNode> = { attributes: attrs };
    if (start !== undefined) fields.span = { start_byte: start, end_byte: start + 1, line: lineOf(starts, start) };
    let role = tag;
    if (representation === "android-xml") {
      role = get("class") ?? tag;
      fields.name = get("text") || get("content-desc") || "";
      fields.key = get("resource-id") || null;
      fields.bounds_px = parseAndroidBounds(get("bounds"));
      const states: NodeStates = noStates();
      if (get("checkable") === "true") states.checked = bool(get("checked"));
      if (get("focusable") === "true") states.focused = bool(get("focused"));
      if (get("selected") === "true") states.selected = true;
      if (get("enabled") === "false") states.enabled = false;
      fields.states = states;
      if (tag === "hierarchy") fields.synthetic = false;
    } else if (representation === "os-xml") {
      fields.name = get("name") ?? "";
      const pos = get("cp:screencoord")?.match(/\((-?\d+),\s*(-?\d+)\)/);
      const size = get("cp:size")?.match(/\((-?\d+),\s*(-?\d+)\)/);
      if (pos && size) {
        fields.bounds_px = bounds(+pos[1]!, +pos[2]!, +pos[1]! + +size[1]!, +pos[2]! + +size[2]!);
      }
      const states: NodeStates = noStates();
      if (get("st:checkable") === "true") states.checked = bool(get("st:checked")) ?? false;
      if (get("st:focused") === "true") states.focused = true;
      if (get("st:enabled") === "false") states.enabled = false;
      fields.states = states;
      const txt = ownText(el);
      if (txt) fields.value = txt;
    } else {
      fields.name = ownText(el) || get("aria-label") || get("alt") || get("placeholder") || "";
      fields.key = get("bid") ?? get("id") ?? null;
      if (get("value") !== null) fields.value = get("value");
      const states: NodeStates = noStates();
      if (el.hasAttribute("checked")) states.checked = true;
      if (el.hasAttribute("disabled")) states.enabled = false;
      fields.states = states;
    }
    const id = b.push(parent, role, fields);
    const kids = Array.from(el.children);
    for (let i = kids.length - 1; i >= 0; i--) stack.push([kids[i]!, id]);
  }
  return b.tree();
}

/** BrowserGym accessibility-tree text: `\t*[bid] role 'name', prop, prop=value`. */
function parseAxtree(text: string): UiTree {
  const b = new Builder("axtree");
  const root = b.push(null, "document", { synthetic: true });
  const open: number[] = [root];
  let offset = 0;
  text.split("\n").forEach((line, i) => {
    const start = offset;
    offset += line.length + 1;
    if (!line.trim()) return;
    const depth = line.match(/^\t*/)![0].length;
    const m = line.trim().match(/^(?:\[([^\]]+)\]\s+)?(\S+)\s*(?:'((?:[^'\\]|\\.)*)')?(.*)$/);
    if (!m) return;
    const [, bid, role, name, rest] = m;
    const attributes: Attribute[] = [];
    const states: NodeStates = noStates();
    let value: string | undefined;
    for (const prop of (rest ?? "")
      .split(/,\s*/)
      .map((s) => s.trim())
      .filter(Boolean)) {
      const [k, ...v] = prop.split("=");
      const val = v.join("=").replace(/^'|'$/g, "");
      attributes.push({ name: k!.trim(), value: val });
      if (k === "value") value = val;
      if (k === "focused") states.focused = true;
      if (k === "checked") states.checked = val === "true";
    }
    const valueMatch = (rest ?? "").match(/value='((?:[^'\\]|\\.)*)'/);
    if (valueMatch) value = valueMatch[1];
    const parent = open[Math.min(depth, open.length - 1)]!;
    const id = b.push(parent, role!, {
      name: name ?? "",
      key: bid ?? null,
      value: value ?? null,
      attributes,
      states,
      span: { start_byte: start, end_byte: start + line.length, line: i + 1 },
    });
    open.length = Math.min(depth, open.length - 1) + 1;
    open.push(id);
  });
  return b.tree();
}

/** Parses observation text into a tree the way the server would (approximately). */
export function mockParse(text: string, representation: Representation): UiTree | null {
  switch (representation) {
    case "html":
    case "os-xml":
    case "android-xml":
      return parseXmlLike(text, representation);
    case "axtree":
      return parseAxtree(text);
    default:
      return null;
  }
}

/**
 * Aligns two trees: nodes with equal stable keys first, then the remaining
 * nodes under aligned parents by role and name, then by role in order.
 */
export function mockDiff(real: UiTree, predicted: UiTree): TreeDiff {
  const pairs = new Map<number, number>();
  const taken = new Set<number>();
  // Keys that occur once on each side are stable; repeated ones (Android
  // `android:id/title` in every row) are aligned structurally below.
  const count = (t: UiTree) => {
    const c = new Map<string, number>();
    for (const n of t.nodes) if (n.key) c.set(`${n.role}|${n.key}`, (c.get(`${n.role}|${n.key}`) ?? 0) + 1);
    return c;
  };
  const realCount = count(real);
  const predCount = count(predicted);
  const byKey = new Map<string, number>();
  for (const n of predicted.nodes) if (n.key && predCount.get(`${n.role}|${n.key}`) === 1) byKey.set(`${n.role}|${n.key}`, n.id);
  for (const n of real.nodes) {
    const k = `${n.role}|${n.key}`;
    const m = n.key && realCount.get(k) === 1 ? byKey.get(k) : undefined;
    if (m !== undefined && !taken.has(m)) {
      pairs.set(n.id, m);
      taken.add(m);
    }
  }
  if (!pairs.has(0) && !taken.has(0)) {
    pairs.set(0, 0);
    taken.add(0);
  }
  for (const n of real.nodes) {
    const p = pairs.get(n.id);
    if (p === undefined) continue;
    const candidates = predicted.nodes[p]!.children.filter((c) => !taken.has(c));
    for (const child of n.children) {
      if (pairs.has(child)) continue;
      const rc = real.nodes[child]!;
      const exact = candidates.find((c) => !taken.has(c) && predicted.nodes[c]!.role === rc.role && predicted.nodes[c]!.name === rc.name);
      const loose = exact ?? candidates.find((c) => !taken.has(c) && predicted.nodes[c]!.role === rc.role && !predicted.nodes[c]!.key === !rc.key);
      if (loose !== undefined) {
        pairs.set(child, loose);
        taken.add(loose);
      }
    }
  }
  const realStatus: DiffStatus[] = real.nodes.map((n) => {
    const p = pairs.get(n.id);
    if (p === undefined) return "removed";
    return fieldChanges(n, predicted.nodes[p]!).length === 0 ? "unchanged" : "changed";
  });
  const predStatus: DiffStatus[] = predicted.nodes.map(() => "added");
  for (const [r, p] of pairs) predStatus[p] = realStatus[r]!;
  const real_changes = real.nodes.map((n) => {
    const p = pairs.get(n.id);
    return p === undefined ? [] : fieldChanges(n, predicted.nodes[p]!);
  });
  return { real: realStatus, predicted: predStatus, pairs: Array.from(pairs.entries()), real_changes };
}

/** The fields that differ between two aligned nodes, named like the back end's (`name`, `state:checked`, `attr:text`). */
function fieldChanges(r: UiNode, p: UiNode): FieldChange[] {
  const out: FieldChange[] = [];
  const cmp = (field: string, a: string | null, b: string | null) => {
    if (a !== b) out.push({ field, real: a, predicted: b });
  };
  cmp("name", r.name, p.name);
  cmp("value", r.value, p.value);
  for (const k of ["checked", "selected", "focused", "enabled", "expanded", "editable"] as const) {
    cmp(`state:${k}`, r.states[k] === null ? null : String(r.states[k]), p.states[k] === null ? null : String(p.states[k]));
  }
  const b = (n: UiNode) => (n.bounds_px ? `[${n.bounds_px.left},${n.bounds_px.top}][${n.bounds_px.right},${n.bounds_px.bottom}]` : null);
  cmp("bounds", b(r), b(p));
  const names = new Set([...r.attributes.map((a) => a.name), ...p.attributes.map((a) => a.name)]);
  for (const name of names) {
    if (name === "bid" || name === "index") continue;
    cmp(`attr:${name}`, r.attributes.find((a) => a.name === name)?.value ?? null, p.attributes.find((a) => a.name === name)?.value ?? null);
  }
  return out;
}

/**
 * Turns an observation's HTML (untrusted: predicted HTML above all) into the
 * `srcdoc` of a sandboxed render frame.
 *
 * Three independent layers keep it inert:
 * 1. the frame itself: `<iframe sandbox="">` (no `allow-scripts`, no
 *    `allow-same-origin`, no forms, popups or top navigation);
 * 2. a Content-Security-Policy `<meta>` as the first element of `<head>` that
 *    forbids every load except inline styles and `data:` images;
 * 3. this module's rewrite of the copy: scripts, `<base>`, `<meta http-equiv>`,
 *    `<link>`, frames, objects and embeds go; event-handler attributes go; every
 *    URL-bearing attribute (`src`, `href`, `action`, `srcset`, `xlink:href`…)
 *    is renamed to `data-wl-<name>` so it is kept for reading but loads and
 *    navigates nowhere; CSS `url(…)` and `@import` pointing anywhere but
 *    `data:` are cut.
 *
 * Diff outlines need no script either: elements get `data-wl-diff` and
 * `data-wl-node` attributes and an injected style sheet outlines them.
 */
import type { DiffStatus, UiTree } from "../api/types";

/** The policy of every render frame: nothing may load but inline style and `data:` images. */
export const RENDER_CSP = [
  "default-src 'none'",
  "script-src 'none'",
  "style-src 'unsafe-inline'",
  "img-src data:",
  "font-src 'none'",
  "media-src 'none'",
  "connect-src 'none'",
  "frame-src 'none'",
  "child-src 'none'",
  "object-src 'none'",
  "form-action 'none'",
  "base-uri 'none'",
].join("; ");

/** Attributes whose value is a URL (HTML, SVG, legacy). Renamed to `data-wl-<name>`. */
const URL_ATTRIBUTES = new Set([
  "src",
  "srcset",
  "href",
  "xlink:href",
  "action",
  "formaction",
  "background",
  "poster",
  "data",
  "codebase",
  "cite",
  "longdesc",
  "lowsrc",
  "dynsrc",
  "manifest",
  "ping",
  "archive",
  "classid",
  "profile",
  "icon",
  "imagesrcset",
  "attributionsrc",
]);

/** Elements removed outright (with their content). */
const REMOVED_ELEMENTS = ["script", "base", "link", "meta[http-equiv]", "portal", "applet", "frameset"];

/** Elements replaced by a labelled placeholder box, so layout keeps a trace of them. */
const PLACEHOLDER_ELEMENTS = ["iframe", "frame", "object", "embed"];

/** The outline rules appended to every render (colours match the app's legend). */
export const DIFF_OUTLINE_CSS = `
[data-wl-diff="changed"]{outline:2px solid #d08700 !important;outline-offset:-2px !important}
[data-wl-diff="moved"]{outline:2px dotted #7c5cd6 !important;outline-offset:-2px !important}
[data-wl-diff="added"]{outline:2px solid #1f9d55 !important;outline-offset:-2px !important;background-color:rgba(31,157,85,.08) !important}
[data-wl-diff="removed"]{outline:2px dashed #d03b3b !important;outline-offset:-2px !important;background-color:rgba(208,59,59,.07) !important}
[data-wl-selected]{outline:3px solid #2f6fde !important;outline-offset:0 !important;box-shadow:0 0 0 5px rgba(47,111,222,.28) !important}
[data-wl-target]{outline:3px solid #d6336c !important;outline-offset:2px !important;box-shadow:0 0 0 6px rgba(214,51,108,.3) !important}
[data-wl-placeholder]{display:inline-block;min-width:120px;min-height:40px;padding:4px 6px;border:1px dashed #888;color:#666;font:12px/1.3 system-ui,sans-serif;background:repeating-linear-gradient(45deg,transparent,transparent 6px,rgba(128,128,128,.08) 6px,rgba(128,128,128,.08) 12px)}
`;

/** Options for {@link buildSrcdoc}. */
export interface SrcdocOptions {
  /** The parsed tree of the same HTML (from `worldloom-obs`), to key elements by node id. */
  tree?: UiTree | null;
  /** Diff status per tree node id (this side's statuses). */
  statuses?: readonly DiffStatus[] | null;
  /** Node id to mark as selected. */
  selectedId?: number | null;
  /** Node id the turn's action landed on, marked `data-wl-target`. */
  landingId?: number | null;
  /** The action's bid: the first element with this `bid` attribute is marked when no keyed element was. */
  targetBid?: string | null;
}

/** The result: the srcdoc string and what was neutralised (for the UI and tests). */
export interface Srcdoc {
  html: string;
  /** Count of removed or rewritten hostile constructs, by kind. */
  neutralised: Record<string, number>;
  /** Number of elements that received a `data-wl-node` key. */
  keyedElements: number;
}

function bump(counts: Record<string, number>, kind: string, by = 1): void {
  counts[kind] = (counts[kind] ?? 0) + by;
}

/** Cuts CSS `url(…)` references that are not `data:` and every `@import`. */
export function neutraliseCss(css: string, counts?: Record<string, number>): string {
  let out = css.replace(/@import[^;]*;?/gi, () => {
    if (counts) bump(counts, "css-import");
    return "";
  });
  out = out.replace(/url\(\s*(['"]?)(.*?)\1\s*\)/gi, (whole, _q: string, target: string) => {
    if (/^data:/i.test(target.trim())) return whole;
    if (counts) bump(counts, "css-url");
    return "none";
  });
  // `image-set()` and `-webkit-image-set()` take bare strings as URLs.
  out = out.replace(/(-webkit-)?image-set\([^)]*\)/gi, () => {
    if (counts) bump(counts, "css-url");
    return "none";
  });
  return out;
}

/** Elements of `root` in document order (pre-order), `root` first. */
function elementsInOrder(doc: Document): Element[] {
  const out: Element[] = [];
  const walker = doc.createTreeWalker(doc.documentElement, 0x1 /* NodeFilter.SHOW_ELEMENT */);
  let node: Node | null = walker.currentNode;
  while (node) {
    out.push(node as Element);
    node = walker.nextNode();
  }
  return out;
}

/**
 * Keys DOM elements to tree nodes: by `bid` when both carry one, otherwise in
 * document order by tag name with a short look-ahead (the tree may hold
 * synthetic nodes, e.g. an iframe's inner document, that the DOM lacks).
 */
export function keyElements(elements: Element[], tree: UiTree): Map<Element, number> {
  const out = new Map<Element, number>();
  const order = tree.nodes.filter((n) => !n.synthetic);
  const position = new Map<number, number>();
  order.forEach((n, i) => position.set(n.id, i));
  const byBid = new Map<string, number>();
  for (const n of order) {
    const bid = n.attributes?.find((a) => a.name === "bid")?.value;
    if (bid !== undefined && !byBid.has(bid)) byBid.set(bid, n.id);
  }
  let j = 0;
  for (const el of elements) {
    const bid = el.getAttribute("bid");
    const viaBid = bid !== null ? byBid.get(bid) : undefined;
    if (viaBid !== undefined) {
      out.set(el, viaBid);
      j = (position.get(viaBid) ?? j) + 1;
      continue;
    }
    const tag = el.localName.toLowerCase();
    for (let k = j; k < Math.min(j + 12, order.length); k++) {
      if (order[k]!.role.toLowerCase() === tag) {
        out.set(el, order[k]!.id);
        j = k + 1;
        break;
      }
    }
  }
  return out;
}

/**
 * Builds the neutralised srcdoc for `html`. Works wherever `DOMParser`
 * exists (browsers, jsdom); a parsed document is inert (no scripts run, no
 * resources load while it is rewritten).
 */
export function buildSrcdoc(html: string, options: SrcdocOptions = {}): Srcdoc {
  const doc = new DOMParser().parseFromString(html, "text/html");
  const counts: Record<string, number> = {};
  let keyedElements = 0;

  // 0. The page's own marks never pass for the studio's.
  for (const el of Array.from(doc.querySelectorAll("[data-wl-target]"))) el.removeAttribute("data-wl-target");

  // 1. Key elements to tree nodes and mark diff statuses before anything moves.
  if (options.tree) {
    const keys = keyElements(elementsInOrder(doc), options.tree);
    for (const [el, id] of keys) {
      el.setAttribute("data-wl-node", String(id));
      keyedElements += 1;
      const status = options.statuses?.[id];
      if (status && status !== "unchanged") el.setAttribute("data-wl-diff", status);
      if (options.selectedId === id) el.setAttribute("data-wl-selected", "");
      if (options.landingId != null && options.landingId === id) el.setAttribute("data-wl-target", "");
    }
  }
  if (options.targetBid != null && !doc.querySelector("[data-wl-target]")) {
    const bid = options.targetBid;
    const el = Array.from(doc.querySelectorAll("[bid]")).find((e) => e.getAttribute("bid") === bid);
    el?.setAttribute("data-wl-target", "");
  }

  // 2. Remove active and loading elements.
  for (const selector of REMOVED_ELEMENTS) {
    for (const el of Array.from(doc.querySelectorAll(selector))) {
      bump(counts, selector === "meta[http-equiv]" ? "meta-http-equiv" : selector);
      el.remove();
    }
  }
  for (const selector of PLACEHOLDER_ELEMENTS) {
    for (const el of Array.from(doc.querySelectorAll(selector))) {
      bump(counts, selector);
      const box = doc.createElement("div");
      box.setAttribute("data-wl-placeholder", "");
      for (const name of ["data-wl-node", "data-wl-diff", "data-wl-selected", "data-wl-target", "bid", "style", "width", "height"]) {
        const v = el.getAttribute(name);
        if (v !== null) box.setAttribute(name, name === "style" ? neutraliseCss(v) : v);
      }
      const from = el.getAttribute("src") ?? (el.hasAttribute("srcdoc") ? "inline document" : (el.getAttribute("data") ?? ""));
      box.textContent = `${selector}${from ? ` (${from.slice(0, 80)})` : ""} — not loaded`;
      el.replaceWith(box);
    }
  }
  // SVG animations that could rewrite a link target.
  for (const el of Array.from(doc.querySelectorAll("set, animate, animateTransform, animateMotion"))) {
    const target = (el.getAttribute("attributeName") ?? "").toLowerCase();
    if (target.endsWith("href") || target === "src") {
      bump(counts, "svg-animate-href");
      el.remove();
    }
  }

  // 3. Rewrite attributes on every remaining element.
  for (const el of elementsInOrder(doc)) {
    for (const a of Array.from(el.attributes)) {
      const name = a.name.toLowerCase();
      if (name.startsWith("on")) {
        bump(counts, "event-handler");
        el.removeAttribute(a.name);
      } else if (URL_ATTRIBUTES.has(name) || name.endsWith(":href")) {
        const keepDataImage = name === "src" && el.localName === "img" && /^\s*data:image\//i.test(a.value);
        if (keepDataImage) continue;
        bump(counts, /^\s*javascript:/i.test(a.value) ? "javascript-url" : `url-attribute`);
        el.removeAttribute(a.name);
        el.setAttribute(`data-wl-${name.replace(/[^a-z0-9-]/g, "-")}`, a.value);
      } else if (name === "style") {
        const css = neutraliseCss(a.value, counts);
        if (css !== a.value) el.setAttribute(a.name, css);
      } else if (name === "srcdoc" || name === "http-equiv" || name === "target" || name === "autofocus") {
        bump(counts, name);
        el.removeAttribute(a.name);
      }
    }
    if (el.localName === "style") {
      const css = el.textContent ?? "";
      const safe = neutraliseCss(css, counts);
      if (safe !== css) el.textContent = safe;
    }
  }

  // 4. Policy first in <head>, outline rules last.
  const head = doc.head ?? doc.documentElement.insertBefore(doc.createElement("head"), doc.body);
  const csp = doc.createElement("meta");
  csp.setAttribute("http-equiv", "Content-Security-Policy");
  csp.setAttribute("content", RENDER_CSP);
  const referrer = doc.createElement("meta");
  referrer.setAttribute("name", "referrer");
  referrer.setAttribute("content", "no-referrer");
  head.insertBefore(referrer, head.firstChild);
  head.insertBefore(csp, head.firstChild);
  const style = doc.createElement("style");
  style.setAttribute("data-wl-style", "");
  style.textContent = DIFF_OUTLINE_CSS;
  head.appendChild(style);

  return { html: `<!DOCTYPE html>\n${doc.documentElement.outerHTML}`, neutralised: counts, keyedElements };
}

import { describe, expect, it } from "vitest";
import hostileFixture from "../mocks/fixtures/web-hostile.json";
import { TREES } from "../mocks/golden";
import { buildSrcdoc, neutraliseCss, RENDER_CSP } from "./srcdoc";

const hostile = hostileFixture.turns[0]!.real.views[0]!.text;

function parse(html: string): Document {
  return new DOMParser().parseFromString(html, "text/html");
}

describe("buildSrcdoc on a hostile page", () => {
  const out = buildSrcdoc(hostile);
  const doc = parse(out.html);

  it("puts the no-load policy first in <head>", () => {
    const first = doc.head.firstElementChild!;
    expect(first.tagName).toBe("META");
    expect(first.getAttribute("http-equiv")).toBe("Content-Security-Policy");
    expect(first.getAttribute("content")).toBe(RENDER_CSP);
    expect(RENDER_CSP).toContain("default-src 'none'");
    expect(RENDER_CSP).toContain("script-src 'none'");
    expect(RENDER_CSP).toContain("img-src data:");
    // Only our two meta elements remain: the policy and the referrer policy.
    expect(doc.querySelectorAll("meta[http-equiv]").length).toBe(1);
  });

  it("removes scripts (HTML and SVG), base, link and meta refresh", () => {
    expect(doc.querySelectorAll("script").length).toBe(0);
    expect(doc.querySelector("base")).toBeNull();
    expect(doc.querySelector("link")).toBeNull();
    expect(out.html).not.toMatch(/http-equiv="refresh"/i);
    expect(out.neutralised.script).toBe(3);
    expect(out.neutralised["meta-http-equiv"]).toBe(1);
    expect(out.neutralised.base).toBe(1);
    expect(out.neutralised.link).toBe(3);
  });

  it("leaves no event handler and no javascript: or external URL in a live attribute", () => {
    for (const el of Array.from(doc.querySelectorAll("*"))) {
      for (const a of Array.from(el.attributes)) {
        expect(a.name.toLowerCase().startsWith("on"), `${el.tagName} ${a.name}`).toBe(false);
        if (!a.name.startsWith("data-wl-") && a.name !== "content") {
          expect(a.value, `${el.tagName} ${a.name}`).not.toMatch(/javascript:|127\.0\.0\.1/i);
        }
      }
    }
    // body onload, two img onerror, input onfocus, svg onload.
    expect(out.neutralised["event-handler"]).toBe(5);
    expect(out.neutralised["javascript-url"]).toBe(2);
  });

  it("keeps URLs readable as data-wl-* attributes", () => {
    const link = doc.getElementById("extlink")!;
    expect(link.hasAttribute("href")).toBe(false);
    expect(link.getAttribute("data-wl-href")).toBe("http://127.0.0.1:47931/link");
    const form = doc.querySelector("form")!;
    expect(form.hasAttribute("action")).toBe(false);
    expect(doc.querySelector("button")!.hasAttribute("formaction")).toBe(false);
    expect(doc.querySelector("table")!.hasAttribute("background")).toBe(false);
    expect(doc.querySelector("video")!.hasAttribute("poster")).toBe(false);
    expect(doc.querySelector("input")!.hasAttribute("autofocus")).toBe(false);
  });

  it("replaces frames, objects and embeds with inert placeholders", () => {
    expect(doc.querySelectorAll("iframe, frame, object, embed").length).toBe(0);
    const boxes = Array.from(doc.querySelectorAll("[data-wl-placeholder]")).map((b) => b.textContent);
    expect(boxes).toEqual([
      "iframe (http://127.0.0.1:47931/frame.html) — not loaded",
      "iframe (inline document) — not loaded",
      "object (http://127.0.0.1:47931/object.swf) — not loaded",
      "embed (http://127.0.0.1:47931/embed.swf) — not loaded",
    ]);
  });

  it("cuts external CSS loads and removes SVG href animations", () => {
    const css = Array.from(doc.querySelectorAll("style"))
      .map((s) => s.textContent)
      .join("\n");
    expect(css).not.toMatch(/127\.0\.0\.1|@import/);
    expect(doc.querySelector("div[style]")!.getAttribute("style")).toBe("background:none;width:50px;height:20px");
    expect(doc.querySelector("animate")).toBeNull();
    expect(doc.querySelector("use")!.hasAttribute("href")).toBe(false);
  });
});

describe("neutraliseCss", () => {
  it("keeps data: URLs and cuts every other url() and @import", () => {
    expect(neutraliseCss("a{background:url(data:image/png;base64,AA)}")).toBe("a{background:url(data:image/png;base64,AA)}");
    expect(neutraliseCss("a{background:url('https://x.example/a.png')}")).toBe("a{background:none}");
    expect(neutraliseCss('@import "https://x.example/a.css"; b{}')).toBe(" b{}");
    expect(neutraliseCss("a{background-image:image-set('x.png' 1x)}")).toBe("a{background-image:none}");
  });
});

describe("diff marks", () => {
  // <html bid="1"><body bid="2"><p bid="3">a</p><p bid="4">b</p><img bid="5" src="data:image/png;base64,AA" alt="x"></body></html>
  const { text: html, tree } = TREES["html-bids"]!;

  it("marks elements by bid with their status and the selection", () => {
    const byBid = (b: string) => tree.nodes.find((n) => n.key === b)!.id;
    const statuses = tree.nodes.map(() => "unchanged" as const) as Array<"unchanged" | "changed" | "added" | "removed">;
    statuses[byBid("3")] = "changed";
    statuses[byBid("4")] = "removed";
    const out = buildSrcdoc(html, { tree, statuses, selectedId: byBid("4") });
    const doc = parse(out.html);
    expect(doc.querySelector('[bid="3"]')!.getAttribute("data-wl-diff")).toBe("changed");
    expect(doc.querySelector('[bid="4"]')!.getAttribute("data-wl-diff")).toBe("removed");
    expect(doc.querySelector('[bid="4"]')!.hasAttribute("data-wl-selected")).toBe(true);
    expect(doc.querySelector('[bid="2"]')!.hasAttribute("data-wl-diff")).toBe(false);
    expect(doc.querySelectorAll("[data-wl-diff]").length).toBe(2);
    // Every element is keyed: all nodes but the parser's synthetic document root.
    expect(out.keyedElements).toBe(tree.nodes.filter((n) => !n.synthetic).length);
    expect(out.keyedElements).toBe(6);
    // data: images stay, so predicted pages with inline images still render.
    expect(doc.querySelector("img")!.getAttribute("src")).toBe("data:image/png;base64,AA");
    // The outline rules are in the last style sheet.
    expect(doc.head.lastElementChild!.textContent).toContain('[data-wl-diff="removed"]');
  });

  it("keys elements without bids by tag order", () => {
    // <html><body><div><span>x</span></div><p>y</p></body></html>
    const { text: plain, tree: t } = TREES["html-plain"]!;
    const statuses = t.nodes.map((n) => (n.role === "p" ? "added" : "unchanged")) as Array<"added" | "unchanged">;
    const doc = parse(buildSrcdoc(plain, { tree: t, statuses }).html);
    expect(doc.querySelector("p")!.getAttribute("data-wl-diff")).toBe("added");
    expect(doc.querySelector("span")!.getAttribute("data-wl-node")).toBe(String(t.nodes.find((n) => n.role === "span")!.id));
  });
});

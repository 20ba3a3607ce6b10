import { cleanup, render } from "@testing-library/react";
import { afterEach, describe, expect, it } from "vitest";
import hostileFixture from "../mocks/fixtures/web-hostile.json";
import { alignment } from "../model/tree";
import { RENDER_CSP } from "../model/srcdoc";
import { HtmlRender } from "./HtmlRender";

afterEach(cleanup);

describe("HtmlRender", () => {
  it("renders into a sandboxed srcdoc frame without script or same-origin rights", () => {
    const html = hostileFixture.turns[0]!.real.views[0]!.text;
    const { container } = render(<HtmlRender side="real" html={html} align={alignment(null)} label="Real page render" />);
    const frames = container.querySelectorAll("iframe");
    expect(frames.length).toBe(1);
    const frame = frames[0]!;
    expect(frame.getAttribute("sandbox")).toBe("");
    expect(frame.hasAttribute("src")).toBe(false);
    expect(frame.getAttribute("title")).toBe("Real page render");
    expect(frame.getAttribute("referrerpolicy")).toBe("no-referrer");
    const srcdoc = frame.getAttribute("srcdoc")!;
    expect(srcdoc.startsWith("<!DOCTYPE html>")).toBe(true);
    expect(srcdoc.indexOf(`content="${RENDER_CSP}"`)).toBeGreaterThan(0);
    // The policy comes before anything else in <head>.
    expect(srcdoc.indexOf("Content-Security-Policy")).toBeLessThan(srcdoc.indexOf("<style"));
    expect(srcdoc).not.toMatch(/<script/i);
    expect(srcdoc).not.toMatch(/\son[a-z]+=/i);
    // The page tried many things; the note says how many were removed.
    expect(container.querySelector(".render-note")!.textContent).toMatch(/^\d+ script or loading constructs removed/);
  });

  it("says nothing for a benign page", () => {
    const { container } = render(<HtmlRender side="predicted" html="<p><a href='/x'>link</a></p>" align={alignment(null)} label="Predicted page render" />);
    expect(container.querySelector(".render-note")).toBeNull();
    expect(container.querySelector("iframe")!.getAttribute("srcdoc")).toContain('data-wl-href="/x"');
  });
});

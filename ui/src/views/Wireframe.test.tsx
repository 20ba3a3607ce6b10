import { cleanup, render } from "@testing-library/react";
import { afterEach, describe, expect, it } from "vitest";
import { goldenTurn } from "../mocks/golden";
import { alignment } from "../model/tree";
import { Wireframe } from "./Wireframe";

afterEach(cleanup);

describe("Wireframe, Android device frame", () => {
  // The first turn of the Android fixture as `get_turn` shows it.
  const view = goldenTurn("android-settings", 1)!.views[0]!;
  const real = view.real!.tree!;
  const diff = view.diff!;
  const renderDevice = () =>
    render(
      <Wireframe
        side="real"
        tree={real}
        statuses={diff.real}
        align={alignment(diff)}
        variant="device"
        label="Real device wireframe"
        fallbackSize={{ width: 600, height: 1200 }}
      />,
    );

  it("draws every node with bounds, scaled into the pane at the dump's aspect ratio", () => {
    const drawable = real.nodes.filter((n) => n.bounds_px).length;
    const { container } = renderDevice();
    const rects = container.querySelectorAll("rect.wbox");
    expect(rects.length).toBe(drawable);
    expect(drawable).toBe(21);
    // 1080 × 2400 screen in a 600 × 1200 pane with 24 px padding: min(552/1080, 1152/2400) = 0.48.
    const svg = container.querySelector("svg")!;
    expect(svg.getAttribute("data-scale")).toBe("0.4800");
    expect(svg.getAttribute("aria-label")).toBe("Real device wireframe");
    const screen = container.querySelector("rect.screen-bg")!;
    expect(Number(screen.getAttribute("width"))).toBeCloseTo(1080 * 0.48, 6);
    expect(Number(screen.getAttribute("height"))).toBeCloseTo(2400 * 0.48, 6);
    // The Dark theme switch: bounds [900,900][1032,980] → x = offset + 900 × 0.48.
    const offsetX = Number(screen.getAttribute("x"));
    const sw = real.nodes.find((n) => n.key === "com.android.settings:id/switch_2")!;
    const rect = container.querySelector(`rect.wbox[data-node-id="${sw.id}"]`)!;
    expect(Number(rect.getAttribute("x"))).toBeCloseTo(offsetX + 900 * 0.48, 6);
    expect(Number(rect.getAttribute("width"))).toBeCloseTo(132 * 0.48, 6);
    expect(container.querySelector("rect.device-bezel")).not.toBeNull();
  });

  it("shows diff classes, clickable, focused and checked states", () => {
    const { container } = renderDevice();
    // Bluetooth is off in the real dump and on in the prediction: its switch is changed.
    const bt = real.nodes.find((n) => n.key === "com.android.settings:id/switch_1")!;
    expect(diff.real[bt.id]).toBe("changed");
    expect(container.querySelector(`rect.wbox[data-node-id="${bt.id}"]`)!.getAttribute("class")).toContain("diff-changed");
    expect(container.querySelectorAll("rect.wbox.diff-changed").length).toBe(diff.real.filter((s) => s === "changed" && true).length);
    expect(container.querySelectorAll("rect.wbox.is-clickable").length).toBe(
      real.nodes.filter((n) => n.attributes?.some((a) => a.name === "clickable" && a.value === "true")).length,
    );
    const checks = Array.from(container.querySelectorAll("text.wcheck")).map((t) => t.textContent);
    expect(checks).toEqual(["☑", "☐", "☑"]); // Wi-Fi on, Bluetooth off, Dark theme on
    expect(Array.from(container.querySelectorAll("text.wlabel")).map((t) => t.textContent)).toContain("Dark theme");
  });
});

describe("Wireframe, OS screen", () => {
  it("draws boxes at screen coordinates with the metadata's screen size", () => {
    const real = goldenTurn("os-calculator", 2)!.views[0]!.real!.tree!;
    const { container } = render(
      <Wireframe
        side="real"
        tree={real}
        align={alignment(null)}
        variant="screen"
        meta={{ url: null, title: null, focused_bid: null, package: null, screen: { width_px: 1280, height_px: 800 } }}
        label="Real screen wireframe"
        fallbackSize={{ width: 656, height: 416 }}
      />,
    );
    // (656 − 16) / 1280 = 0.5 and (416 − 16) / 800 = 0.5.
    expect(container.querySelector("svg")!.getAttribute("data-scale")).toBe("0.5000");
    const eq = real.nodes.find((n) => n.name === "=")!;
    const rect = container.querySelector(`rect.wbox[data-node-id="${eq.id}"]`)!;
    expect([rect.getAttribute("x"), rect.getAttribute("y"), rect.getAttribute("width"), rect.getAttribute("height")].map(Number)).toEqual([
      8 + 324,
      8 + 290,
      68,
      44,
    ]);
    expect(container.querySelectorAll("rect.wbox").length).toBe(real.nodes.filter((n) => n.bounds_px).length);
    expect(Array.from(container.querySelectorAll("text.wlabel")).map((t) => t.textContent)).toContain("Display: 42");
    expect(container.querySelector("rect.device-bezel")).toBeNull();
  });
});

describe("Wireframe, off-screen nodes", () => {
  it("clips a node scrolled off the screen and marks it", () => {
    // The first turn of the Android fixture, the Dark theme switch scrolled 300 px off the left edge.
    const real = goldenTurn("android-settings", 1)!.views[0]!.real!.tree!;
    const sw = real.nodes.find((n) => n.key === "com.android.settings:id/switch_2")!;
    const moved = {
      ...real,
      nodes: real.nodes.map((n) =>
        n.id === sw.id ? { ...n, bounds_px: { left: -300, top: 900, right: 132, bottom: 980, anomalies: ["negative" as const] } } : n,
      ),
    };
    const { container } = render(
      <Wireframe side="real" tree={moved} align={alignment(null)} variant="device" label="Real device wireframe" fallbackSize={{ width: 600, height: 1200 }} />,
    );
    const screen = container.querySelector("rect.screen-bg")!;
    const offsetX = Number(screen.getAttribute("x"));
    const rect = container.querySelector(`rect.wbox[data-node-id="${sw.id}"]`)!;
    expect(rect.classList.contains("is-offscreen")).toBe(true);
    expect(Number(rect.getAttribute("x"))).toBeCloseTo(offsetX, 6);
    expect(Number(rect.getAttribute("width"))).toBeCloseTo(132 * 0.48, 6);
    expect(Array.from(container.querySelectorAll("[data-offscreen]")).map((m) => m.getAttribute("data-offscreen"))).toEqual([String(sw.id)]);
    // Nothing is drawn left of the screen.
    for (const r of Array.from(container.querySelectorAll("rect.wbox"))) expect(Number(r.getAttribute("x"))).toBeGreaterThanOrEqual(offsetX - 1e-9);
  });
});

import { cleanup, fireEvent, render } from "@testing-library/react";
import { afterEach, describe, expect, it } from "vitest";
import type { ComparedView, SideWarning } from "../api/types";
import type { ViewTab } from "../views/tabs";
import { noBackend } from "../testing/server";
import { Pane } from "./Pane";

afterEach(cleanup);

const text = '<hierarchy rotation="0"><node bounds="[0,0][1080,2400]"/></hierarchy>\nUI hierchary dumped to: /dev/tty\n';
const warnings: SideWarning[] = [
  { kind: "invalid_utf8", line: 1, byte: 12, message: "1 invalid byte sequence replaced with U+FFFD" },
  { kind: "trailing_text", line: 1, byte: 71, message: "text after the root element ignored" },
];
const view: ComparedView = {
  representation: "android-xml",
  name: "main",
  real: { text, text_bytes: null, tree: null, rows: null, parse_error: null, warnings },
  predicted: { text, text_bytes: null, tree: null, rows: null, parse_error: null },
  diff: null,
  line_diff: null,
};
const tabs: ViewTab[] = [{ id: "source", view_index: 0, kind: "source", label: "Source" }];

function pane(side: "real" | "predicted") {
  return render(
    <Pane
      side={side}
      title={side === "real" ? "Real observation" : "Predicted observation"}
      tabs={tabs}
      active={tabs[0]}
      onTab={() => {}}
      view={view}
      lines={null}
      backend={noBackend}
      turnRef={null}
    />,
  );
}

describe("Pane parse warnings", () => {
  it("shows the count and, opened, each warning with line and byte offset", () => {
    const { getByLabelText } = pane("real");
    const strip = getByLabelText("Real parse warnings");
    expect(strip.querySelector("summary")!.textContent).toBe("⚠ 2 parse warnings");
    fireEvent.click(strip.querySelector("summary")!);
    expect((strip as HTMLDetailsElement).open).toBe(true);
    const items = Array.from(strip.querySelectorAll("li")).map((li) => li.textContent);
    expect(items).toEqual([
      "line 1, byte 12 bytes not UTF-8, replaced: 1 invalid byte sequence replaced with U+FFFD",
      "line 1, byte 71 text outside the root ignored: text after the root element ignored",
    ]);
  });

  it("shows nothing on a side without warnings", () => {
    const { container, queryByLabelText } = pane("predicted");
    expect(queryByLabelText("Predicted parse warnings")).toBeNull();
    expect(container.querySelector(".pane-warnings")).toBeNull();
  });
});

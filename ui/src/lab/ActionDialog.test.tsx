import { QueryClientProvider } from "@tanstack/react-query";
import { cleanup, fireEvent, render, screen, waitFor, within } from "@testing-library/react";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { Domain } from "../api/types";
import { createQueryClient } from "../data/queries";
import { fixturePaths, startServer, type TestServer } from "../testing/server";
import { ActionDialog } from "./ActionDialog";

// The dialog only reads (`action_space`, `parse_action`, `format_action`):
// one server answers every test.
let server: TestServer;
beforeAll(async () => {
  server = await startServer(fixturePaths("web-harbor-books"));
});
afterAll(async () => {
  await server.stop();
});
afterEach(() => cleanup());

/** The dialog on `initialRaw`; resolves with what Save handed over (once it is pressed). */
function open(domain: Domain, initialRaw: string) {
  const saved: string[] = [];
  render(
    <QueryClientProvider client={createQueryClient()}>
      <ActionDialog
        backend={server.backend}
        title="Edit action"
        domain={domain}
        initialRaw={initialRaw}
        saveLabel="Save"
        onClose={() => {}}
        onSave={async (raw) => {
          saved.push(raw);
        }}
      />
    </QueryClientProvider>,
  );
  return saved;
}

const dialog = () => screen.getByRole("dialog", { name: "Edit action" });
const input = (label: string) => within(dialog()).getByLabelText(label, { exact: true }) as HTMLInputElement;
const preview = () => within(dialog()).getByLabelText("Raw action preview").textContent;
const checkLine = () => within(dialog()).getByLabelText("Action check").textContent;

describe("ActionDialog on worldloom serve", () => {
  it("opens a pyautogui action as its form and writes the edited call", async () => {
    const saved = open("os", "pyautogui.doubleClick(640, 360)");
    await waitFor(() => expect((input("Action name") as unknown as HTMLSelectElement).value).toBe("doubleClick"));
    expect(input("x").value).toBe("640");
    expect(input("y").value).toBe("360");
    await waitFor(() => expect(preview()).toBe("pyautogui.doubleClick(640, 360)"));
    fireEvent.change(input("y"), { target: { value: "400" } });
    await waitFor(() => expect(preview()).toBe("pyautogui.doubleClick(640, 400)"));
    await waitFor(() => expect(checkLine()).toBe("pyautogui: pyautogui.doubleClick(640, 400) ✓ parsed"));
    fireEvent.click(within(dialog()).getByRole("button", { name: "Save" }));
    await waitFor(() => expect(saved).toEqual(["pyautogui.doubleClick(640, 400)"]));
  });

  it("fills the Android form from the raw JSON keys and names a bad parameter", async () => {
    open("android", '{"action_type": "click", "x": 540, "y": 559}');
    await waitFor(() => expect(input("x").value).toBe("540"));
    expect(input("y").value).toBe("559");
    expect(input("element").value).toBe("");
    fireEvent.change(input("y"), { target: { value: "abc" } });
    await waitFor(() => expect(checkLine()).toBe('click: y: a number is needed, got "abc"'));
    expect(input("y").getAttribute("aria-invalid")).toBe("true");
    expect(preview()).toBe("—");
    expect(within(dialog()).getByRole("button", { name: "Save" })).toHaveProperty("disabled", true);
    // Another action keeps the parameters both have.
    fireEvent.change(input("Action name"), { target: { value: "long_press" } });
    fireEvent.change(input("y"), { target: { value: "12" } });
    await waitFor(() => expect(preview()).toBe('{"action_type": "long_press", "x": 540, "y": 12}'));
  });

  it("switches between the form and raw text through the back end's parser", async () => {
    open("web", "click('12')");
    await waitFor(() => expect(input("bid").value).toBe("12"));
    fireEvent.click(within(dialog()).getByRole("button", { name: "Raw text" }));
    const raw = within(dialog()).getByLabelText("Raw action", { exact: true });
    expect((raw as HTMLTextAreaElement).value).toBe("click('12')");
    // Two calls parse, but do not fit the form: the dialog stays in raw text.
    fireEvent.change(raw, { target: { value: "click('1')\nclick('2')" } });
    await waitFor(() => expect(checkLine()).toBe("browsergym: click('1') ✓ parsed"));
    fireEvent.click(within(dialog()).getByRole("button", { name: "Form" }));
    await waitFor(() => expect(within(dialog()).getByRole("alert").textContent).toContain("does not fit the form (2 calls: the form holds one action)"));
    fireEvent.change(raw, { target: { value: "fill('41', 'hi')" } });
    fireEvent.click(within(dialog()).getByRole("button", { name: "Form" }));
    await waitFor(() => expect(input("value").value).toBe("hi"));
    expect(input("bid").value).toBe("41");
  });

  it("writes tool calls and has no form for shell commands", async () => {
    open("mcp", "");
    await waitFor(() => expect((input("Action name") as unknown as HTMLSelectElement).value).toBe("tool_call"));
    await waitFor(() => expect(checkLine()).toBe("tool_call: name is required"));
    fireEvent.change(input("name"), { target: { value: "search" } });
    fireEvent.change(input("arguments"), { target: { value: '{"q": "rust"}' } });
    await waitFor(() => expect(preview()).toBe('{"name": "search", "arguments": {"q":"rust"}}'));
    cleanup();
    open("terminal", "ls -la");
    await waitFor(() => expect((within(dialog()).getByLabelText("Raw action", { exact: true }) as HTMLTextAreaElement).value).toBe("ls -la"));
    expect(within(dialog()).queryByRole("button", { name: "Form" })).toBeNull();
    await waitFor(() => expect(checkLine()).toBe("shell: ls -la"));
  });
});

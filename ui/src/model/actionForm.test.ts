import { describe, expect, it } from "vitest";
import { emptyForm, formProblem, formToRaw, parsePythonCall, pyString, rawToForm, splitActionList, syntaxFor } from "./actionForm";

describe("action form ↔ raw text", () => {
  it("picks the action language of each domain", () => {
    expect(["web", "os", "android", "mcp", "swe", "terminal", "search"].map(syntaxFor)).toEqual([
      "browsergym",
      "pyautogui",
      "android-json",
      "tool-call",
      "tool-call",
      "text",
      "text",
    ]);
  });

  it("writes BrowserGym calls with Python string escaping and reads them back", () => {
    const raw = formToRaw("browsergym", { name: "fill", values: { bid: "41", value: 'it\'s a "test"\nline 2' } });
    expect(raw).toBe("fill('41', 'it\\'s a \"test\"\\nline 2')");
    expect(rawToForm("browsergym", raw)).toEqual({ name: "fill", values: { bid: "41", value: 'it\'s a "test"\nline 2' } });
    expect(formToRaw("browsergym", { name: "scroll", values: { delta_x: "0", delta_y: "-300" } })).toBe("scroll(0, -300)");
    expect(formToRaw("browsergym", { name: "click", values: { bid: "12", button: "" } })).toBe("click('12')");
    expect(formToRaw("browsergym", { name: "go_back", values: {} })).toBe("go_back()");
    expect(rawToForm("browsergym", 'click("12", button="right")')).toEqual({ name: "click", values: { bid: "12", button: "right" } });
  });

  it("leaves what the form cannot express to raw mode", () => {
    expect(rawToForm("browsergym", "click('1')\nfill('2', 'x')")).toBeNull();
    expect(rawToForm("browsergym", "teleport('1')")).toBeNull();
    expect(rawToForm("browsergym", "click(some_variable)")).toBeNull();
    expect(rawToForm("pyautogui", "import time; pyautogui.click(1, 2)")).toBeNull();
    expect(rawToForm("android-json", '{"action_type": "click", "x": 1, "y": 2, "extra": true}')).toBeNull();
    expect(rawToForm("text", "ls -la")).toBeNull();
  });

  it("writes and reads pyautogui code, hotkeys as lists, and OSWorld's WAIT", () => {
    expect(formToRaw("pyautogui", { name: "click", values: { x: "640", y: "360" } })).toBe("pyautogui.click(640, 360)");
    expect(formToRaw("pyautogui", { name: "hotkey", values: { keys: "ctrl, shift , s" } })).toBe("pyautogui.hotkey('ctrl', 'shift', 's')");
    expect(rawToForm("pyautogui", "pyautogui.hotkey('ctrl', 's')")).toEqual({ name: "hotkey", values: { keys: "ctrl, s" } });
    expect(rawToForm("pyautogui", "WAIT")).toEqual({ name: "WAIT", values: {} });
    expect(formToRaw("pyautogui", { name: "DONE", values: {} })).toBe("DONE");
  });

  it("writes Android JSON with numbers as numbers and drops empty optional fields", () => {
    expect(formToRaw("android-json", { name: "click", values: { x: "540", y: "559" } })).toBe('{"action_type":"click","x":540,"y":559}');
    expect(formToRaw("android-json", { name: "input_text", values: { text: "hello", x: "", y: "" } })).toBe('{"action_type":"input_text","text":"hello"}');
    expect(rawToForm("android-json", '{"action_type": "scroll", "direction": "down"}')).toEqual({ name: "scroll", values: { direction: "down" } });
    // The sample trajectories' AndroidControl-style actions fit the form too.
    expect(rawToForm("android-json", '{"action_type": "type", "text": "Running 10 min late"}')).toEqual({
      name: "type",
      values: { text: "Running 10 min late" },
    });
    expect(formToRaw("android-json", { name: "click", values: { x: "", y: "", element: "com.chat:id/send" } })).toBe(
      '{"action_type":"click","element":"com.chat:id/send"}',
    );
  });

  it("writes tool calls from a name and JSON arguments, also reading fenced bodies", () => {
    expect(formToRaw("tool-call", { name: "tool call", values: { name: "list_events", arguments: '{"date": "2026-03-02"}' } })).toBe(
      '{"name":"list_events","arguments":{"date":"2026-03-02"}}',
    );
    expect(rawToForm("tool-call", '```json\n{"name": "get", "arguments": {"id": 4}}\n```')).toEqual({
      name: "tool call",
      values: { name: "get", arguments: '{\n  "id": 4\n}' },
    });
    expect(formProblem("tool-call", { name: "tool call", values: { name: "x", arguments: "[1]" } })).toBe("arguments: a JSON object is needed");
  });

  it("names the missing or malformed parameter", () => {
    expect(formProblem("browsergym", { name: "fill", values: { bid: "4", value: "" } })).toBe("fill: value is required");
    expect(formProblem("pyautogui", { name: "click", values: { x: "12px", y: "3" } })).toBe('click: x: a number is needed, got "12px"');
    expect(formProblem("browsergym", emptyForm("browsergym", "go_back"))).toBeNull();
  });

  it("parses Python literals in calls", () => {
    expect(parsePythonCall("f('a\\'b', -2.5, True, None, k=\"v\")")).toEqual({ name: "f", args: ["a'b", -2.5, true, null], kwargs: { k: "v" } });
    expect(parsePythonCall("f('unterminated)")).toBeNull();
    expect(pyString("a\\b")).toBe("'a\\\\b'");
  });

  it("splits the rollout list by lines or by --- blocks", () => {
    expect(splitActionList("click('1')\n\n  fill('2', 'x')  \n")).toEqual(["click('1')", "fill('2', 'x')"]);
    expect(splitActionList("import time\npyautogui.click(1, 2)\n---\nWAIT\n---\n")).toEqual(["import time\npyautogui.click(1, 2)", "WAIT"]);
  });
});

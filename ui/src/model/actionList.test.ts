import { describe, expect, it } from "vitest";
import { splitActionList } from "./actionList";

describe("splitActionList", () => {
  it("takes one action per non-empty line", () => {
    expect(splitActionList("click('1')\n\n  fill('2', 'x')  \r\n")).toEqual(["click('1')", "fill('2', 'x')"]);
    expect(splitActionList("  \n")).toEqual([]);
  });

  it("takes blocks between --- lines when there are any", () => {
    expect(splitActionList("import time\npyautogui.click(1, 2)\n---\nWAIT\n---\n")).toEqual(["import time\npyautogui.click(1, 2)", "WAIT"]);
  });
});

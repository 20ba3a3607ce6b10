import { describe, expect, it } from "vitest";
import { cleanRelativePath, uploadable } from "./upload";

describe("browser upload", () => {
  it("keeps folder-relative paths and refuses escapes", () => {
    expect(cleanRelativePath("thunar_rename/step_00.tsv")).toBe("thunar_rename/step_00.tsv");
    expect(cleanRelativePath("./a//b\\c.json")).toBe("a/b/c.json");
    expect(cleanRelativePath("/etc/passwd")).toBe("etc/passwd");
    expect(cleanRelativePath("a/../../b")).toBeNull();
    expect(cleanRelativePath("C:/x")).toBeNull();
    expect(cleanRelativePath("")).toBeNull();
  });

  it("sends picked files under their safe paths, skipping unsafe ones", () => {
    const file = new File(['{"a": 1}'], "t.json");
    const out = uploadable([
      { file, relative_path: "run/t.json" },
      { file, relative_path: "../t.json" },
      { file, relative_path: "" },
    ]);
    expect(out).toEqual([
      { relative_path: "run/t.json", file },
      { relative_path: "t.json", file },
    ]);
  });
});

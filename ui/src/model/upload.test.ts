import { describe, expect, it } from "vitest";
import { bytesToBase64, cleanRelativePath, readUploads } from "./upload";

describe("browser upload", () => {
  it("encodes bytes as base64, also past one chunk", () => {
    expect(bytesToBase64(new TextEncoder().encode("héllo"))).toBe("aMOpbGxv");
    const big = new Uint8Array(70_000).map((_, i) => i % 251);
    const back = Uint8Array.from(atob(bytesToBase64(big)), (c) => c.charCodeAt(0));
    expect(back.length).toBe(70_000);
    expect(back[69_999]).toBe(69_999 % 251);
  });

  it("keeps folder-relative paths and refuses escapes", () => {
    expect(cleanRelativePath("thunar_rename/step_00.tsv")).toBe("thunar_rename/step_00.tsv");
    expect(cleanRelativePath("./a//b\\c.json")).toBe("a/b/c.json");
    expect(cleanRelativePath("/etc/passwd")).toBe("etc/passwd");
    expect(cleanRelativePath("a/../../b")).toBeNull();
    expect(cleanRelativePath("C:/x")).toBeNull();
    expect(cleanRelativePath("")).toBeNull();
  });

  it("reads picked files into the request body, skipping unsafe paths", async () => {
    const file = new File(['{"a": 1}'], "t.json");
    const out = await readUploads([
      { file, relative_path: "run/t.json" },
      { file, relative_path: "../t.json" },
    ]);
    expect(out).toEqual([{ relative_path: "run/t.json", content_base64: btoa('{"a": 1}') }]);
  });
});

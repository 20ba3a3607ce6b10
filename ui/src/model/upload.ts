/**
 * Browser import: files picked with `<input type=file>` (folders through
 * `webkitdirectory`) or dropped on the window, read and sent to
 * `import_uploaded` with their relative paths.
 */
import type { UploadedFile } from "../api/lab";

/** Base64 of bytes (chunked, so large files do not overflow the argument list). */
export function bytesToBase64(bytes: Uint8Array): string {
  let bin = "";
  const CHUNK = 0x8000;
  for (let i = 0; i < bytes.length; i += CHUNK) bin += String.fromCharCode(...bytes.subarray(i, i + CHUNK));
  return btoa(bin);
}

/**
 * A safe relative path: forward slashes, no empty, `.` or `..` segments, not
 * absolute. Returns `null` when the path cannot be made safe (the back end
 * rejects those too).
 */
export function cleanRelativePath(path: string): string | null {
  const parts = path
    .replace(/\\/g, "/")
    .split("/")
    .filter((p) => p !== "" && p !== ".");
  if (parts.length === 0 || parts.some((p) => p === "..") || /^[A-Za-z]:$/.test(parts[0]!)) return null;
  return parts.join("/");
}

/** A file with the relative path it should keep. */
export interface PickedFile {
  file: File;
  relative_path: string;
}

/** Reads picked files into the `import_uploaded` request body. */
export async function readUploads(files: ReadonlyArray<PickedFile>): Promise<UploadedFile[]> {
  const out: UploadedFile[] = [];
  for (const f of files) {
    const rel = cleanRelativePath(f.relative_path || f.file.name);
    if (!rel) continue;
    const bytes = new Uint8Array(await f.file.arrayBuffer());
    out.push({ relative_path: rel, content_base64: bytesToBase64(bytes) });
  }
  return out;
}

/** Files of an `<input type=file>` (with `webkitRelativePath` for folders). */
export function filesFromInput(list: FileList | null): PickedFile[] {
  return Array.from(list ?? []).map((file) => ({ file, relative_path: (file as File & { webkitRelativePath?: string }).webkitRelativePath || file.name }));
}

/** Minimal shape of the File and Directory Entries API used on drop. */
interface Entry {
  isFile: boolean;
  isDirectory: boolean;
  name: string;
  fullPath: string;
  file?: (ok: (f: File) => void, err: (e: unknown) => void) => void;
  createReader?: () => { readEntries: (ok: (entries: Entry[]) => void, err: (e: unknown) => void) => void };
}

async function walk(entry: Entry, out: PickedFile[]): Promise<void> {
  if (entry.isFile && entry.file) {
    const file = await new Promise<File>((ok, err) => entry.file!(ok, err));
    out.push({ file, relative_path: entry.fullPath.replace(/^\//, "") });
  } else if (entry.isDirectory && entry.createReader) {
    const reader = entry.createReader();
    // readEntries returns batches until an empty one.
    for (;;) {
      const batch = await new Promise<Entry[]>((ok, err) => reader.readEntries(ok, err));
      if (batch.length === 0) break;
      for (const e of batch) await walk(e, out);
    }
  }
}

/** Files (and whole folders) dropped on the window, with paths relative to the drop. */
export async function filesFromDrop(data: DataTransfer): Promise<PickedFile[]> {
  const out: PickedFile[] = [];
  const entries: Entry[] = [];
  for (const item of Array.from(data.items ?? [])) {
    const getter = (item as DataTransferItem & { webkitGetAsEntry?: () => Entry | null }).webkitGetAsEntry;
    const entry = item.kind === "file" && getter ? getter.call(item) : null;
    if (entry) entries.push(entry);
  }
  if (entries.length === 0) return Array.from(data.files ?? []).map((file) => ({ file, relative_path: file.name }));
  for (const e of entries) await walk(e, out);
  return out;
}

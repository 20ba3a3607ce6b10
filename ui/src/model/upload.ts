/**
 * Browser import: files picked with `<input type=file>` (folders through
 * `webkitdirectory`) or dropped on the window, sent to `POST /api/upload`
 * with their relative paths (`Backend.upload`: the files themselves as a
 * streamed body).
 */

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

/** The picked files an upload sends, each under its safe relative path; files whose path cannot be made safe are left out. */
export function uploadable(files: ReadonlyArray<PickedFile>): Array<{ relative_path: string; file: Blob }> {
  return files.flatMap((f) => {
    const rel = cleanRelativePath(f.relative_path || f.file.name);
    return rel ? [{ relative_path: rel, file: f.file }] : [];
  });
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

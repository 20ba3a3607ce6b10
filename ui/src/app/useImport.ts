/**
 * Importing trajectories: native paths in the desktop app (its dialog and
 * drag-and-drop give real paths, for `import_files`), uploaded files in a
 * browser (`Backend.upload`, a streamed `POST /api/upload`, from the Import
 * dialog or files dropped on the window). `onImported` opens the first
 * trajectory imported.
 */
import { useCallback, useEffect, useState } from "react";
import type { ImportFilesResponse } from "../api/types";
import type { Backend } from "../backend/backend";
import { filesFromDrop, uploadable, type PickedFile } from "../model/upload";

/** The import handlers, the last result and whether files are dragged over the window. */
export function useImport(backend: Backend, report: (e: unknown) => void, onImported: (r: ImportFilesResponse) => void) {
  const [result, setResult] = useState<ImportFilesResponse | null>(null);
  const [dragging, setDragging] = useState(false);

  const afterImport = useCallback(
    (r: ImportFilesResponse) => {
      setResult(r);
      onImported(r);
    },
    [onImported],
  );
  const importPaths = useCallback(
    async (paths: string[]) => {
      if (paths.length === 0) return;
      try {
        afterImport(await backend.call("import_files", { paths }));
      } catch (e) {
        report(e);
      }
    },
    [backend, afterImport, report],
  );
  const upload = useCallback(
    async (files: PickedFile[]) => {
      if (!backend.upload) throw new Error("this window imports by path: use Choose files… or drop files on it");
      const picked = uploadable(files);
      if (picked.length === 0) throw new Error("no file to import (paths with .. are refused)");
      afterImport(await backend.upload(picked));
    },
    [backend, afterImport],
  );
  /** Desktop app: the native dialog gives paths for `import_files`. */
  const chooseImportPaths = backend.chooseImportPaths?.bind(backend);
  const chooseNative = chooseImportPaths
    ? async (folders: boolean) => {
        const paths = await chooseImportPaths({ folders });
        if (paths.length > 0) afterImport(await backend.call("import_files", { paths }));
      }
    : undefined;

  useEffect(() => {
    if (backend.onFileDrop) return backend.onFileDrop((paths) => void importPaths(paths));
    const hasFiles = (e: DragEvent) => Array.from(e.dataTransfer?.types ?? []).includes("Files");
    const over = (e: DragEvent) => {
      if (!hasFiles(e)) return;
      e.preventDefault();
      setDragging(true);
    };
    const leave = (e: DragEvent) => {
      if (e.relatedTarget === null) setDragging(false);
    };
    const drop = (e: DragEvent) => {
      if (!hasFiles(e) || !e.dataTransfer) return;
      e.preventDefault();
      setDragging(false);
      filesFromDrop(e.dataTransfer).then(upload).catch(report);
    };
    window.addEventListener("dragover", over);
    window.addEventListener("dragleave", leave);
    window.addEventListener("drop", drop);
    return () => {
      window.removeEventListener("dragover", over);
      window.removeEventListener("dragleave", leave);
      window.removeEventListener("drop", drop);
    };
  }, [backend, importPaths, upload, report]);

  return { result, setResult, dragging, upload, chooseNative };
}

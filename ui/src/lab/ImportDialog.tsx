/**
 * "Import…" in a browser: pick files or a whole folder (relative paths kept)
 * and send their contents with `import_uploaded`. (The desktop app uses its
 * native dialog and `import_files` instead; see `App`.)
 */
import { useState } from "react";
import type { ImportFilesResponse } from "../api/types";
import { filesFromInput, type PickedFile } from "../model/upload";
import { Modal } from "./Modal";

/** Props of {@link ImportDialog}. */
export interface ImportDialogProps {
  onUpload: (files: PickedFile[]) => Promise<void>;
  result: ImportFilesResponse | null;
  onClose: () => void;
}

/** Lists what an import did. */
export function ImportResult({ result }: { result: ImportFilesResponse }) {
  return (
    <div className="import-result" role="status" aria-label="Import result">
      <p>
        {result.imported.filter((i) => i.added).length} trajectories added
        {result.imported.some((i) => !i.added) ? `, ${result.imported.filter((i) => !i.added).length} already present` : ""}
        {result.failed.length ? `, ${result.failed.length} failed` : ""}
      </p>
      <ul>
        {result.imported.map((i) => (
          <li key={`${i.trajectory_id}-${i.path}`}>
            {i.name} <span className="muted">{i.path}</span>
          </li>
        ))}
        {result.failed.map((f) => (
          <li key={f.path} className="c-removed">
            {f.path}: {f.message}
          </li>
        ))}
        {result.warnings.map((w) => (
          <li key={w} className="warn">
            {w}
          </li>
        ))}
      </ul>
    </div>
  );
}

export function ImportDialog({ onUpload, result, onClose }: ImportDialogProps) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const send = async (files: PickedFile[]) => {
    if (files.length === 0) return;
    setBusy(true);
    setError(null);
    try {
      await onUpload(files);
    } catch (e) {
      setError(e instanceof Error ? e.message : String(e));
    } finally {
      setBusy(false);
    }
  };
  return (
    <Modal title="Import" onClose={onClose}>
      <p>Trajectory files (AgentLab JSON, OSWorld and Android folders, AgentWorldBench JSONL, Worldloom native) — or drop them anywhere on the window.</p>
      <div className="row">
        <label className="file-pick">
          <span>Choose files…</span>
          <input type="file" multiple aria-label="Choose files" disabled={busy} onChange={(e) => void send(filesFromInput(e.target.files))} />
        </label>
        <label className="file-pick">
          <span>Choose a folder…</span>
          <input
            type="file"
            aria-label="Choose a folder"
            disabled={busy}
            ref={(el) => {
              if (el) el.setAttribute("webkitdirectory", "");
            }}
            onChange={(e) => void send(filesFromInput(e.target.files))}
          />
        </label>
      </div>
      {busy ? <p role="status">Uploading…</p> : null}
      {result ? <ImportResult result={result} /> : null}
      {error ? (
        <p className="error" role="alert">
          {error}
        </p>
      ) : null}
    </Modal>
  );
}

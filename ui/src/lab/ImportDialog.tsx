/**
 * "Import…": in a browser, pick files or a whole folder (relative paths kept)
 * and upload them (`POST /api/upload`); in the desktop app, the
 * native dialog gives paths for `import_files` (`onChooseNative`).
 */
import type { ImportFilesResponse } from "../api/types";
import { filesFromInput, type PickedFile } from "../model/upload";
import { ErrorLine, useBusyAction } from "./DialogParts";
import { Modal } from "./Modal";

/** Props of {@link ImportDialog}. */
export interface ImportDialogProps {
  onUpload: (files: PickedFile[]) => Promise<void>;
  /** Present in the desktop app: opens the native dialog (files, or folders). */
  onChooseNative?: (folders: boolean) => Promise<void>;
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

export function ImportDialog({ onUpload, onChooseNative, result, onClose }: ImportDialogProps) {
  const { busy, error, run } = useBusyAction();
  const send = (files: PickedFile[]) => (files.length === 0 ? Promise.resolve() : run(() => onUpload(files)));
  return (
    <Modal title="Import" onClose={onClose}>
      <p>Trajectory files (AgentLab JSON, OSWorld and Android folders, AgentWorldBench JSONL, Worldloom native) — or drop them anywhere on the window.</p>
      {onChooseNative ? (
        <div className="row">
          <button type="button" disabled={!!busy} onClick={() => void run(() => onChooseNative(false))}>
            Choose files…
          </button>
          <button type="button" disabled={!!busy} onClick={() => void run(() => onChooseNative(true))}>
            Choose folders…
          </button>
        </div>
      ) : (
        <div className="row">
          <label className="file-pick">
            <span>Choose files…</span>
            <input type="file" multiple aria-label="Choose files" disabled={!!busy} onChange={(e) => void send(filesFromInput(e.target.files))} />
          </label>
          <label className="file-pick">
            <span>Choose a folder…</span>
            <input
              type="file"
              aria-label="Choose a folder"
              disabled={!!busy}
              ref={(el) => {
                if (el) el.setAttribute("webkitdirectory", "");
              }}
              onChange={(e) => void send(filesFromInput(e.target.files))}
            />
          </label>
        </div>
      )}
      {busy ? <p role="status">Uploading…</p> : null}
      {result ? <ImportResult result={result} /> : null}
      <ErrorLine error={error} />
    </Modal>
  );
}

/**
 * Curriculum export: branches picked with checkboxes (or every branch with a
 * tag), AgentWorldBench JSONL (evaluation) or SFT chat JSONL (fine-tuning),
 * a preview of the first rows, then a file written by the back end and/or a
 * download.
 */
import { useState } from "react";
import type { CurriculumExport } from "../api/lab";
import type { BranchSummary, CurriculumFormat } from "../api/types";
import type { Backend } from "../backend/backend";
import { formatBytes } from "./format";
import { Modal } from "./Modal";

const PREVIEW_ROWS = 5;

/** Props of {@link ExportDialog}. */
export interface ExportDialogProps {
  backend: Backend;
  trajectoryId: string;
  trajectoryName: string;
  branches: BranchSummary[];
  initialSelection: string[];
  onClose: () => void;
}

export function ExportDialog({ backend, trajectoryId, trajectoryName, branches, initialSelection, onClose }: ExportDialogProps) {
  const [picked, setPicked] = useState<string[]>(initialSelection.length ? initialSelection : branches.slice(0, 1).map((b) => b.id));
  const [byTag, setByTag] = useState(false);
  const [tag, setTag] = useState("");
  const [format, setFormat] = useState<CurriculumFormat>("agentworldbench");
  const [path, setPath] = useState("");
  const [result, setResult] = useState<CurriculumExport | null>(null);
  const [written, setWritten] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const request = (preview_limit: number, p: string | null) => ({
    selection: byTag ? [] : picked.map((branch_id) => ({ trajectory_id: trajectoryId, branch_id })),
    tag: byTag ? tag.trim() || null : null,
    format,
    preview_limit,
    path: p,
  });
  const ready = byTag ? tag.trim() !== "" : picked.length > 0;

  const run = async (what: "preview" | "write" | "download") => {
    setBusy(true);
    setError(null);
    try {
      if (what === "preview") {
        setResult(await backend.call("export_curriculum", request(PREVIEW_ROWS, null)));
      } else if (what === "write") {
        const r = await backend.call("export_curriculum", request(PREVIEW_ROWS, path.trim()));
        setResult(r);
        setWritten(r.path);
      } else {
        const r = await backend.call("export_curriculum", request(PREVIEW_ROWS, null));
        setResult(r);
        const content = r.content ?? r.preview.map((l) => `${l}\n`).join("");
        const url = URL.createObjectURL(new Blob([content], { type: "application/jsonl" }));
        const a = document.createElement("a");
        a.href = url;
        a.download = r.file_name || `curriculum-${format}.jsonl`;
        document.body.appendChild(a);
        a.click();
        a.remove();
        window.setTimeout(() => URL.revokeObjectURL(url), 1000);
      }
    } catch (e) {
      setError(e instanceof Error ? e.message : String(e));
    } finally {
      setBusy(false);
    }
  };

  return (
    <Modal
      title="Export curriculum"
      onClose={onClose}
      wide
      footer={
        <>
          <button type="button" onClick={onClose}>
            Close
          </button>
          <button type="button" disabled={!ready || busy} onClick={() => void run("preview")}>
            Preview
          </button>
          <button type="button" disabled={!ready || busy} onClick={() => void run("download")}>
            Download
          </button>
          <button type="button" className="primary" disabled={!ready || busy || !path.trim()} onClick={() => void run("write")}>
            Write file
          </button>
        </>
      }
    >
      <div className="seg" role="radiogroup" aria-label="Select by">
        <button type="button" role="radio" aria-checked={!byTag} onClick={() => setByTag(false)}>
          Branches
        </button>
        <button type="button" role="radio" aria-checked={byTag} onClick={() => setByTag(true)}>
          Tag
        </button>
      </div>
      {byTag ? (
        <label className="field">
          <span>Every branch with the tag</span>
          <input aria-label="Tag" value={tag} onChange={(e) => setTag(e.target.value)} placeholder="curriculum" />
        </label>
      ) : (
        <fieldset className="branch-picks">
          <legend>Branches of {trajectoryName}</legend>
          {branches.map((b) => (
            <label key={b.id} className="check">
              <input type="checkbox" checked={picked.includes(b.id)} onChange={(e) => setPicked(e.target.checked ? [...picked, b.id] : picked.filter((x) => x !== b.id))} /> {b.name} · {b.turn_count} turns
            </label>
          ))}
        </fieldset>
      )}
      <div className="row">
        <label className="field">
          <span>Format</span>
          <select aria-label="Format" value={format} onChange={(e) => setFormat(e.target.value as CurriculumFormat)}>
            <option value="agentworldbench">AgentWorldBench JSONL (evaluation)</option>
            <option value="sft">SFT chat JSONL (fine-tuning)</option>
          </select>
        </label>
        <label className="field grow">
          <span>File on the back end's machine</span>
          <input aria-label="Output path" className="mono" value={path} onChange={(e) => setPath(e.target.value)} placeholder="/data/curricula/web-adversarial.jsonl" />
        </label>
      </div>
      {result ? (
        <div className="export-preview" role="region" aria-label="Export preview">
          <p>
            <strong>{result.rows_total}</strong> rows · {formatBytes(result.bytes)}
            {result.skipped ? ` · ${result.skipped} turn${result.skipped === 1 ? "" : "s"} skipped (no observation)` : ""}
            {written ? (
              <>
                {" "}
                · written to <code>{written}</code>
              </>
            ) : null}
          </p>
          <ol className="preview-rows">
            {result.preview.map((row, i) => (
              <li key={i}>
                <code>{row.length > 1500 ? `${row.slice(0, 1500)}…` : row}</code>
              </li>
            ))}
          </ol>
        </div>
      ) : null}
      {error ? (
        <p className="error" role="alert">
          {error}
        </p>
      ) : null}
    </Modal>
  );
}

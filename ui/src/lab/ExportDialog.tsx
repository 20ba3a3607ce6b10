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
import { saveFile } from "../components/dom";
import { formatBytes } from "./format";
import { DialogFooter, ErrorLine, Field, RadioSeg, useBusyAction } from "./DialogParts";
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
  const { busy, error, run } = useBusyAction();

  const request = (preview_limit: number, p: string | null) => ({
    selection: byTag ? [] : picked.map((branch_id) => ({ trajectory_id: trajectoryId, branch_id })),
    tag: byTag ? tag.trim() || null : null,
    format,
    preview_limit,
    path: p,
  });
  const ready = byTag ? tag.trim() !== "" : picked.length > 0;

  const exportAs = (what: "preview" | "write" | "download") =>
    run(async () => {
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
        saveFile(content, r.file_name || `curriculum-${format}.jsonl`, "application/jsonl");
      }
    });

  return (
    <Modal
      title="Export curriculum"
      onClose={onClose}
      wide
      footer={
        <DialogFooter
          closeLabel="Close"
          onClose={onClose}
          after={
            <>
              <button type="button" disabled={!ready || !!busy} onClick={() => void exportAs("preview")}>
                Preview
              </button>
              <button type="button" disabled={!ready || !!busy} onClick={() => void exportAs("download")}>
                Download
              </button>
            </>
          }
          primary={{ label: "Write file", disabled: !ready || !!busy || !path.trim(), onClick: () => void exportAs("write") }}
        />
      }
    >
      <RadioSeg
        label="Select by"
        options={[
          ["branches", "Branches"],
          ["tag", "Tag"],
        ]}
        value={byTag ? "tag" : "branches"}
        onChange={(v) => setByTag(v === "tag")}
      />
      {byTag ? (
        <Field label="Every branch with the tag">
          <input aria-label="Tag" value={tag} onChange={(e) => setTag(e.target.value)} placeholder="curriculum" />
        </Field>
      ) : (
        <fieldset className="branch-picks">
          <legend>Branches of {trajectoryName}</legend>
          {branches.map((b) => (
            <label key={b.id} className="check">
              <input
                type="checkbox"
                checked={picked.includes(b.id)}
                onChange={(e) => setPicked(e.target.checked ? [...picked, b.id] : picked.filter((x) => x !== b.id))}
              />{" "}
              {b.name} · {b.turn_count} {b.turn_count === 1 ? "turn" : "turns"}
            </label>
          ))}
        </fieldset>
      )}
      <div className="row">
        <Field label="Format">
          <select aria-label="Format" value={format} onChange={(e) => setFormat(e.target.value as CurriculumFormat)}>
            <option value="agentworldbench">AgentWorldBench JSONL (evaluation)</option>
            <option value="sft">SFT chat JSONL (fine-tuning)</option>
          </select>
        </Field>
        <Field label="File on the back end's machine" grow>
          <input
            aria-label="Output path"
            className="mono"
            value={path}
            onChange={(e) => setPath(e.target.value)}
            placeholder="/data/curricula/web-adversarial.jsonl"
          />
        </Field>
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
      <ErrorLine error={error} />
    </Modal>
  );
}

/**
 * The row panel under the run's row table: the active row (the one focused
 * or moved to with `j`/`k`) with its labels, its free-text note (written
 * with `set_row_note`, an undoable change like every edit), a "Copy link"
 * that opens the row's turn in the studio, and, while a search is typed,
 * the lines of the row's real and predicted observations that hold the
 * searched words, marked. Observations are shown as text, never rendered.
 */
import { useQueryClient } from "@tanstack/react-query";
import { useState, type RefObject } from "react";
import type { RunRowView } from "../api/types";
import type { Backend } from "../backend/backend";
import { invalidate, keysTouchedByChange } from "../data/invalidation";
import { useTurn } from "../data/queries";
import { formatMetric, formatScore, markTerms, matchingLines, rowLink, searchTerms } from "./runsModel";

/** Props of {@link RowPanel}. */
export interface RowPanelProps {
  backend: Backend;
  row: RunRowView;
  /** The row table's search (its words are marked in the observations). */
  query: string;
  /** The note's text box, focused by the table's `n` key. */
  noteRef: RefObject<HTMLTextAreaElement | null>;
  /** Back to the table (after saving with Ctrl/Cmd+Enter or leaving with Escape). */
  onDone: () => void;
  onOpen: () => void;
}

/**
 * Copies `text` to the clipboard: the Clipboard API where the page may use
 * it, else a selected text area and the `copy` command. Whether it worked.
 */
export async function copyText(text: string): Promise<boolean> {
  try {
    if (navigator.clipboard && window.isSecureContext) {
      await navigator.clipboard.writeText(text);
      return true;
    }
  } catch {
    // Refused (no permission): try the old way.
  }
  const area = document.createElement("textarea");
  area.value = text;
  area.setAttribute("readonly", "");
  area.style.position = "fixed";
  area.style.opacity = "0";
  document.body.appendChild(area);
  area.select();
  try {
    return document.execCommand("copy");
  } catch {
    return false;
  } finally {
    area.remove();
  }
}

/** The row's link as this page would open it. */
export function currentRowLink(row: RunRowView): string {
  return rowLink(window.location, row);
}

function Marked({ text, terms }: { text: string; terms: string[] }) {
  return <>{markTerms(text, terms).map((p, i) => (p.match ? <mark key={i}>{p.text}</mark> : <span key={i}>{p.text}</span>))}</>;
}

function Matches({ label, text, terms }: { label: string; text: string | null | undefined; terms: string[] }) {
  const lines = matchingLines(text, terms);
  return (
    <div className="row-matches" aria-label={`${label}: lines with the searched words`}>
      <div className="muted">{label}</div>
      {lines.length === 0 ? (
        <div className="muted">no match</div>
      ) : (
        <pre>
          {lines.map((l) => (
            <div key={l.line} className="line">
              <span className="line-no">{l.line + 1}</span>
              <Marked text={l.text} terms={terms} />
            </div>
          ))}
        </pre>
      )}
    </div>
  );
}

export function RowPanel({ backend, row, query, noteRef, onDone, onOpen }: RowPanelProps) {
  const client = useQueryClient();
  const [draft, setDraft] = useState(row.note ?? "");
  const [saving, setSaving] = useState(false);
  const [copied, setCopied] = useState<string | null>(null);
  const terms = searchTerms(query);
  const turn = useTurn(backend, row.trajectory_id, row.node_id, row.prediction_id, terms.length > 0);
  const view = turn.data?.views[0];
  const link = currentRowLink(row);
  const changed = draft.trim() !== (row.note ?? "");
  const save = () => {
    if (!changed || saving) return;
    setSaving(true);
    void backend
      .call("set_row_note", { row_id: row.row_id, text: draft })
      .then(() => invalidate(client, keysTouchedByChange(null)))
      .catch((e: unknown) => window.alert(e instanceof Error ? e.message : String(e)))
      .finally(() => setSaving(false));
  };
  return (
    <section className="row-panel" aria-label={`Row ${row.row_index + 1}`}>
      <header>
        <b>
          Row {row.row_index + 1} · {row.trajectory_name} turn {row.turn}
        </b>
        <span className="muted">
          {row.domain} · {row.status} · score {formatScore(row.score)} · text F1 {formatMetric(row.text_f1)}
        </span>
        {row.labels.map((l) => (
          <span key={l} className="label-chip">
            {l}
          </span>
        ))}
        <span className="row-panel-actions">
          <button type="button" onClick={onOpen} title="Open the row's turn with its prediction (Enter)">
            Open turn
          </button>
          <button
            type="button"
            title="Copy a studio link that opens this row's turn (y)"
            onClick={() => void copyText(link).then((ok) => setCopied(ok ? "Link copied" : "Copy refused: select the link"))}
          >
            Copy link
          </button>
          <input className="row-link" aria-label="Link to this row" readOnly value={link} onFocus={(e) => e.currentTarget.select()} />
          {copied ? (
            <span className="muted" role="status">
              {copied}
            </span>
          ) : null}
        </span>
      </header>
      <div className="row-note">
        <textarea
          ref={noteRef}
          aria-label={`Note on row ${row.row_index + 1}`}
          placeholder="A note on this prediction (n to write; Ctrl/Cmd+Enter saves, Esc back to the rows)"
          rows={2}
          value={draft}
          onChange={(e) => setDraft(e.target.value)}
          onKeyDown={(e) => {
            if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
              e.preventDefault();
              save();
              onDone();
            } else if (e.key === "Escape") {
              e.preventDefault();
              setDraft(row.note ?? "");
              onDone();
            }
          }}
        />
        <div className="row-note-actions">
          <button type="button" disabled={!changed || saving} onClick={save}>
            Save note
          </button>
          <button
            type="button"
            disabled={row.note === null || saving}
            onClick={() => {
              setDraft("");
              setSaving(true);
              void backend
                .call("set_row_note", { row_id: row.row_id, text: "" })
                .then(() => invalidate(client, keysTouchedByChange(null)))
                .catch((e: unknown) => window.alert(e instanceof Error ? e.message : String(e)))
                .finally(() => setSaving(false));
            }}
          >
            Clear
          </button>
        </div>
      </div>
      {terms.length > 0 ? (
        <div className="row-matches-grid">
          <Matches label="Real observation" text={view?.real?.text} terms={terms} />
          <Matches label="Predicted observation" text={view?.predicted?.text} terms={terms} />
          <Matches label="Action" text={turn.data?.action?.raw} terms={terms} />
        </div>
      ) : null}
    </section>
  );
}

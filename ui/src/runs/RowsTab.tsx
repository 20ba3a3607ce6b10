/**
 * One run's row table: full-text search, filters, sorting, labels from the
 * workspace's label set, notes, keyboard moves, export of the labelled rows,
 * and the focused row's panel. Virtualised: a run can hold many thousand rows.
 */
import { useQueryClient } from "@tanstack/react-query";
import { useRef, useState } from "react";
import type { RowsExportFormat, RunRowSort, RunRowView, RunSummary, SearchIn } from "../api/types";
import type { Backend } from "../backend/backend";
import { VirtualList } from "../components/VirtualList";
import { invalidate, keysTouchedByChange } from "../data/invalidation";
import { keys } from "../data/keys";
import { saveFile } from "../components/dom";
import { useLabelSet, useRunDashboard, useRunRows } from "../data/queries";
import { RowPanel, copyText, currentRowLink } from "./RowPanel";
import { RUN_ROW_HEIGHT_PX, formatMetric, formatScore, labelChoices, rowKeyAction, rowsRequest, type RunsAction, type RunsState } from "./runsModel";

const SORTS: Array<[RunRowSort, string]> = [
  ["row", "#"],
  ["trajectory", "Trajectory"],
  ["turn", "Turn"],
  ["domain", "Domain"],
  ["status", "Status"],
  ["score", "Score"],
  ["text_f1", "Text F1"],
  ["node_f1", "Node F1"],
  ["transition_f1", "Trans. F1"],
];
/** The header of the labels column (not sortable). */
const LABELS_HEAD = "Labels";

/** Exports run `runId`'s labelled or noted rows through the API (`export_run_rows`) and saves the file. */
function exportRows(backend: Backend, runId: string, format: RowsExportFormat): void {
  void backend
    .call("export_run_rows", { run_id: runId, format, annotated_only: true, path: null })
    .then((r) => saveFile(r.content ?? "", r.file_name, format === "csv" ? "text/csv" : "application/x-ndjson"))
    .catch((e: unknown) => window.alert(`The rows could not be exported: ${e instanceof Error ? e.message : String(e)}`));
}

/** Props of {@link RowsTab}. */
export interface RowsTabProps {
  backend: Backend;
  run: RunSummary;
  state: RunsState;
  dispatch: (a: RunsAction) => void;
  onOpenRow: (row: RunRowView) => void;
}

export function RowsTab({ backend, run, state, dispatch, onOpenRow }: RowsTabProps) {
  const client = useQueryClient();
  const dash = useRunDashboard(backend, state.runA);
  const rows = useRunRows(backend, rowsRequest(state));
  const labelSet = useLabelSet(backend).data?.labels ?? [];
  // The active row (the panel's): an index into the rows shown; the first
  // search hit when a search is typed.
  const activeKey = `${state.runA ?? ""}\u0000${state.query}`;
  const [chosen, setChosen] = useState<{ key: string; index: number } | null>(null);
  const tableRef = useRef<HTMLDivElement>(null);
  const noteRef = useRef<HTMLTextAreaElement>(null);
  const data = rows.data;
  const searching = state.query.trim() !== "";
  const active = chosen !== null && chosen.key === activeKey ? chosen.index : searching ? 0 : null;
  const setActive = (index: number) => setChosen({ key: activeKey, index });
  const toggleLabel = (row: RunRowView, label: string) => {
    const present = !row.labels.includes(label);
    void backend
      .call("set_row_label", { row_id: row.row_id, label, present })
      .then(() => invalidate(client, keysTouchedByChange(null)))
      .catch((e: unknown) => window.alert(e instanceof Error ? e.message : String(e)));
  };
  const count = data?.rows.length ?? 0;
  const activeIndex = active === null || count === 0 ? null : Math.min(active, count - 1);
  const activeRow = activeIndex === null ? null : (data?.rows[activeIndex] ?? null);
  const focusRow = (i: number) => {
    setActive(i);
    // A row out of view exists once the list has scrolled to it.
    const row = () => tableRef.current?.querySelector<HTMLElement>(`.run-row[data-index="${i}"]`);
    const now = row();
    if (now) now.focus();
    else requestAnimationFrame(() => row()?.focus());
  };
  const onRowKey = (e: React.KeyboardEvent<HTMLDivElement>, i: number, row: RunRowView) => {
    const action = rowKeyAction(e, labelChoices(labelSet, row.labels));
    if (action === null) return;
    e.preventDefault();
    switch (action.type) {
      case "move":
        focusRow(Math.max(0, Math.min(count - 1, i + action.by)));
        break;
      case "label":
        toggleLabel(row, action.label);
        break;
      case "note":
        setActive(i);
        requestAnimationFrame(() => noteRef.current?.focus());
        break;
      case "open":
        onOpenRow(row);
        break;
      case "copy_link":
        void copyText(currentRowLink(row));
        break;
    }
  };
  const domains = dash.data?.domains.map((d) => d.domain).filter((d): d is NonNullable<typeof d> => d !== null) ?? [];
  const statuses = dash.data?.statuses.map((s) => s.status) ?? [];
  const annotated = data?.rows.some((r) => r.labels.length > 0 || r.note !== null) ?? false;
  return (
    <div className="run-rows">
      <div className="run-filters">
        <input
          type="search"
          aria-label="Search observations and actions"
          placeholder="Search real and predicted observations, actions…"
          value={state.query}
          onChange={(e) => dispatch({ type: "query", query: e.target.value })}
          onKeyDown={(e) => {
            // Enter opens the best hit; ↓ goes to the rows.
            const first = data?.rows[0];
            if (e.key === "Enter" && searching && first) onOpenRow(first);
            if (e.key === "ArrowDown" && count > 0) {
              e.preventDefault();
              focusRow(0);
            }
          }}
        />
        <select
          aria-label="Search in"
          value={state.searchIn}
          onChange={(e) => dispatch({ type: "query", query: state.query, searchIn: e.target.value as SearchIn })}
        >
          <option value="all">everywhere</option>
          <option value="real">real observation</option>
          <option value="predicted">predicted observation</option>
          <option value="action">action</option>
        </select>
        <select aria-label="Domain" value={state.domain ?? ""} onChange={(e) => dispatch({ type: "filter", domain: e.target.value || null })}>
          <option value="">all domains</option>
          {domains.map((d) => (
            <option key={d} value={d}>
              {d}
            </option>
          ))}
        </select>
        <select aria-label="Status" value={state.status ?? ""} onChange={(e) => dispatch({ type: "filter", status: e.target.value || null })}>
          <option value="">all statuses</option>
          {statuses.map((s) => (
            <option key={s} value={s}>
              {s}
            </option>
          ))}
        </select>
        <select aria-label="Label" value={state.label ?? ""} onChange={(e) => dispatch({ type: "filter", label: e.target.value || null })}>
          <option value="">any label</option>
          {labelSet.map((l) => (
            <option key={l} value={l}>
              {l}
            </option>
          ))}
        </select>
        <LabelSetEditor backend={backend} labels={labelSet} />
        <span className="export-rows" title="Save the run's labelled or noted rows (labels, notes, scores and the ids that open each row)">
          Export labelled rows:{" "}
          <button type="button" disabled={!annotated} onClick={() => exportRows(backend, run.run_id, "csv")}>
            CSV
          </button>
          <button type="button" disabled={!annotated} onClick={() => exportRows(backend, run.run_id, "jsonl")}>
            JSONL
          </button>
        </span>
        <span className="muted" role="status">
          {data
            ? `${data.total} ${data.total === 1 ? "row" : "rows"}${searching ? " match (full-text index; Enter opens the best)" : ""}`
            : rows.isFetching
              ? "…"
              : ""}
        </span>
      </div>
      <div className="run-row run-head" role="row">
        {SORTS.map(([sort, text]) => (
          <button
            key={sort}
            type="button"
            className={`col col-${sort}`}
            onClick={() => dispatch({ type: "sort", sort })}
            aria-sort={state.sort === sort ? (state.descending ? "descending" : "ascending") : undefined}
          >
            {text}
            {state.sort === sort ? (state.descending ? " ▾" : " ▴") : ""}
          </button>
        ))}
        <span className="col col-labels">{LABELS_HEAD}</span>
        <span className="col col-note">Note</span>
      </div>
      <div ref={tableRef}>
        <VirtualList
          className="run-table"
          role="table"
          aria-label="Run rows"
          count={count}
          rowHeight={RUN_ROW_HEIGHT_PX}
          fallbackHeight={480}
          scrollToIndex={activeIndex}
          renderRow={(i) => {
            const r = data?.rows[i];
            return r ? (
              <RowLine
                row={r}
                index={i}
                active={i === activeIndex}
                hit={searching}
                labels={labelChoices(labelSet, r.labels)}
                onOpen={() => onOpenRow(r)}
                onFocus={() => setActive(i)}
                onKey={(e) => onRowKey(e, i, r)}
                onLabel={(l) => toggleLabel(r, l)}
              />
            ) : null;
          }}
        />
      </div>
      {activeRow ? (
        <RowPanel
          key={activeRow.row_id}
          backend={backend}
          row={activeRow}
          query={state.query}
          noteRef={noteRef}
          onDone={() => activeIndex !== null && focusRow(activeIndex)}
          onOpen={() => onOpenRow(activeRow)}
        />
      ) : (
        <p className="chart-note">
          Focus a row (Tab, or ↓ from the search) to see its note and link: j/k move, 1–9 toggle labels, n writes a note, y copies a link, Enter opens.
        </p>
      )}
    </div>
  );
}

/** Edits the workspace's label set: one label per line (a setting, not an undoable change). */
function LabelSetEditor({ backend, labels }: { backend: Backend; labels: string[] }) {
  const client = useQueryClient();
  const [text, setText] = useState<string | null>(null);
  return (
    // The toggle event comes after the details open: text typed before it is kept.
    <details className="label-set" onToggle={(e) => setText((e.currentTarget as HTMLDetailsElement).open ? (t) => t ?? labels.join("\n") : null)}>
      <summary>Labels…</summary>
      <textarea aria-label="Label set, one per line" rows={7} value={text ?? ""} onChange={(e) => setText(e.target.value)} />
      <button
        type="button"
        onClick={() =>
          void backend
            .call("set_label_set", { labels: (text ?? "").split("\n") })
            .then((r) => {
              client.setQueryData(keys.labelSet(), r);
              setText(r.labels.join("\n"));
            })
            .catch((e: unknown) => window.alert(e instanceof Error ? e.message : String(e)))
        }
      >
        Save labels
      </button>
    </details>
  );
}

function RowLine({
  row,
  index,
  active,
  hit,
  labels,
  onOpen,
  onFocus,
  onKey,
  onLabel,
}: {
  row: RunRowView;
  index: number;
  active: boolean;
  /** A search hit (the table shows only hits while a search is typed). */
  hit: boolean;
  labels: string[];
  onOpen: () => void;
  onFocus: () => void;
  onKey: (e: React.KeyboardEvent<HTMLDivElement>) => void;
  onLabel: (label: string) => void;
}) {
  return (
    <div
      className={`run-row${active ? " is-active" : ""}${hit ? " search-hit" : ""}`}
      role="row"
      tabIndex={0}
      data-index={index}
      aria-selected={active}
      onClick={onOpen}
      onFocus={onFocus}
      onKeyDown={(e) => {
        if (e.target !== e.currentTarget) return;
        onKey(e);
      }}
      title={row.error ?? `Open ${row.trajectory_name} turn ${row.turn} (Enter); j/k move, 1–9 toggle labels, n note, y copy link`}
    >
      <span className="col col-row">{row.row_index + 1}</span>
      <span className="col col-trajectory">{row.trajectory_name}</span>
      <span className="col col-turn">{row.turn}</span>
      <span className="col col-domain">{row.domain}</span>
      <span className={`col col-status status-${row.status}`}>{row.judge_failed ? `${row.status} · judge failed` : row.status}</span>
      <span className="col col-score num">{formatScore(row.score)}</span>
      <span className="col col-text_f1 num">{formatMetric(row.text_f1)}</span>
      <span className="col col-node_f1 num">{formatMetric(row.node_f1)}</span>
      <span className="col col-transition_f1 num">{formatMetric(row.transition_f1)}</span>
      <span className="col col-labels" onClick={(e) => e.stopPropagation()} onKeyDown={(e) => e.stopPropagation()}>
        {row.labels.map((l) => (
          <span key={l} className="label-chip">
            {l}
          </span>
        ))}
        <select
          aria-label={`Label row ${row.row_index + 1}`}
          value=""
          onChange={(e) => {
            if (e.target.value) onLabel(e.target.value);
          }}
        >
          <option value="">+ label</option>
          {labels.map((l) => (
            <option key={l} value={l}>
              {row.labels.includes(l) ? `✓ ${l}` : l}
            </option>
          ))}
        </select>
      </span>
      <span className="col col-note" title={row.note ?? undefined}>
        {row.note ?? ""}
      </span>
    </div>
  );
}

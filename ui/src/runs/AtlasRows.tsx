/**
 * The rows of one atlas cell (`atlas_rows`), each with the findings that
 * put it there; a row opens its turn as real | A (| B) with the lines of
 * the nodes in question marked (the findings' source lines, from the API),
 * or in the turn view.
 */
import { useState } from "react";
import type { AtlasRowView, RunRowView, TurnDetail } from "../api/types";
import type { Backend } from "../backend/backend";
import { VirtualList } from "../components/VirtualList";
import { useAtlasRows, useTurn, type AtlasCellRef } from "../data/queries";
import { ACTION_LABELS, KIND_LABELS, findingsSummary, markedLines } from "./atlasModel";
import { Lines } from "./ThreePanes";
import { RUN_ROW_HEIGHT_PX } from "./runsModel";

/** Props of {@link AtlasRows}. */
export interface AtlasRowsProps {
  backend: Backend;
  runA: string;
  runB: string | null;
  cell: AtlasCellRef;
  /** The selection the atlas was counted over (`null`: every row of A). */
  rowIds: readonly string[] | null;
  onClose: () => void;
  onOpenRow: (row: RunRowView) => void;
}

export function AtlasRows({ backend, runA, runB, cell, rowIds, onClose, onOpenRow }: AtlasRowsProps) {
  const q = useAtlasRows(backend, runA, runB, cell, rowIds);
  const [open, setOpen] = useState<AtlasRowView | null>(null);
  const rows = q.data?.rows ?? [];
  return (
    <section className="atlas-rows" aria-label="Atlas rows">
      <header>
        <b>
          {KIND_LABELS[cell.kind]} · {cell.table === "overall" ? "all rows" : `${cell.table} ${cell.group}`}
        </b>{" "}
        <span className="muted">{q.data ? `${q.data.total} rows` : "loading…"}</span>
        <button type="button" onClick={onClose}>
          Close
        </button>
      </header>
      {q.error ? <div className="pane-empty">{String(q.error)}</div> : null}
      <div className="atlas-row run-head" role="row">
        <span>Trajectory</span>
        <span>Turn</span>
        <span>Domain</span>
        <span>Action</span>
        <span>Where</span>
        <span>Open</span>
      </div>
      <VirtualList
        className="run-table"
        role="table"
        aria-label="Rows of the cell"
        count={rows.length}
        rowHeight={RUN_ROW_HEIGHT_PX}
        fallbackHeight={240}
        renderRow={(i) => {
          const r = rows[i];
          return r ? <RowLine row={r} chosen={open?.row.row_id === r.row.row_id} onShow={() => setOpen(r)} onOpenRow={onOpenRow} /> : null;
        }}
      />
      {open ? <AtlasTurn key={open.row.row_id} backend={backend} row={open} onClose={() => setOpen(null)} /> : null}
    </section>
  );
}

function RowLine({ row, chosen, onShow, onOpenRow }: { row: AtlasRowView; chosen: boolean; onShow: () => void; onOpenRow: (row: RunRowView) => void }) {
  return (
    <div
      className={`atlas-row${chosen ? " chosen" : ""}`}
      role="row"
      tabIndex={0}
      title="Show the turn with the nodes marked"
      onClick={onShow}
      onKeyDown={(e) => {
        if (e.key === "Enter") onShow();
      }}
    >
      <span>{row.row.trajectory_name}</span>
      <span>{row.row.turn}</span>
      <span>{row.row.domain}</span>
      <span>{ACTION_LABELS[row.action]}</span>
      <span className="where">{findingsSummary(row.findings)}</span>
      <span className="pair-open" onClick={(e) => e.stopPropagation()} onKeyDown={(e) => e.stopPropagation()}>
        <button type="button" onClick={() => onOpenRow(row.row)} title="Open this prediction in the turn view">
          Turn
        </button>
      </span>
    </div>
  );
}

function view(detail: TurnDetail | undefined) {
  return detail?.views[0] ?? null;
}

/** One row's turn: real | A (| B) as text, the findings' lines marked on each side. */
function AtlasTurn({ backend, row, onClose }: { backend: Backend; row: AtlasRowView; onClose: () => void }) {
  const a = useTurn(backend, row.row.trajectory_id, row.row.node_id, row.row.prediction_id, true);
  const b = useTurn(backend, row.b?.row.trajectory_id ?? null, row.b?.row.node_id ?? 0, row.b?.row.prediction_id ?? null, row.b !== null);
  const va = view(a.data);
  const vb = view(b.data);
  const realMarked = markedLines([...row.findings, ...(row.b?.findings ?? [])], "real");
  return (
    <section className="three-panes atlas-turn" aria-label="Atlas turn">
      <header>
        <b>{row.row.trajectory_name}</b> turn {row.row.turn} · {row.row.domain} · {findingsSummary(row.findings)}
        <button type="button" onClick={onClose}>
          Close
        </button>
      </header>
      {a.error || b.error ? <div className="pane-empty">{String(a.error ?? b.error)}</div> : null}
      <div className={row.b ? "three-grid" : "three-grid two"}>
        <div>
          <h4>Real</h4>
          <Lines text={va?.real?.text ?? null} marked={realMarked} label="Real observation" landing={null} />
        </div>
        <div>
          <h4>A · {row.row.status}</h4>
          <Lines text={va?.predicted?.text ?? null} marked={markedLines(row.findings, "pred")} label="A's prediction" landing={null} />
        </div>
        {row.b ? (
          <div>
            <h4>B · {row.b.row.status}</h4>
            <Lines text={vb?.predicted?.text ?? null} marked={markedLines(row.b.findings, "pred")} label="B's prediction" landing={null} />
          </div>
        ) : null}
      </div>
    </section>
  );
}

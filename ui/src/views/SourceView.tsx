/**
 * Source text with line numbers and a line diff against the other side;
 * lines belonging to the hovered or selected tree node are highlighted, and
 * hovering a line highlights its node in every view. Also the text-domain
 * view (no tree). Virtualised, so long dumps stay responsive.
 */
import { useCallback, useMemo } from "react";
import type { UiTree } from "../api/types";
import { VirtualList } from "../components/VirtualList";
import type { DiffLine } from "../model/lineDiff";
import type { Alignment, Side } from "../model/tree";
import { useScrollSync } from "../state/scrollSync";
import { useSelection } from "../state/selection";
import { resolveOnSide } from "./common";

/** Row height of source lines, px. */
export const SOURCE_ROW_HEIGHT_PX = 18;

/** 1-based line of each byte offset's line start. */
function lineStarts(text: string): number[] {
  const starts = [0];
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) === 10) starts.push(i + 1);
  return starts;
}

function lineOfOffset(starts: number[], offset: number): number {
  let lo = 0;
  let hi = starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (starts[mid]! <= offset) lo = mid;
    else hi = mid - 1;
  }
  return lo + 1;
}

/**
 * For every 1-based line, the deepest node whose source span covers it
 * (`-1` when none), and for every node its `[first, last]` lines.
 * Span offsets are UTF-8 bytes in the server's trees; the text here is
 * UTF-16, so offsets are converted through a byte→char table.
 */
export function lineNodeIndex(text: string, tree: UiTree): { lineToNode: Int32Array; nodeLines: Map<number, [number, number]> } {
  const starts = lineStarts(text);
  const lineToNode = new Int32Array(starts.length + 1).fill(-1);
  const nodeLines = new Map<number, [number, number]>();
  const byteToChar = utf8ByteToCharOffsets(text);
  for (const n of tree.nodes) {
    if (!n.span) continue;
    const first = n.span.line;
    const endChar = byteToChar(Math.max(n.span.start_byte, n.span.end_byte - 1));
    const last = Math.max(first, lineOfOffset(starts, endChar));
    nodeLines.set(n.id, [first, last]);
    // Pre-order: a later node that covers a line is deeper (or a later sibling).
    for (let l = first; l <= last && l < lineToNode.length; l++) lineToNode[l] = n.id;
  }
  return { lineToNode, nodeLines };
}

/** Maps a UTF-8 byte offset to a UTF-16 index into `text`. */
function utf8ByteToCharOffsets(text: string): (byte: number) => number {
  let ascii = true;
  for (let i = 0; i < text.length; i++) {
    if (text.charCodeAt(i) > 0x7f) {
      ascii = false;
      break;
    }
  }
  if (ascii) return (b) => b;
  const bytes: number[] = [];
  let acc = 0;
  for (let i = 0; i < text.length; i++) {
    bytes.push(acc);
    const c = text.codePointAt(i)!;
    const len = c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
    acc += len;
    if (c >= 0x10000) {
      bytes.push(acc);
      i++;
    }
  }
  return (b) => {
    let lo = 0;
    let hi = bytes.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (bytes[mid]! <= b) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  };
}

/** Props of {@link SourceView}. */
export interface SourceViewProps {
  side: Side;
  lines: DiffLine[];
  /** The full text (for span → line mapping). */
  text: string;
  tree?: UiTree | null;
  align: Alignment;
  label: string;
}

export function SourceView({ side, lines, text, tree, align, label }: SourceViewProps) {
  const [state, store] = useSelection();
  const { hoverId, selectedId } = resolveOnSide(state, side, align);
  const index = useMemo(() => (tree ? lineNodeIndex(text, tree) : null), [text, tree]);
  const [syncTop, publishTop] = useScrollSync(side);
  const rowOfLine = useMemo(() => {
    const m = new Map<number, number>();
    lines.forEach((l, i) => {
      if (l.number > 0) m.set(l.number, i);
    });
    return m;
  }, [lines]);
  const hoverLines = hoverId != null ? index?.nodeLines.get(hoverId) : undefined;
  const selLines = selectedId != null ? index?.nodeLines.get(selectedId) : undefined;
  const scrollTo = selLines ? (rowOfLine.get(selLines[0]) ?? null) : null;
  const onHoverLine = useCallback(
    (line: number) => {
      const id = index?.lineToNode[line];
      if (id != null && id >= 0) store.hover({ side, id });
    },
    [index, store, side],
  );
  const gutter = String(lines.length).length;
  return (
    <VirtualList
      role="list"
      aria-label={label}
      className="source-list"
      count={lines.length}
      rowHeight={SOURCE_ROW_HEIGHT_PX}
      scrollToIndex={scrollTo}
      syncScrollTop={syncTop}
      onScrollTop={publishTop}
      onMouseLeave={() => store.hover(null)}
      renderRow={(i) => {
        const l = lines[i]!;
        if (l.status === "filler") return <div role="listitem" aria-hidden="true" className="sline line-filler" />;
        const inHover = hoverLines && l.number >= hoverLines[0] && l.number <= hoverLines[1];
        const inSel = selLines && l.number >= selLines[0] && l.number <= selLines[1];
        return (
          <div
            role="listitem"
            className={`sline line-${l.status}${inHover ? " is-hover" : ""}${inSel ? " is-selected" : ""}`}
            data-line={l.number}
            onMouseEnter={() => onHoverLine(l.number)}
            onClick={() => {
              const id = index?.lineToNode[l.number];
              if (id != null && id >= 0) store.select({ side, id });
            }}
          >
            <span className="lno" style={{ width: `${gutter + 1}ch` }}>
              {l.number}
            </span>
            <span className="lmark" aria-hidden="true">
              {l.status === "added" ? "+" : l.status === "removed" ? "−" : " "}
            </span>
            <span className="ltext">{l.text}</span>
          </div>
        );
      }}
    />
  );
}

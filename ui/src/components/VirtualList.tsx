/**
 * A small windowing list: only the rows in view (plus `overscan`) are in the
 * DOM, so a 20,000-row tree scrolls as fast as a 20-row one. Fixed row height.
 */
import { useEffect, useLayoutEffect, useRef, useState, type ReactNode, type HTMLAttributes } from "react";

/** Props of {@link VirtualList}. */
export interface VirtualListProps extends Omit<HTMLAttributes<HTMLDivElement>, "children"> {
  count: number;
  /** Row height, px. */
  rowHeight: number;
  renderRow: (index: number) => ReactNode;
  /** Rows rendered beyond the visible ones on each side. */
  overscan?: number;
  /** When set (and changed), scrolls so this row is visible. */
  scrollToIndex?: number | null;
  /** Viewport height used before the element is measured (and in test DOMs that do not lay out), px. */
  fallbackHeight?: number;
  /** Scroll offset requested from outside (a linked list), px. */
  syncScrollTop?: number | null;
  /** Called with the scroll offset after the user scrolls, px. */
  onScrollTop?: (top_px: number) => void;
  /** Called with the rendered rows `[first, last)` whenever they change (to fetch them). */
  onRange?: (first: number, last: number) => void;
}

/** The rows a viewport shows: `[first, last)` with overscan, clamped to the count. */
export function visibleRange(scrollTop: number, viewportHeight: number, rowHeight: number, count: number, overscan: number): [number, number] {
  const first = Math.max(0, Math.floor(scrollTop / rowHeight) - overscan);
  const last = Math.min(count, Math.ceil((scrollTop + viewportHeight) / rowHeight) + overscan);
  return [first, Math.max(first, last)];
}

export function VirtualList({
  count,
  rowHeight,
  renderRow,
  overscan = 8,
  scrollToIndex,
  fallbackHeight = 600,
  syncScrollTop,
  onScrollTop,
  onRange,
  style,
  ...rest
}: VirtualListProps) {
  const ref = useRef<HTMLDivElement>(null);
  const [scrollTop, setScrollTop] = useState(0);
  const [height, setHeight] = useState(fallbackHeight);

  useLayoutEffect(() => {
    const el = ref.current;
    if (!el) return;
    const measure = () => setHeight(el.clientHeight > 0 ? el.clientHeight : fallbackHeight);
    measure();
    if (typeof ResizeObserver === "undefined") return;
    const ro = new ResizeObserver(measure);
    ro.observe(el);
    return () => ro.disconnect();
  }, [fallbackHeight]);

  useEffect(() => {
    const el = ref.current;
    if (!el || scrollToIndex == null || scrollToIndex < 0) return;
    const top = scrollToIndex * rowHeight;
    if (top < el.scrollTop || top + rowHeight > el.scrollTop + height) {
      el.scrollTop = Math.max(0, top - height / 3);
      setScrollTop(el.scrollTop);
    }
    // Only when the target changes, not on every resize (so `height` is left out).
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [scrollToIndex, rowHeight]);

  useEffect(() => {
    const el = ref.current;
    if (!el || syncScrollTop == null || Math.abs(el.scrollTop - syncScrollTop) < 1) return;
    el.scrollTop = syncScrollTop;
    setScrollTop(el.scrollTop);
  }, [syncScrollTop]);

  const [first, last] = visibleRange(scrollTop, height, rowHeight, count, overscan);
  useEffect(() => {
    onRange?.(first, last);
  }, [onRange, first, last]);
  const rows: ReactNode[] = [];
  for (let i = first; i < last; i++) {
    rows.push(
      <div key={i} className="vrow" style={{ position: "absolute", top: i * rowHeight, height: rowHeight, left: 0, right: 0 }}>
        {renderRow(i)}
      </div>,
    );
  }
  return (
    <div
      ref={ref}
      {...rest}
      style={{ overflow: "auto", position: "relative", ...style }}
      onScroll={(e) => {
        setScrollTop(e.currentTarget.scrollTop);
        onScrollTop?.(e.currentTarget.scrollTop);
      }}
    >
      <div style={{ height: count * rowHeight, position: "relative", minWidth: "100%" }}>{rows}</div>
    </div>
  );
}

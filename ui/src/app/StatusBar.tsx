/** The status bar: the legends, the keyboard hint, the transport (live when events arrive) and the last error. */
import { KindLegend } from "../lab/Kinds";

/** Props of {@link StatusBar}. */
export interface StatusBarProps {
  /** The back end's transport name. */
  kind: string;
  live: boolean;
  error: string | null;
}

export function StatusBar({ kind, live, error }: StatusBarProps) {
  return (
    <footer className="statusbar">
      <KindLegend />
      <span className="legend">
        <span className="lg lg-changed">changed</span>
        <span className="lg lg-moved">moved</span>
        <span className="lg lg-added">added</span>
        <span className="lg lg-removed">removed</span>
      </span>
      <span className="kbd-hint">← → / j k turns · Ctrl+Z undo · drop files to import</span>
      <span className="backend-kind" title={live ? "receiving back-end events" : "no event stream"}>
        {live ? (
          <span className="live-dot" aria-label="Live updates">
            ●
          </span>
        ) : null}{" "}
        {kind}
      </span>
      {error ? (
        <span className="error" role="alert">
          {error}
        </span>
      ) : null}
    </footer>
  );
}

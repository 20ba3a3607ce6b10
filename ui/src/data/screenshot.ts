/**
 * A state's screenshot as an image URL: its bytes fetched once per shown
 * screenshot (over HTTP as they are, through the desktop IPC in base64),
 * made into a `blob:` URL (the Content-Security-Policy allows `blob:`
 * images and nothing more), revoked when no longer shown. Never decoded
 * here: the browser's `<img>` does that.
 */
import { useEffect, useState } from "react";
import type { Screenshot } from "../api/types";
import type { Backend } from "../backend/backend";

/** The bytes of `shot` as a `Blob` of its media type. */
export async function screenshotBlob(backend: Backend, shot: Screenshot, signal?: AbortSignal): Promise<Blob> {
  if (backend.screenshot) return backend.screenshot(shot.sha256, { signal });
  const data = await backend.call("get_screenshot", { sha256: shot.sha256 }, { signal });
  const text = atob(data.data_base64);
  const bytes = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
  return new Blob([bytes], { type: data.media_type });
}

/** The `blob:` URL of `shot` while it is shown (`null` while loading), or why it could not be had. */
export function useScreenshotUrl(backend: Backend, shot: Screenshot | null): { url: string | null; error: string | null } {
  const [state, setState] = useState<{ sha: string; url: string | null; error: string | null } | null>(null);
  const sha = shot?.sha256 ?? null;
  useEffect(() => {
    if (!shot) return;
    const abort = new AbortController();
    let url: string | null = null;
    screenshotBlob(backend, shot, abort.signal).then(
      (blob) => {
        if (abort.signal.aborted) return;
        url = URL.createObjectURL(blob);
        setState({ sha: shot.sha256, url, error: null });
      },
      (e: unknown) => {
        if (!abort.signal.aborted) setState({ sha: shot.sha256, url: null, error: e instanceof Error ? e.message : String(e) });
      },
    );
    return () => {
      abort.abort();
      if (url) URL.revokeObjectURL(url);
    };
    // The screenshot is named by its hash: another object with the same hash is the same image.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [backend, sha]);
  if (!shot || state?.sha !== sha) return { url: null, error: null };
  return { url: state.url, error: state.error };
}

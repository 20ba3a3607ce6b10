/**
 * The back end's event stream: each event updates or invalidates the cached
 * replies it touches (`data/events.ts`), step and rollout events go to
 * `onLab`, and the first `hello` marks the window live.
 */
import { useQueryClient } from "@tanstack/react-query";
import { useEffect, useRef, useState } from "react";
import { asLabEvent, type LabEvent } from "../api/lab";
import type { Backend } from "../backend/backend";
import { eventApplier } from "../data/events";

/** Subscribes for the window's life; returns whether events are arriving. */
export function useStudioEvents(backend: Backend, onLab: (event: LabEvent) => void): boolean {
  const client = useQueryClient();
  const [live, setLive] = useState(false);
  const handler = useRef(onLab);
  useEffect(() => {
    handler.current = onLab;
  }, [onLab]);
  useEffect(() => {
    const apply = eventApplier(client);
    return backend.subscribe((event) => {
      if (event.type === "hello") setLive(true);
      apply(event);
      const lab = asLabEvent(event);
      if (lab) handler.current(lab);
    });
  }, [backend, client]);
  return live;
}

/**
 * Names the laboratory views use for the laboratory's API types (engines,
 * streaming steps, editing and branching, authored observations, curriculum
 * export, browser upload). Every type is the generated one from
 * `../bindings/api.ts`; this module only adds short aliases and helpers.
 */
import type { Backend } from "../backend/backend";
import type { Commands, ExportCurriculumResponse, ParseActionResponse, StepResponse, StudioEvent } from "./types";

export type {
  BranchCreated,
  CompareRow,
  EngineSettings,
  EngineStatus,
  EndpointKeyStatus,
  GenerationParamsView,
  KeySource,
  ModelDirInfo,
  ModelDtype,
  DraftMode,
  ChatMessage,
  StepStats,
  TokenView,
  ValidationProblem,
  ValidationReport,
} from "./types";

/** `step` reply: the job whose events follow. */
export type StepStarted = StepResponse;
/** `parse_action` reply. */
export type ParsedActionReply = ParseActionResponse;
/** `export_curriculum` reply. */
export type CurriculumExport = ExportCurriculumResponse;
/** Every command: name → [request, response]. */
export type LabCommands = Commands;

/** Runs a command through the backend (kept for symmetry with older call sites). */
export function labCall<C extends keyof Commands>(backend: Backend, command: C, request: Commands[C][0]): Promise<Commands[C][1]> {
  return backend.call(command, request);
}

/** Streaming events of a step or a rollout. */
export type LabEvent = Extract<StudioEvent, { type: "step_delta" | "step_finished" | "rollout_progress" }>;

/** Narrows a studio event to a laboratory event, or `null`. */
export function asLabEvent(event: StudioEvent): LabEvent | null {
  return event.type === "step_delta" || event.type === "step_finished" || event.type === "rollout_progress" ? event : null;
}

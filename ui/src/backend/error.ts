/** The error every back end rejects with, and how an error body becomes one. */

/** An error reply, classified by the back end's `code` so the UI never matches message strings. */
export class BackendError extends Error {
  /** Machine-readable code from `{"error": {"code", "message"}}` (`not_found`, `bad_request`, `unauthorized`, `transport`…). */
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.name = "BackendError";
    this.code = code;
  }
}

/** Turns an `{"error": {"code", "message"}}` body (or anything else) into a {@link BackendError}. */
export function errorFromBody(body: unknown, fallbackCode: string, fallbackMessage: string): BackendError {
  if (body && typeof body === "object" && "error" in body) {
    const err = (body as { error: unknown }).error;
    if (err && typeof err === "object") {
      const { code, message } = err as { code?: unknown; message?: unknown };
      return new BackendError(typeof code === "string" ? code : fallbackCode, typeof message === "string" ? message : fallbackMessage);
    }
    if (typeof err === "string") return new BackendError(fallbackCode, err);
  }
  return new BackendError(fallbackCode, fallbackMessage);
}

/** The error of a call aborted by its signal (`CallOptions.signal`): code `aborted`. */
export function abortedError(command: string): BackendError {
  return new BackendError("aborted", `${command}: aborted (the reply is no longer wanted)`);
}

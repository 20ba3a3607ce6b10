/**
 * "Edit action" and "Add turn": the action as a form of the domain's action
 * space, or as raw text; checked with `parse_action` as it is typed. Saving
 * hands the raw text to the caller (`edit_action` makes a sibling branch,
 * `append_turn` a new turn).
 */
import { useEffect, useState } from "react";
import type { ParsedActionReply } from "../api/lab";
import type { Domain } from "../api/types";
import type { Backend } from "../backend/backend";
import { actionSpace, emptyForm, formProblem, formToRaw, rawToForm, syntaxFor, type ActionForm } from "../model/actionForm";
import { DialogFooter, ErrorLine, Field, RadioSeg, errorMessage, useBusyAction } from "./DialogParts";
import { Modal } from "./Modal";

/** Props of {@link ActionDialog}. */
export interface ActionDialogProps {
  backend: Backend;
  title: string;
  domain: Domain;
  initialRaw: string;
  saveLabel: string;
  onClose: () => void;
  onSave: (raw: string) => Promise<void>;
}

export function ActionDialog({ backend, title, domain, initialRaw, saveLabel, onClose, onSave }: ActionDialogProps) {
  const syntax = syntaxFor(domain);
  const space = actionSpace(syntax);
  const [mode, setMode] = useState<"form" | "raw">(() => (space.length > 0 && (rawToForm(syntax, initialRaw) || initialRaw.trim() === "") ? "form" : "raw"));
  const [form, setForm] = useState<ActionForm>(() => rawToForm(syntax, initialRaw) ?? emptyForm(syntax));
  const [raw, setRaw] = useState(initialRaw);
  // The back end's check of the text; none shown while the text is empty. `format` is "" when the check itself failed.
  const [lastCheck, setCheck] = useState<(Omit<ParsedActionReply, "format"> & { format: ParsedActionReply["format"] | "" }) | null>(null);
  const { busy, error, setError, run } = useBusyAction();

  const problem = mode === "form" ? formProblem(syntax, form) : raw.trim() === "" ? "the action is empty" : null;
  const text = mode === "form" && !problem ? formToRaw(syntax, form) : mode === "raw" ? raw : "";

  // Check the text with the back end's parser as it changes.
  const check = text.trim() ? lastCheck : null;
  // A check the next keystroke superseded is cancelled.
  useEffect(() => {
    if (!text.trim()) return;
    const abort = new AbortController();
    const timer = window.setTimeout(() => {
      backend
        .call("parse_action", { domain, raw: text }, { signal: abort.signal })
        .then((r) => setCheck(r))
        .catch((e) => !abort.signal.aborted && setCheck({ format: "", parsed: null, error: errorMessage(e), summary: "" }));
    }, 200);
    return () => {
      abort.abort();
      window.clearTimeout(timer);
    };
  }, [backend, domain, text]);

  const switchMode = (m: "form" | "raw") => {
    if (m === mode) return;
    if (m === "raw") setRaw(text || raw);
    else {
      const f = rawToForm(syntax, raw);
      if (!f && raw.trim() !== "") {
        setError("This action does not fit the form; edit it as raw text.");
        return;
      }
      setForm(f ?? emptyForm(syntax));
    }
    setError(null);
    setMode(m);
  };

  const spec = space.find((a) => a.name === form.name);

  return (
    <Modal
      title={title}
      onClose={onClose}
      footer={
        <DialogFooter
          closeLabel="Cancel"
          onClose={onClose}
          primary={{ label: saveLabel, disabled: !!busy || !!problem, onClick: () => void run(() => onSave(text)) }}
        />
      }
    >
      {space.length > 0 ? (
        <RadioSeg
          as="pressed"
          label="Action editor mode"
          options={[
            ["form", "Form"],
            ["raw", "Raw text"],
          ]}
          value={mode}
          onChange={switchMode}
        />
      ) : null}
      {mode === "form" && spec ? (
        <div className="action-form">
          <Field label="Action">
            <select
              aria-label="Action name"
              value={form.name}
              onChange={(e) =>
                setForm({ name: e.target.value, values: { ...emptyForm(syntax, e.target.value).values, ...pick(form.values, e.target.value, syntax) } })
              }
            >
              {space.map((a) => (
                <option key={a.name} value={a.name}>
                  {a.name}
                </option>
              ))}
            </select>
          </Field>
          {spec.params.map((p) =>
            p.kind === "json" ? (
              <Field key={p.name} label={`${p.name} (JSON)`}>
                <textarea
                  aria-label={p.name}
                  rows={5}
                  value={form.values[p.name] ?? ""}
                  onChange={(e) => setForm({ ...form, values: { ...form.values, [p.name]: e.target.value } })}
                />
              </Field>
            ) : (
              <Field
                key={p.name}
                label={
                  <>
                    {p.name}
                    {p.optional ? " (optional)" : ""}
                    {p.kind === "list" ? " (comma-separated)" : ""}
                  </>
                }
              >
                <input
                  aria-label={p.name}
                  inputMode={p.kind === "number" ? "decimal" : undefined}
                  value={form.values[p.name] ?? ""}
                  onChange={(e) => setForm({ ...form, values: { ...form.values, [p.name]: e.target.value } })}
                />
              </Field>
            ),
          )}
          <div className="field">
            <span>Raw action</span>
            <code className="action-preview" aria-label="Raw action preview">
              {problem ? "—" : text}
            </code>
          </div>
        </div>
      ) : (
        <Field label="Raw action">
          <textarea aria-label="Raw action" className="mono" rows={6} value={raw} onChange={(e) => setRaw(e.target.value)} />
        </Field>
      )}
      <p className={problem || check?.error ? "check-line warn" : "check-line"} role="status" aria-label="Action check">
        {problem
          ? problem
          : check
            ? check.error
              ? `${check.format || "action"}: ${check.error}`
              : `${check.format}: ${check.summary}${check.parsed ? " ✓ parsed" : ""}`
            : "checking…"}
      </p>
      <ErrorLine error={error} />
    </Modal>
  );
}

/** Keeps values of parameters the new action shares with the old one. */
function pick(values: Record<string, string>, name: string, syntax: ReturnType<typeof syntaxFor>): Record<string, string> {
  const spec = actionSpace(syntax).find((a) => a.name === name);
  const out: Record<string, string> = {};
  for (const p of spec?.params ?? []) if (values[p.name]) out[p.name] = values[p.name]!;
  return out;
}

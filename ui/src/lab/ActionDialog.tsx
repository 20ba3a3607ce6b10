/**
 * "Edit action" and "Add turn": the action as a form of the domain's action
 * space, or as raw text. The back end answers every question about actions:
 * `action_space` lists the form's actions and parameters, `parse_action`
 * reads a text into the form's fields (and checks it as it is typed),
 * `format_action` writes the filled form as the raw text or names the bad
 * parameter. Saving hands the raw text to the caller (`edit_action` makes a
 * sibling branch, `append_turn` a new turn).
 */
import { useQueryClient } from "@tanstack/react-query";
import { useEffect, useState } from "react";
import type { ActionFields, ActionSpec, Domain } from "../api/types";
import type { Backend } from "../backend/backend";
import { parseActionQuery, useActionSpace, useFormattedAction, useParsedAction } from "../data/queries";
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

/** The empty form of an action: every parameter empty (`{}` for JSON). */
function emptyFields(spec: ActionSpec | undefined): ActionFields {
  const fields: Record<string, string> = {};
  for (const p of spec?.params ?? []) fields[p.name] = p.kind === "json" ? "{}" : "";
  return { name: spec?.name ?? "", fields };
}

/** A text the checks wait for: the latest value once it has not changed for `ms`. */
function useSettled(value: string, ms: number): string {
  const [settled, setSettled] = useState(value);
  useEffect(() => {
    const timer = window.setTimeout(() => setSettled(value), ms);
    return () => window.clearTimeout(timer);
  }, [value, ms]);
  return settled;
}

/** What the user is editing: the mode, the form and the raw text. */
interface Editing {
  mode: "form" | "raw";
  form: ActionFields;
  raw: string;
}

/**
 * The dialog. The editor opens once the domain's action space and the
 * initial action's fields have arrived; the dialog itself is shown at once.
 */
export function ActionDialog({ backend, title, domain, initialRaw, saveLabel, onClose, onSave }: ActionDialogProps) {
  const client = useQueryClient();
  const space = useActionSpace(backend, domain);
  const initial = useParsedAction(backend, domain, initialRaw);
  const actions = space.data?.actions ?? [];
  const hasForm = actions.length > 0;
  const [editing, setEditing] = useState<Editing | null>(null);
  if (editing === null && space.data && (initialRaw.trim() === "" || initial.data)) {
    const initialForm = initial.data?.form ?? null;
    setEditing({
      mode: hasForm && (initialForm || initialRaw.trim() === "") ? "form" : "raw",
      form: initialForm ?? emptyFields(actions[0]),
      raw: initialRaw,
    });
  }
  const mode = editing?.mode ?? "raw";
  const form = editing?.form ?? emptyFields(undefined);
  const raw = editing?.raw ?? initialRaw;
  const setMode = (m: Editing["mode"]) => setEditing((e) => e && { ...e, mode: m });
  const setForm = (f: ActionFields) => setEditing((e) => e && { ...e, form: f });
  const setRaw = (r: string) => setEditing((e) => e && { ...e, raw: r });
  const { busy, error, setError, run } = useBusyAction();

  // The form written by the back end; a reply for an older form is only kept on screen.
  const formatted = useFormattedAction(backend, domain, editing && mode === "form" ? form : null);
  const reply = mode === "form" && !formatted.isPlaceholderData ? formatted.data : undefined;
  const pending = mode === "form" && !reply && !formatted.error;
  const problem =
    mode === "form" ? (formatted.error ? errorMessage(formatted.error) : (reply?.problem?.message ?? null)) : raw.trim() === "" ? "the action is empty" : null;
  const badParam = mode === "form" ? (reply?.problem?.param ?? null) : null;
  const text = mode === "form" ? (reply?.raw ?? "") : raw;
  const shown = mode === "form" ? (formatted.data?.raw ?? null) : null;

  // The back end's check of the text, once typing pauses.
  const checked = useSettled(text, 200);
  const check = useParsedAction(backend, domain, checked);
  const current = editing !== null && checked === text && !pending && text.trim() !== "";
  const loadFailure = space.error ?? initial.error;

  const switchMode = (m: "form" | "raw") => {
    if (m === mode) return;
    setError(null);
    if (m === "raw") {
      setRaw(text || raw);
      setMode("raw");
      return;
    }
    if (raw.trim() === "") {
      setForm(emptyFields(actions[0]));
      setMode("form");
      return;
    }
    void run(async () => {
      const parsed = await client.fetchQuery(parseActionQuery(backend, domain, raw));
      if (!parsed.form) {
        setError(`This action does not fit the form (${parsed.form_problem ?? "unknown"}); edit it as raw text.`);
        return;
      }
      setForm(parsed.form);
      setMode("form");
    }, "reading");
  };

  const spec = actions.find((a) => a.name === form.name);
  const setField = (name: string, value: string) => setForm({ ...form, fields: { ...form.fields, [name]: value } });
  /** Another action keeps the values of the parameters it shares with the current one. */
  const chooseAction = (name: string) => {
    const next = emptyFields(actions.find((a) => a.name === name));
    for (const key of Object.keys(next.fields)) {
      const kept = form.fields[key];
      if (kept) next.fields[key] = kept;
    }
    setForm(next);
  };

  let checkLine: string;
  if (!editing) checkLine = loadFailure ? `action: ${errorMessage(loadFailure)}` : "reading the action…";
  else if (problem) checkLine = problem;
  else if (!current) checkLine = "checking…";
  else if (check.error) checkLine = `action: ${errorMessage(check.error)}`;
  else if (!check.data) checkLine = "checking…";
  else if (check.data.error) checkLine = `${check.data.format}: ${check.data.error}`;
  else checkLine = `${check.data.format}: ${check.data.summary}${check.data.parsed || check.data.form ? " ✓ parsed" : ""}`;
  const warn = !!loadFailure || !!problem || (current && (!!check.error || !!check.data?.error));

  return (
    <Modal
      title={title}
      onClose={onClose}
      footer={
        <DialogFooter
          closeLabel="Cancel"
          onClose={onClose}
          primary={{
            label: saveLabel,
            disabled: !editing || !!busy || !!problem || pending || text.trim() === "",
            onClick: () => void run(() => onSave(text)),
          }}
        />
      }
    >
      {editing && hasForm ? (
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
      {!editing ? null : mode === "form" && spec ? (
        <div className="action-form">
          <Field label="Action">
            <select aria-label="Action name" value={form.name} title={spec.description} onChange={(e) => chooseAction(e.target.value)}>
              {actions.map((a) => (
                <option key={a.name} value={a.name} title={a.description}>
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
                  aria-invalid={badParam === p.name || undefined}
                  title={p.description}
                  rows={5}
                  value={form.fields[p.name] ?? ""}
                  onChange={(e) => setField(p.name, e.target.value)}
                />
              </Field>
            ) : (
              <Field
                key={p.name}
                label={
                  <>
                    {p.name}
                    {p.required ? "" : " (optional)"}
                    {p.kind === "list" ? " (comma-separated)" : ""}
                  </>
                }
              >
                <input
                  aria-label={p.name}
                  aria-invalid={badParam === p.name || undefined}
                  title={p.description}
                  placeholder={p.description}
                  inputMode={p.kind === "number" ? "decimal" : undefined}
                  value={form.fields[p.name] ?? ""}
                  onChange={(e) => setField(p.name, e.target.value)}
                />
              </Field>
            ),
          )}
          <div className="field">
            <span>Raw action</span>
            <code className="action-preview" aria-label="Raw action preview">
              {problem || shown === null ? "—" : shown}
            </code>
          </div>
        </div>
      ) : (
        <Field label="Raw action">
          <textarea aria-label="Raw action" className="mono" rows={6} value={raw} onChange={(e) => setRaw(e.target.value)} />
        </Field>
      )}
      <p className={warn ? "check-line warn" : "check-line"} role="status" aria-label="Action check">
        {checkLine}
      </p>
      <ErrorLine error={error} />
    </Modal>
  );
}

/**
 * "Edit action" and "Add turn": the action as a form of the domain's action
 * space, or as raw text; checked with `parse_action` as it is typed. Saving
 * hands the raw text to the caller (`edit_action` makes a sibling branch,
 * `append_turn` a new turn).
 */
import { useEffect, useMemo, useState } from "react";
import type { ParsedActionReply } from "../api/lab";
import type { Domain } from "../api/types";
import type { Backend } from "../backend/backend";
import { actionSpace, emptyForm, formProblem, formToRaw, rawToForm, syntaxFor, type ActionForm } from "../model/actionForm";
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
  const initialForm = useMemo(() => rawToForm(syntax, initialRaw), [syntax, initialRaw]);
  const [mode, setMode] = useState<"form" | "raw">(space.length > 0 && (initialForm || initialRaw.trim() === "") ? "form" : "raw");
  const [form, setForm] = useState<ActionForm>(initialForm ?? emptyForm(syntax));
  const [raw, setRaw] = useState(initialRaw);
  // `format` is "" when the check itself failed.
  const [check, setCheck] = useState<(Omit<ParsedActionReply, "format"> & { format: ParsedActionReply["format"] | "" }) | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const problem = mode === "form" ? formProblem(syntax, form) : raw.trim() === "" ? "the action is empty" : null;
  const text = mode === "form" && !problem ? formToRaw(syntax, form) : mode === "raw" ? raw : "";

  // Check the text with the back end's parser as it changes.
  useEffect(() => {
    if (!text.trim()) {
      setCheck(null);
      return;
    }
    let stale = false;
    const timer = window.setTimeout(() => {
      backend
        .call("parse_action", { domain, raw: text })
        .then((r) => !stale && setCheck(r))
        .catch((e) => !stale && setCheck({ format: "", parsed: null, error: e instanceof Error ? e.message : String(e), summary: "" }));
    }, 200);
    return () => {
      stale = true;
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
  const save = async () => {
    setBusy(true);
    setError(null);
    try {
      await onSave(text);
    } catch (e) {
      setError(e instanceof Error ? e.message : String(e));
      setBusy(false);
    }
  };

  return (
    <Modal
      title={title}
      onClose={onClose}
      footer={
        <>
          <button type="button" onClick={onClose}>
            Cancel
          </button>
          <button type="button" className="primary" disabled={busy || !!problem} onClick={() => void save()}>
            {saveLabel}
          </button>
        </>
      }
    >
      {space.length > 0 ? (
        <div className="seg" role="group" aria-label="Action editor mode">
          <button type="button" aria-pressed={mode === "form"} onClick={() => switchMode("form")}>
            Form
          </button>
          <button type="button" aria-pressed={mode === "raw"} onClick={() => switchMode("raw")}>
            Raw text
          </button>
        </div>
      ) : null}
      {mode === "form" && spec ? (
        <div className="action-form">
          <label className="field">
            <span>Action</span>
            <select aria-label="Action name" value={form.name} onChange={(e) => setForm({ name: e.target.value, values: { ...emptyForm(syntax, e.target.value).values, ...pick(form.values, e.target.value, syntax) } })}>
              {space.map((a) => (
                <option key={a.name} value={a.name}>
                  {a.name}
                </option>
              ))}
            </select>
          </label>
          {spec.params.map((p) =>
            p.kind === "json" ? (
              <label key={p.name} className="field">
                <span>{p.name} (JSON)</span>
                <textarea aria-label={p.name} rows={5} value={form.values[p.name] ?? ""} onChange={(e) => setForm({ ...form, values: { ...form.values, [p.name]: e.target.value } })} />
              </label>
            ) : (
              <label key={p.name} className="field">
                <span>
                  {p.name}
                  {p.optional ? " (optional)" : ""}
                  {p.kind === "list" ? " (comma-separated)" : ""}
                </span>
                <input
                  aria-label={p.name}
                  inputMode={p.kind === "number" ? "decimal" : undefined}
                  value={form.values[p.name] ?? ""}
                  onChange={(e) => setForm({ ...form, values: { ...form.values, [p.name]: e.target.value } })}
                />
              </label>
            ),
          )}
          <div className="field">
            <span>Raw action</span>
            <code className="action-preview" aria-label="Raw action preview">{problem ? "—" : text}</code>
          </div>
        </div>
      ) : (
        <label className="field">
          <span>Raw action</span>
          <textarea aria-label="Raw action" className="mono" rows={6} value={raw} onChange={(e) => setRaw(e.target.value)} />
        </label>
      )}
      <p className={problem || check?.error ? "check-line warn" : "check-line"} role="status" aria-label="Action check">
        {problem ? problem : check ? (check.error ? `${check.format || "action"}: ${check.error}` : `${check.format}: ${check.summary}${check.parsed ? " ✓ parsed" : ""}`) : "checking…"}
      </p>
      {error ? (
        <p className="error" role="alert">
          {error}
        </p>
      ) : null}
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

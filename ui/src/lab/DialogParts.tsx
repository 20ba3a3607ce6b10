/**
 * The pieces every dialog is made of: a labelled field, a segmented radio
 * group, the footer (close button, extra buttons, the primary action), the
 * error line, and `useBusyAction`, which runs a command with the dialog
 * marked busy and its failure shown as the dialog's error.
 */
import { useCallback, useState, type InputHTMLAttributes, type ReactNode } from "react";

/** A thrown value as a message. */
export function errorMessage(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** Runs commands for a dialog: `busy` names the one running (`null`: none); a failure becomes `error`. */
export function useBusyAction(initialError: string | null = null) {
  const [busy, setBusy] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(initialError);
  const run = useCallback(async (what: () => Promise<void>, label = "busy") => {
    setBusy(label);
    setError(null);
    try {
      await what();
    } catch (e) {
      setError(errorMessage(e));
    } finally {
      setBusy(null);
    }
  }, []);
  return { busy, error, setError, run };
}

/** The dialog's error, if any (`role="alert"`). */
export function ErrorLine({ error }: { error: string | null }) {
  return error ? (
    <p className="error" role="alert">
      {error}
    </p>
  ) : null;
}

/** A labelled field: the label above its control. `grow`: takes the row's free width. */
export function Field({ label, grow, children }: { label: ReactNode; grow?: boolean; children: ReactNode }) {
  return (
    <label className={grow ? "field grow" : "field"}>
      <span>{label}</span>
      {children}
    </label>
  );
}

/** Props of {@link TextField}: those of an `<input>` but its name and change handler. */
export type TextFieldProps = Omit<InputHTMLAttributes<HTMLInputElement>, "aria-label" | "onChange"> & {
  /** The field's label, also the input's accessible name. */
  label: string;
  grow?: boolean;
  /** Called with the input's new text on each change. */
  onValue: (value: string) => void;
};

/** A {@link Field} holding one input named by the field's label. */
export function TextField({ label, grow, onValue, ...input }: TextFieldProps) {
  return (
    <Field label={label} grow={grow}>
      <input aria-label={label} {...input} onChange={(e) => onValue(e.target.value)} />
    </Field>
  );
}

/** Props of {@link RadioSeg}. */
export interface RadioSegProps<T extends string> {
  /** `radio` (default): a radio group of `role="radio"` buttons; `pressed`: a group of toggle buttons (`aria-pressed`). */
  as?: "radio" | "pressed";
  /** The group's accessible name. */
  label: string;
  /** Each choice: its value and, when the text differs, what the button says. */
  options: ReadonlyArray<T | readonly [T, ReactNode]>;
  value: T;
  onChange: (value: T) => void;
  /** A tooltip per choice. */
  title?: (value: T) => string;
}

/** A segmented choice: one of a few buttons is on. */
export function RadioSeg<T extends string>({ as = "radio", label, options, value, onChange, title }: RadioSegProps<T>) {
  const radio = as === "radio";
  return (
    <div className="seg" role={radio ? "radiogroup" : "group"} aria-label={label}>
      {options.map((o) => {
        const [v, text] = typeof o === "string" ? [o as T, o as ReactNode] : (o as readonly [T, ReactNode]);
        const on = value === v;
        return (
          <button
            key={v}
            type="button"
            role={radio ? "radio" : undefined}
            aria-checked={radio ? on : undefined}
            aria-pressed={radio ? undefined : on}
            onClick={() => onChange(v)}
            title={title?.(v)}
          >
            {text}
          </button>
        );
      })}
    </div>
  );
}

/** The primary action of a footer. */
export interface PrimaryAction {
  label: ReactNode;
  onClick: () => void;
  disabled?: boolean;
  /** `danger` for an action that needs a second look. */
  tone?: "primary" | "danger";
}

/** Props of {@link DialogFooter}. */
export interface DialogFooterProps {
  /** Before the close button (a busy line, secondary actions). */
  before?: ReactNode;
  closeLabel: "Cancel" | "Close";
  onClose: () => void;
  /** Between the close button and the primary action. */
  after?: ReactNode;
  primary?: PrimaryAction;
}

/** A dialog's buttons: `before`, the close button, `after`, the primary action. */
export function DialogFooter({ before, closeLabel, onClose, after, primary }: DialogFooterProps) {
  return (
    <>
      {before}
      <button type="button" onClick={onClose}>
        {closeLabel}
      </button>
      {after}
      {primary ? (
        <button type="button" className={primary.tone ?? "primary"} disabled={primary.disabled} onClick={primary.onClick}>
          {primary.label}
        </button>
      ) : null}
    </>
  );
}

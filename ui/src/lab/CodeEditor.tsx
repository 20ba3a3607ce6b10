/**
 * A CodeMirror 6 editor for observation text: HTML or XML syntax
 * highlighting (plain for other representations), line numbers, undo
 * history, and a way to move the cursor to a problem's line and column.
 */
import { defaultKeymap, history, historyKeymap } from "@codemirror/commands";
import { html } from "@codemirror/lang-html";
import { xml } from "@codemirror/lang-xml";
import { HighlightStyle, syntaxHighlighting } from "@codemirror/language";
import { EditorState, type Extension } from "@codemirror/state";
import { EditorView, keymap, lineNumbers } from "@codemirror/view";
import { tags as t } from "@lezer/highlight";
import { forwardRef, useEffect, useImperativeHandle, useRef } from "react";
import type { Representation } from "../api/types";

/** Colours come from CSS variables, so both themes stay legible. */
const HIGHLIGHT = HighlightStyle.define([
  { tag: [t.tagName, t.angleBracket], color: "var(--hl-tag)" },
  { tag: t.attributeName, color: "var(--hl-attr)" },
  { tag: [t.attributeValue, t.string], color: "var(--hl-string)" },
  { tag: t.comment, color: "var(--muted)", fontStyle: "italic" },
  { tag: [t.processingInstruction, t.documentMeta], color: "var(--hl-meta)" },
  { tag: t.invalid, color: "var(--removed)" },
]);

/** The language extension for a representation: HTML, XML (OS and Android trees) or none. */
export function languageFor(representation: Representation): Extension {
  if (representation === "html") return html({ autoCloseTags: false });
  if (representation === "os-xml" || representation === "android-xml") return xml();
  return [];
}

/** Imperative handle of {@link CodeEditor}. */
export interface CodeEditorHandle {
  /** Moves the cursor to a 1-based line and column and scrolls there. */
  goTo(line: number, column: number): void;
}

/** Props of {@link CodeEditor}. */
export interface CodeEditorProps {
  value: string;
  representation: Representation;
  onChange: (text: string) => void;
  label: string;
}

export const CodeEditor = forwardRef<CodeEditorHandle, CodeEditorProps>(function CodeEditor({ value, representation, onChange, label }, ref) {
  const host = useRef<HTMLDivElement>(null);
  const view = useRef<EditorView | null>(null);
  const changed = useRef(onChange);
  changed.current = onChange;

  useEffect(() => {
    if (!host.current) return;
    const v = new EditorView({
      parent: host.current,
      state: EditorState.create({
        doc: value,
        extensions: [
          lineNumbers(),
          history(),
          keymap.of([...defaultKeymap, ...historyKeymap]),
          languageFor(representation),
          syntaxHighlighting(HIGHLIGHT),
          EditorView.lineWrapping,
          EditorView.contentAttributes.of({ "aria-label": label }),
          EditorView.updateListener.of((u) => {
            if (u.docChanged) changed.current(u.state.doc.toString());
          }),
        ],
      }),
    });
    view.current = v;
    return () => {
      v.destroy();
      view.current = null;
    };
    // The editor is rebuilt only when the language changes; `value` seeds it.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [representation, label]);

  useImperativeHandle(ref, () => ({
    goTo(line: number, column: number) {
      const v = view.current;
      if (!v) return;
      const l = v.state.doc.line(Math.max(1, Math.min(v.state.doc.lines, line)));
      const pos = Math.min(l.to, l.from + Math.max(0, column - 1));
      v.dispatch({ selection: { anchor: pos }, scrollIntoView: true });
      v.focus();
    },
  }));

  return <div className="code-editor" ref={host} />;
});

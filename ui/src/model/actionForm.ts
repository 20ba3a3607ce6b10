/**
 * The "Edit action" form: each domain's action space as named actions with
 * typed parameters, and the conversion between a filled form and the raw
 * action text the world model sees.
 *
 * Action languages (as in `worldloom-core::action::ActionFormat`):
 * - Web: BrowserGym high-level calls, Python call syntax (`click('12')`,
 *   `fill('41', 'text')`), BrowserGym `HighLevelActionSet` names.
 * - OS: `pyautogui` code (`pyautogui.click(640, 360)`), plus OSWorld's
 *   `WAIT` / `DONE` / `FAIL`.
 * - Android: one JSON object with `action_type` (AndroidWorld style:
 *   `{"action_type": "click", "x": 540, "y": 559}`).
 * - MCP and SWE: a tool call `{"name": …, "arguments": {…}}`.
 * - Terminal, Search: free text.
 * Anything the form cannot express stays in raw text mode.
 */
import type { Domain } from "../api/types";

/** How a parameter is written. */
export type ParamKind = "string" | "number" | "json" | "list";

/** One parameter of an action. */
export interface ActionParam {
  name: string;
  kind: ParamKind;
  optional?: boolean;
}

/** One action of a domain's action space. */
export interface ActionSpec {
  name: string;
  params: ActionParam[];
}

/** The syntax of a domain's raw actions. */
export type ActionSyntax = "browsergym" | "pyautogui" | "android-json" | "tool-call" | "text";

/** A filled form: the action name and each parameter's text as typed. */
export interface ActionForm {
  name: string;
  values: Record<string, string>;
}

const s = (name: string, optional = false): ActionParam => ({ name, kind: "string", optional });
const n = (name: string, optional = false): ActionParam => ({ name, kind: "number", optional });

const BROWSERGYM: ActionSpec[] = [
  { name: "click", params: [s("bid"), s("button", true)] },
  { name: "dblclick", params: [s("bid")] },
  { name: "hover", params: [s("bid")] },
  { name: "fill", params: [s("bid"), s("value")] },
  { name: "select_option", params: [s("bid"), s("options")] },
  { name: "clear", params: [s("bid")] },
  { name: "focus", params: [s("bid")] },
  { name: "press", params: [s("bid"), s("key_comb")] },
  { name: "scroll", params: [n("delta_x"), n("delta_y")] },
  { name: "goto", params: [s("url")] },
  { name: "go_back", params: [] },
  { name: "go_forward", params: [] },
  { name: "new_tab", params: [] },
  { name: "tab_close", params: [] },
  { name: "tab_focus", params: [n("index")] },
  { name: "send_msg_to_user", params: [s("text")] },
  { name: "report_infeasible", params: [s("reason")] },
  { name: "noop", params: [n("wait_ms", true)] },
];

const PYAUTOGUI: ActionSpec[] = [
  { name: "click", params: [n("x"), n("y")] },
  { name: "doubleClick", params: [n("x"), n("y")] },
  { name: "rightClick", params: [n("x"), n("y")] },
  { name: "moveTo", params: [n("x"), n("y")] },
  { name: "dragTo", params: [n("x"), n("y")] },
  { name: "write", params: [s("message")] },
  { name: "typewrite", params: [s("message")] },
  { name: "press", params: [s("keys")] },
  { name: "hotkey", params: [{ name: "keys", kind: "list" }] },
  { name: "scroll", params: [n("clicks")] },
  { name: "WAIT", params: [] },
  { name: "DONE", params: [] },
  { name: "FAIL", params: [] },
];

// AndroidWorld's actions, plus the AndroidControl-style `type` and a click
// or long press on an `element` (a resource-id or index) instead of x/y.
const ANDROID: ActionSpec[] = [
  { name: "click", params: [n("x", true), n("y", true), s("element", true)] },
  { name: "long_press", params: [n("x", true), n("y", true), s("element", true)] },
  { name: "input_text", params: [s("text"), n("x", true), n("y", true)] },
  { name: "type", params: [s("text")] },
  { name: "scroll", params: [s("direction")] },
  { name: "navigate_back", params: [] },
  { name: "navigate_home", params: [] },
  { name: "keyboard_enter", params: [] },
  { name: "open_app", params: [s("app_name")] },
  { name: "wait", params: [] },
  { name: "status", params: [s("goal_status")] },
  { name: "answer", params: [s("text")] },
];

const TOOL_CALL: ActionSpec[] = [{ name: "tool call", params: [s("name"), { name: "arguments", kind: "json" }] }];

/** The syntax of a domain's actions. */
export function syntaxFor(domain: Domain | string): ActionSyntax {
  switch (domain) {
    case "web":
      return "browsergym";
    case "os":
      return "pyautogui";
    case "android":
      return "android-json";
    case "mcp":
    case "swe":
      return "tool-call";
    default:
      return "text";
  }
}

/** The action space of a syntax (empty for free text). */
export function actionSpace(syntax: ActionSyntax): ActionSpec[] {
  switch (syntax) {
    case "browsergym":
      return BROWSERGYM;
    case "pyautogui":
      return PYAUTOGUI;
    case "android-json":
      return ANDROID;
    case "tool-call":
      return TOOL_CALL;
    default:
      return [];
  }
}

/** An empty form for `name`. */
export function emptyForm(syntax: ActionSyntax, name?: string): ActionForm {
  const spec = actionSpace(syntax).find((a) => a.name === name) ?? actionSpace(syntax)[0];
  const values: Record<string, string> = {};
  for (const p of spec?.params ?? []) values[p.name] = p.kind === "json" ? "{}" : "";
  return { name: spec?.name ?? "", values };
}

/** A Python string literal (single quotes, backslash escapes). */
export function pyString(v: string): string {
  return `'${v.replace(/\\/g, "\\\\").replace(/'/g, "\\'").replace(/\n/g, "\\n").replace(/\r/g, "\\r").replace(/\t/g, "\\t")}'`;
}

function numberText(v: string, what: string): string {
  const t = v.trim();
  if (!/^-?\d+(\.\d+)?$/.test(t)) throw new Error(`${what}: a number is needed, got "${v}"`);
  return t;
}

/** Why a form cannot be written yet, or `null` when it is complete. */
export function formProblem(syntax: ActionSyntax, form: ActionForm): string | null {
  try {
    formToRaw(syntax, form);
    return null;
  } catch (e) {
    return e instanceof Error ? e.message : String(e);
  }
}

/**
 * The raw action text of a filled form. Throws an `Error` naming the
 * parameter when a required one is empty or a number is not a number.
 */
export function formToRaw(syntax: ActionSyntax, form: ActionForm): string {
  const spec = actionSpace(syntax).find((a) => a.name === form.name);
  if (!spec) throw new Error(`unknown action "${form.name}"`);
  const given = spec.params.filter((p) => (form.values[p.name] ?? "").trim() !== "");
  for (const p of spec.params) {
    if (!p.optional && (form.values[p.name] ?? "").trim() === "") throw new Error(`${form.name}: ${p.name} is required`);
  }
  switch (syntax) {
    case "browsergym":
    case "pyautogui": {
      if (syntax === "pyautogui" && ["WAIT", "DONE", "FAIL"].includes(spec.name)) return spec.name;
      const args: string[] = [];
      for (const p of spec.params) {
        const v = form.values[p.name] ?? "";
        if (p.optional && v.trim() === "") break; // optional parameters are trailing
        if (p.kind === "number") args.push(numberText(v, `${form.name}: ${p.name}`));
        else if (p.kind === "list")
          args.push(
            ...v
              .split(",")
              .map((k) => k.trim())
              .filter((k) => k !== "")
              .map(pyString),
          );
        else args.push(pyString(v));
      }
      const fn = syntax === "pyautogui" ? `pyautogui.${spec.name}` : spec.name;
      return `${fn}(${args.join(", ")})`;
    }
    case "android-json": {
      const obj: Record<string, unknown> = { action_type: spec.name };
      for (const p of given) {
        const v = form.values[p.name] ?? "";
        obj[p.name] = p.kind === "number" ? Number(numberText(v, `${form.name}: ${p.name}`)) : v;
      }
      return JSON.stringify(obj);
    }
    case "tool-call": {
      let args: unknown;
      try {
        args = JSON.parse(form.values.arguments?.trim() || "{}");
      } catch (e) {
        throw new Error(`arguments: not JSON (${e instanceof Error ? e.message : String(e)})`, { cause: e });
      }
      if (!args || typeof args !== "object" || Array.isArray(args)) throw new Error("arguments: a JSON object is needed");
      return JSON.stringify({ name: (form.values.name ?? "").trim(), arguments: args });
    }
    default:
      throw new Error("free-text actions have no form");
  }
}

/** A literal read from a Python call. */
type PyValue = string | number | boolean | null;

/** Reads `name(arg, …, key=arg)` with literal arguments; `null` when it is not such a call. */
export function parsePythonCall(raw: string): { name: string; args: PyValue[]; kwargs: Record<string, PyValue> } | null {
  const text = raw.trim();
  const m = /^([A-Za-z_][\w.]*)\s*\(([\s\S]*)\)$/.exec(text);
  if (!m) return null;
  const name = m[1]!;
  const body = m[2]!;
  const args: PyValue[] = [];
  const kwargs: Record<string, PyValue> = {};
  let i = 0;
  const skip = () => {
    while (i < body.length && /\s/.test(body[i]!)) i++;
  };
  const literal = (): PyValue | undefined => {
    skip();
    const c = body[i];
    if (c === "'" || c === '"') {
      const quote = c;
      i++;
      let out = "";
      while (i < body.length && body[i] !== quote) {
        if (body[i] === "\\" && i + 1 < body.length) {
          const e = body[i + 1]!;
          out += e === "n" ? "\n" : e === "t" ? "\t" : e === "r" ? "\r" : e;
          i += 2;
        } else out += body[i++];
      }
      if (body[i] !== quote) return undefined;
      i++;
      return out;
    }
    const word = /^(-?\d+(?:\.\d+)?|True|False|None)/.exec(body.slice(i));
    if (!word) return undefined;
    i += word[0].length;
    if (word[0] === "True") return true;
    if (word[0] === "False") return false;
    if (word[0] === "None") return null;
    return Number(word[0]);
  };
  skip();
  while (i < body.length) {
    const kw = /^([A-Za-z_]\w*)\s*=/.exec(body.slice(i));
    if (kw) i += kw[0].length;
    const v = literal();
    if (v === undefined) return null;
    if (kw) kwargs[kw[1]!] = v;
    else args.push(v);
    skip();
    if (i >= body.length) break;
    if (body[i] !== ",") return null;
    i++;
    skip();
  }
  return { name, args, kwargs };
}

/**
 * The form for a raw action, or `null` when the text is not a single action
 * of the domain's space (then the editor opens in raw text mode).
 */
export function rawToForm(syntax: ActionSyntax, raw: string): ActionForm | null {
  const space = actionSpace(syntax);
  const text = raw.trim();
  if (text === "") return null;
  switch (syntax) {
    case "browsergym":
    case "pyautogui": {
      if (syntax === "pyautogui" && ["WAIT", "DONE", "FAIL"].includes(text)) return { name: text, values: {} };
      if (text.includes("\n")) return null;
      const call = parsePythonCall(text);
      if (!call) return null;
      const name = syntax === "pyautogui" ? call.name.replace(/^pyautogui\./, "") : call.name;
      if (syntax === "pyautogui" && !call.name.startsWith("pyautogui.")) return null;
      const spec = space.find((a) => a.name === name);
      if (!spec) return null;
      const values: Record<string, string> = {};
      if (spec.params.length === 1 && spec.params[0]!.kind === "list") {
        values[spec.params[0]!.name] = call.args.map(String).join(", ");
        return { name, values };
      }
      if (call.args.length > spec.params.length) return null;
      for (const [k, v] of Object.entries(call.kwargs)) {
        if (!spec.params.some((p) => p.name === k)) return null;
        values[k] = v === null ? "" : String(v);
      }
      spec.params.forEach((p, idx) => {
        if (idx < call.args.length) values[p.name] = call.args[idx] === null ? "" : String(call.args[idx]);
        else values[p.name] ??= "";
      });
      return { name, values };
    }
    case "android-json": {
      let obj: unknown;
      try {
        obj = JSON.parse(text);
      } catch {
        return null;
      }
      if (!obj || typeof obj !== "object" || Array.isArray(obj)) return null;
      const rec = obj as Record<string, unknown>;
      const spec = space.find((a) => a.name === rec.action_type);
      if (!spec) return null;
      for (const k of Object.keys(rec)) if (k !== "action_type" && !spec.params.some((p) => p.name === k)) return null;
      const values: Record<string, string> = {};
      for (const p of spec.params) values[p.name] = rec[p.name] === undefined || rec[p.name] === null ? "" : String(rec[p.name]);
      return { name: spec.name, values };
    }
    case "tool-call": {
      let body = text;
      const fence = /^```[\w-]*\n([\s\S]*?)\n?```$/.exec(body);
      if (fence) body = fence[1]!.trim();
      let obj: unknown;
      try {
        obj = JSON.parse(body);
      } catch {
        return null;
      }
      if (!obj || typeof obj !== "object" || Array.isArray(obj)) return null;
      const rec = obj as Record<string, unknown>;
      if (typeof rec.name !== "string") return null;
      for (const k of Object.keys(rec)) if (k !== "name" && k !== "arguments") return null;
      return { name: "tool call", values: { name: rec.name, arguments: JSON.stringify(rec.arguments ?? {}, null, 2) } };
    }
    default:
      return null;
  }
}

/**
 * Splits the "Roll out N" list into actions: blocks separated by lines of
 * `---` when there are any (for multi-line actions), else one action per
 * non-empty line.
 */
export function splitActionList(text: string): string[] {
  const lines = text.replace(/\r\n?/g, "\n").split("\n");
  if (lines.some((l) => l.trim() === "---")) {
    const out: string[] = [];
    let cur: string[] = [];
    for (const l of lines) {
      if (l.trim() === "---") {
        if (cur.join("\n").trim()) out.push(cur.join("\n").trim());
        cur = [];
      } else cur.push(l);
    }
    if (cur.join("\n").trim()) out.push(cur.join("\n").trim());
    return out;
  }
  return lines.map((l) => l.trim()).filter((l) => l !== "");
}

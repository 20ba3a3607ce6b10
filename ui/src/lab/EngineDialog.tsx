/**
 * The engine picker (`dialog "Engine"`): a baseline, a local model directory
 * (inspected before loading: architecture, parameters, memory per dtype) or
 * an OpenAI-compatible endpoint, plus generation parameters with the model
 * card's defaults. Saved per workspace with `set_engine`.
 *
 * An endpoint's API key comes from an environment variable of the back end
 * (named here) or from the OS keyring: typed once into a password field, it
 * goes to `set_endpoint_key` and is never shown again, kept in the dialog's
 * state or saved in the workspace (only the keyring account is);
 * `endpoint_key_status` says whether one is stored.
 */
import { useEffect, useState } from "react";
import type { DraftMode, EngineSettings, EngineStatus, GenerationParamsView, KeySource, ModelDirInfo, ModelDtype } from "../api/lab";
import type { Backend } from "../backend/backend";
import { formatBytes, formatParams } from "./format";
import { DialogFooter, ErrorLine, Field, TextField, errorMessage, useBusyAction } from "./DialogParts";
import { Modal } from "./Modal";

/** The model card's generation defaults (Qwen3.5 / Qwen-AgentWorld thinking mode). */
export const MODEL_CARD_PARAMS: GenerationParamsView = {
  temperature: 0.6,
  top_p: 0.95,
  top_k: 20,
  seed: "0",
  max_new_tokens: 4096,
  enable_thinking: true,
  logprobs: true,
  stop_after_observation: true,
};

type Kind = EngineSettings["kind"];

/** The local engine's speculative decoding choices, as the dialog names them. */
const DRAFT_MODES: [DraftMode, string][] = [
  ["observation", "from the observation"],
  ["prompt_lookup", "prompt lookup"],
  ["off", "off"],
];

/**
 * Where an endpoint's key comes from, as the dialog shows it: `key stored in
 * keyring`, `from $VAR`, or `none`. `stored` is the keyring's answer
 * (`null`: not known yet).
 */
export function keyStatusText(source: KeySource, keyEnv: string, stored: boolean | null): string {
  if (source === "keyring") return stored === null ? "checking the keyring…" : stored ? "key stored in keyring" : "none";
  const name = keyEnv.trim();
  return name ? `from $${name}` : "none";
}

/** Parameters as a person typed them: the back end keeps 32-bit floats (0.95 comes back as 0.949999988…). */
export function roundParams(p: GenerationParamsView): GenerationParamsView {
  const r = (x: number) => Number(x.toPrecision(6));
  return { ...p, temperature: r(p.temperature), top_p: r(p.top_p) };
}

/** Props of {@link EngineDialog}. */
export interface EngineDialogProps {
  backend: Backend;
  status: EngineStatus | null;
  onClose: () => void;
  onSaved: (status: EngineStatus) => void;
}

export function EngineDialog({ backend, status, onClose, onSaved }: EngineDialogProps) {
  const s = status?.settings ?? { kind: "baseline", name: "copy" };
  const [kind, setKind] = useState<Kind>(s.kind);
  const [baseline, setBaseline] = useState(s.kind === "baseline" ? s.name : "copy");
  const [modelDir, setModelDir] = useState(s.kind === "local" ? s.model_dir : "");
  const [device, setDevice] = useState(s.kind === "local" ? s.device : "cpu");
  const [dtype, setDtype] = useState<ModelDtype>(s.kind === "local" ? s.dtype : "bf16");
  const [draft, setDraft] = useState<DraftMode>(s.kind === "local" ? (s.draft ?? "observation") : "observation");
  const [baseUrl, setBaseUrl] = useState(s.kind === "openai" ? s.base_url : "http://127.0.0.1:8000/v1");
  const [model, setModel] = useState(s.kind === "openai" ? s.model : "Qwen-AgentWorld-35B-A3B");
  const [keyEnv, setKeyEnv] = useState(s.kind === "openai" ? (s.api_key_env ?? "") : "OPENAI_API_KEY");
  const [keySource, setKeySource] = useState<KeySource>(s.kind === "openai" ? (s.key_source ?? "env") : "env");
  const [keyAccount, setKeyAccount] = useState(s.kind === "openai" ? (s.keyring_account ?? "") : "");
  /** The key being typed; cleared once stored, never filled from the back end. */
  const [newKey, setNewKey] = useState("");
  /** The keyring's last answer for an account: whether it holds a key, or why it could not say. */
  const [keyCheck, setKeyCheck] = useState<{ account: string; stored: boolean | null; error: string | null } | null>(null);
  const [deadline, setDeadline] = useState(s.kind === "openai" && s.step_deadline_s != null ? String(s.step_deadline_s) : "");
  const [params, setParams] = useState<GenerationParamsView>(() => roundParams(status?.params ?? MODEL_CARD_PARAMS));
  const [info, setInfo] = useState<ModelDirInfo | null>(null);
  const { busy, error, setError, run } = useBusyAction(status?.error ?? null);

  /** The keyring account: the one typed, or the base URL. */
  const account = keyAccount.trim() || baseUrl.trim();
  const usesKeyring = kind === "openai" && keySource === "keyring";
  /** Whether the keyring holds a key for the account (`null`: not known yet). */
  const keyStored = keyCheck?.account === account ? keyCheck.stored : null;
  const keyError = keyCheck?.account === account ? keyCheck.error : null;

  useEffect(() => {
    if (!usesKeyring || !account) return;
    let live = true;
    backend
      .call("endpoint_key_status", { account })
      .then((st) => {
        if (live) setKeyCheck({ account, stored: st.stored, error: null });
      })
      .catch((e: unknown) => {
        if (live) setKeyCheck({ account, stored: null, error: errorMessage(e) });
      });
    return () => {
      live = false;
    };
  }, [backend, usesKeyring, account]);

  /** Stores the typed key (`""`: removes the stored one); the field is emptied either way. */
  const storeKey = (key: string) =>
    run(
      async () => {
        try {
          const st = await backend.call("set_endpoint_key", { account, key });
          setKeyCheck({ account, stored: st.stored, error: null });
        } finally {
          setNewKey("");
        }
      },
      key ? "Storing the key…" : "Removing the key…",
    );

  const inspect = () =>
    run(async () => {
      const i = await backend.call("inspect_model_dir", { path: modelDir.trim() }).catch((e: unknown) => {
        setInfo(null);
        throw e;
      });
      setInfo(i);
      if (i.devices.length > 0 && !i.devices.includes(device)) setDevice(i.devices[0]!);
    }, "Inspecting…");

  const settings = (): EngineSettings =>
    kind === "baseline"
      ? { kind, name: baseline }
      : kind === "local"
        ? { kind, model_dir: modelDir.trim(), device, dtype, draft }
        : {
            kind,
            base_url: baseUrl.trim(),
            model: model.trim(),
            api_key_env: keySource === "env" ? keyEnv.trim() || null : null,
            ...(keySource === "keyring" ? { key_source: "keyring" as const, ...(keyAccount.trim() ? { keyring_account: keyAccount.trim() } : {}) } : {}),
            ...(stepDeadline() === undefined ? {} : { step_deadline_s: stepDeadline() }),
          };

  /** The step deadline in whole seconds; `undefined` when empty or not a positive number. */
  const stepDeadline = (): number | undefined => {
    const n = Math.round(Number(deadline.trim()));
    return deadline.trim() !== "" && Number.isFinite(n) && n > 0 ? n : undefined;
  };

  const save = () =>
    run(
      async () => {
        const st = await backend.call("set_engine", { settings: settings(), params });
        if (st.error) setError(st.error);
        else onSaved(st);
      },
      kind === "local" ? "Loading the model…" : "Saving…",
    );

  const num = (key: keyof GenerationParamsView, label: string, step: string) => (
    <TextField label={label} type="number" step={step} value={String(params[key])} onValue={(v) => setParams({ ...params, [key]: v === "" ? 0 : Number(v) })} />
  );
  const flag = (key: keyof GenerationParamsView, label: string) => (
    <label className="check">
      <input type="checkbox" checked={Boolean(params[key])} onChange={(e) => setParams({ ...params, [key]: e.target.checked })} /> {label}
    </label>
  );
  const chosenMemory = info?.memory.find((m) => m.dtype === dtype)?.bytes ?? null;

  return (
    <Modal
      title="Engine"
      onClose={onClose}
      wide
      footer={
        <DialogFooter
          before={
            busy ? (
              <span className="muted" role="status">
                {busy}
              </span>
            ) : null
          }
          closeLabel="Cancel"
          onClose={onClose}
          primary={{
            label: "Save engine",
            disabled: !!busy || (kind === "local" && !modelDir.trim()) || (kind === "openai" && (!baseUrl.trim() || !model.trim())),
            onClick: () => void save(),
          }}
        />
      }
    >
      <fieldset className="engine-kinds">
        <legend>Engine</legend>
        {(
          [
            ["baseline", "Baseline"],
            ["local", "Local model directory"],
            ["openai", "OpenAI-compatible endpoint"],
          ] as Array<[Kind, string]>
        ).map(([k, label]) => (
          <label key={k} className="check">
            <input type="radio" name="engine-kind" value={k} checked={kind === k} onChange={() => setKind(k)} /> {label}
          </label>
        ))}
      </fieldset>
      {kind === "baseline" ? (
        <Field label="Baseline">
          <select aria-label="Baseline engine" value={baseline} onChange={(e) => setBaseline(e.target.value)}>
            <option value="copy">copy — repeat the current observation</option>
            <option value="replay">replay — the recorded next observation</option>
          </select>
        </Field>
      ) : null}
      {kind === "local" ? (
        <div className="engine-local">
          <div className="row">
            <TextField
              label="Model directory"
              grow
              value={modelDir}
              placeholder="/models/Qwen-AgentWorld-35B-A3B or a .gguf file"
              onValue={(v) => {
                setModelDir(v);
                setInfo(null);
              }}
            />
            <button type="button" disabled={!modelDir.trim() || !!busy} onClick={() => void inspect()}>
              Inspect
            </button>
          </div>
          {info ? (
            <table className="kv" aria-label="Model directory details">
              <tbody>
                <tr>
                  <th scope="row">architecture</th>
                  <td>{info.architecture}</td>
                </tr>
                <tr>
                  <th scope="row">parameters</th>
                  <td>
                    {formatParams(info.total_params)} total · {formatParams(info.active_params)} active per token
                  </td>
                </tr>
                <tr>
                  <th scope="row">context</th>
                  <td>{info.context_tokens.toLocaleString()} tokens</td>
                </tr>
                <tr>
                  <th scope="row">memory</th>
                  <td>
                    {info.memory.map((m) => (
                      <span key={m.dtype} className={m.dtype === dtype ? "mem is-chosen" : "mem"}>
                        {m.dtype}: {formatBytes(m.bytes)}
                      </span>
                    ))}
                  </td>
                </tr>
                <tr>
                  <th scope="row">available</th>
                  <td>
                    {formatBytes(info.available_memory_bytes)}
                    {chosenMemory != null && info.available_memory_bytes != null && chosenMemory > info.available_memory_bytes ? (
                      <strong className="warn"> — {dtype} does not fit</strong>
                    ) : null}
                  </td>
                </tr>
                <tr>
                  <th scope="row">tokenizer</th>
                  <td>
                    {info.has_tokenizer ? "yes" : "missing"} · chat template {info.has_chat_template ? "yes" : "missing"}
                  </td>
                </tr>
              </tbody>
            </table>
          ) : (
            <p className="muted">Inspect the directory to see its architecture, parameters and memory per dtype before loading it.</p>
          )}
          <div className="row">
            <Field label="Device">
              <select aria-label="Device" value={device} onChange={(e) => setDevice(e.target.value)}>
                {(info?.devices.length ? info.devices : ["cpu", "cuda:0", "metal"]).map((d) => (
                  <option key={d} value={d}>
                    {d}
                  </option>
                ))}
              </select>
            </Field>
            <Field label="Dtype">
              <select aria-label="Dtype" value={dtype} onChange={(e) => setDtype(e.target.value as ModelDtype)}>
                {(["f32", "bf16", "f16"] as ModelDtype[]).map((d) => (
                  <option key={d} value={d}>
                    {d}
                  </option>
                ))}
              </select>
            </Field>
            <Field label="Drafting">
              <select
                aria-label="Drafting"
                title="Speculative decoding: drafted tokens are verified in one forward; the output is the same"
                value={draft}
                onChange={(e) => setDraft(e.target.value as DraftMode)}
              >
                {DRAFT_MODES.map(([mode, label]) => (
                  <option key={mode} value={mode}>
                    {label}
                  </option>
                ))}
              </select>
            </Field>
          </div>
        </div>
      ) : null}
      {kind === "openai" ? (
        <div className="engine-openai">
          <TextField label="Base URL" value={baseUrl} onValue={setBaseUrl} />
          <TextField label="Model" value={model} onValue={setModel} />
          <fieldset className="engine-key">
            <legend>API key</legend>
            <div className="row">
              <label className="check">
                <input type="radio" name="key-source" checked={keySource === "env"} onChange={() => setKeySource("env")} /> Environment variable
              </label>
              <label className="check">
                <input type="radio" name="key-source" checked={keySource === "keyring"} onChange={() => setKeySource("keyring")} /> OS keyring
              </label>
              <span className="muted" role="status" aria-label="API key status">
                {keySource === "keyring" && keyError ? "keyring unavailable" : keyStatusText(keySource, keyEnv, account ? keyStored : false)}
              </span>
            </div>
            {keySource === "env" ? (
              <TextField label="API key environment variable" value={keyEnv} placeholder="OPENAI_API_KEY (empty: no key)" onValue={setKeyEnv} />
            ) : (
              <>
                <TextField label="Keyring account" value={keyAccount} placeholder={baseUrl.trim() || "the base URL"} onValue={setKeyAccount} />
                <div className="row">
                  <TextField
                    label="New API key"
                    grow
                    type="password"
                    autoComplete="off"
                    spellCheck={false}
                    value={newKey}
                    placeholder={keyStored ? "type a key to replace the stored one" : "sk-…"}
                    onValue={setNewKey}
                  />
                  <button type="button" disabled={!newKey || !account || !!busy} onClick={() => void storeKey(newKey)}>
                    {keyStored ? "Replace key" : "Store key"}
                  </button>
                  <button type="button" disabled={!keyStored || !!busy} onClick={() => void storeKey("")}>
                    Remove key
                  </button>
                </div>
                <ErrorLine error={keyError} />
              </>
            )}
          </fieldset>
          <TextField label="Step deadline (s)" type="number" min="1" step="1" value={deadline} placeholder="none" onValue={setDeadline} />
          <p className="muted">
            {keySource === "env"
              ? "The key is read from this variable of the back end's environment when the engine is created; it is never typed here or stored in the workspace."
              : "The key is kept in the OS keyring (Secret Service, macOS Keychain, Windows Credential Manager) under the service “worldloom” and this account; it is never shown again or stored in the workspace."}
          </p>
        </div>
      ) : null}
      <fieldset className="params">
        <legend>
          Generation parameters{" "}
          <button type="button" className="link" onClick={() => setParams(MODEL_CARD_PARAMS)}>
            model-card defaults
          </button>
        </legend>
        <div className="param-grid">
          {num("temperature", "Temperature", "0.05")}
          {num("top_p", "Top p", "0.01")}
          {num("top_k", "Top k", "1")}
          {num("max_new_tokens", "Max new tokens", "1")}
          <TextField label="Seed" value={params.seed} inputMode="numeric" onValue={(v) => setParams({ ...params, seed: v.replace(/[^0-9]/g, "") || "0" })} />
        </div>
        <div className="row">
          {flag("enable_thinking", "Thinking (reasoning)")}
          {flag("logprobs", "Token log-probabilities")}
          {flag("stop_after_observation", "Stop after the observation")}
        </div>
      </fieldset>
      <ErrorLine error={error} />
    </Modal>
  );
}

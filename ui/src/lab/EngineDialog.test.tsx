import { cleanup, configure, fireEvent, render, screen, waitFor } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { EngineStatus } from "../api/lab";
import type { Backend } from "../backend/backend";
import { BackendError } from "../backend/error";
import { startServer, type TestServer } from "../testing/server";
import { EngineDialog } from "./EngineDialog";

// Each test saves settings or keys: each gets its own server (keys in memory).
// Every wait here is a round trip to that server, which takes longer than
// waitFor's default second while the other test files load the machine.
configure({ asyncUtilTimeout: 5000 });
let server: TestServer;
beforeEach(async () => {
  server = await startServer([], { OPENAI_API_KEY: "sk-from-the-environment" });
});
afterEach(async () => {
  cleanup();
  await server.stop();
});

function saveOpenai(deadline: string): Promise<EngineStatus> {
  const backend = server.backend;
  return new Promise((resolve) => {
    render(<EngineDialog backend={backend} status={null} onClose={() => {}} onSaved={resolve} />);
    fireEvent.click(screen.getByRole("radio", { name: "OpenAI-compatible endpoint" }));
    fireEvent.change(screen.getByLabelText("Step deadline (s)"), { target: { value: deadline } });
    fireEvent.click(screen.getByRole("button", { name: "Save engine" }));
  });
}

/** The endpoint settings the dialog starts with. */
const DEFAULT_ENDPOINT = {
  kind: "openai",
  base_url: "http://127.0.0.1:8000/v1",
  model: "Qwen-AgentWorld-35B-A3B",
  api_key_env: "OPENAI_API_KEY",
};

describe("the engine dialog", () => {
  it.each([
    { what: "sends the step deadline of an endpoint in whole seconds", deadline: "90", settings: { ...DEFAULT_ENDPOINT, step_deadline_s: 90 } },
    { what: "sends no deadline when the field is empty", deadline: "", settings: DEFAULT_ENDPOINT },
  ])("$what", async ({ deadline, settings }) => {
    const status = await saveOpenai(deadline);
    expect(status.settings).toEqual(settings);
  });
});

describe("the endpoint's API key", () => {
  const KEY = "sk-dialog-test-5e0b";

  function openEndpoint(backend: Backend, onSaved: (s: EngineStatus) => void = () => {}) {
    render(<EngineDialog backend={backend} status={null} onClose={() => {}} onSaved={onSaved} />);
    fireEvent.click(screen.getByRole("radio", { name: "OpenAI-compatible endpoint" }));
  }

  it("says where the key comes from: an environment variable or none", () => {
    openEndpoint(server.backend);
    expect(screen.getByRole("status", { name: "API key status" }).textContent).toBe("from $OPENAI_API_KEY");
    fireEvent.change(screen.getByLabelText("API key environment variable"), { target: { value: "  " } });
    expect(screen.getByRole("status", { name: "API key status" }).textContent).toBe("none");
  });

  it("stores, replaces and removes a key in the keyring without ever showing it", async () => {
    const backend = server.backend;
    openEndpoint(backend);
    fireEvent.click(screen.getByRole("radio", { name: "OS keyring" }));
    const status = () => screen.getByRole("status", { name: "API key status" }).textContent;
    await waitFor(() => expect(status()).toBe("none"));
    const field = screen.getByLabelText("New API key") as HTMLInputElement;
    expect(field.type).toBe("password");
    expect((screen.getByRole("button", { name: "Remove key" }) as HTMLButtonElement).disabled).toBe(true);

    fireEvent.change(field, { target: { value: KEY } });
    fireEvent.click(screen.getByRole("button", { name: "Store key" }));
    await waitFor(() => expect(status()).toBe("key stored in keyring"));
    // The field is emptied and the key is nowhere on the page.
    expect((screen.getByLabelText("New API key") as HTMLInputElement).value).toBe("");
    expect(document.body.innerHTML).not.toContain(KEY);
    // Stored under the base URL, the default account.
    await expect(backend.call("endpoint_key_status", { account: "http://127.0.0.1:8000/v1" })).resolves.toEqual({
      account: "http://127.0.0.1:8000/v1",
      stored: true,
    });

    // Replacing: the button says so.
    fireEvent.change(screen.getByLabelText("New API key"), { target: { value: "sk-other" } });
    fireEvent.click(screen.getByRole("button", { name: "Replace key" }));
    await waitFor(() => expect((screen.getByLabelText("New API key") as HTMLInputElement).value).toBe(""));
    expect(status()).toBe("key stored in keyring");

    fireEvent.click(screen.getByRole("button", { name: "Remove key" }));
    await waitFor(() => expect(status()).toBe("none"));
    await expect(backend.call("endpoint_key_status", { account: "http://127.0.0.1:8000/v1" })).resolves.toMatchObject({ stored: false });
  });

  it("saves the keyring as the key source with its account, never the key", async () => {
    const backend = server.backend;
    const saved = new Promise<EngineStatus>((resolve) => openEndpoint(backend, resolve));
    fireEvent.click(screen.getByRole("radio", { name: "OS keyring" }));
    fireEvent.change(screen.getByLabelText("Keyring account"), { target: { value: " lab endpoint " } });
    fireEvent.change(screen.getByLabelText("New API key"), { target: { value: KEY } });
    fireEvent.click(screen.getByRole("button", { name: "Store key" }));
    await waitFor(() => expect(screen.getByRole("status", { name: "API key status" }).textContent).toBe("key stored in keyring"));
    fireEvent.click(screen.getByRole("button", { name: "Save engine" }));
    const status = await saved;
    expect(status.ready).toBe(true);
    expect(status.settings).toEqual({
      kind: "openai",
      base_url: "http://127.0.0.1:8000/v1",
      model: "Qwen-AgentWorld-35B-A3B",
      api_key_env: null,
      key_source: "keyring",
      keyring_account: "lab endpoint",
    });
    expect(JSON.stringify(status)).not.toContain(KEY);
  });

  it("shows the back end's error when the keyring has no key for the account", async () => {
    const backend = server.backend;
    let saved = false;
    openEndpoint(backend, () => {
      saved = true;
    });
    fireEvent.click(screen.getByRole("radio", { name: "OS keyring" }));
    fireEvent.click(screen.getByRole("button", { name: "Save engine" }));
    const alert = await screen.findByRole("alert");
    expect(alert.textContent).toContain("no API key in the OS keyring for account `http://127.0.0.1:8000/v1`");
    expect(saved).toBe(false);
  });
});

describe("the server's key commands", () => {
  it("keep keys by trimmed account, refuse a blank one and never answer a key", async () => {
    const backend = server.backend;
    const reply = await backend.call("set_endpoint_key", { account: " a ", key: "sk-secret" });
    expect(reply).toEqual({ account: "a", stored: true });
    await expect(backend.call("endpoint_key_status", { account: "a" })).resolves.toEqual({ account: "a", stored: true });
    await expect(backend.call("endpoint_key_status", { account: "b" })).resolves.toEqual({ account: "b", stored: false });
    await expect(backend.call("set_endpoint_key", { account: "  ", key: "k" })).rejects.toMatchObject({ code: "bad_request" });
    await expect(backend.call("set_endpoint_key", { account: "a", key: "" })).resolves.toEqual({ account: "a", stored: false });
  });
});

describe("without an OS keyring", () => {
  /** The back end of a machine without a Secret Service: the server, its key commands failing as `OsKeyStore` fails there. */
  function noKeyring(inner: Backend): Backend {
    return {
      kind: inner.kind,
      subscribe: (l) => inner.subscribe(l),
      call: ((command, request) =>
        command === "endpoint_key_status" || command === "set_endpoint_key"
          ? Promise.reject(
              new BackendError("internal", "the OS keyring is not available: Platform failure: zbus error; name an environment variable for the key instead"),
            )
          : inner.call(command, request)) as Backend["call"],
    };
  }

  it("says the keyring is unavailable and why, and the environment still works", async () => {
    render(<EngineDialog backend={noKeyring(server.backend)} status={null} onClose={() => {}} onSaved={() => {}} />);
    fireEvent.click(screen.getByRole("radio", { name: "OpenAI-compatible endpoint" }));
    fireEvent.click(screen.getByRole("radio", { name: "OS keyring" }));
    const status = () => screen.getByRole("status", { name: "API key status" }).textContent;
    await waitFor(() => expect(status()).toBe("keyring unavailable"));
    expect(screen.getByRole("alert").textContent).toContain("the OS keyring is not available");
    // Storing fails with the same message; the typed key is dropped.
    fireEvent.change(screen.getByLabelText("New API key"), { target: { value: "sk-nowhere" } });
    fireEvent.click(screen.getByRole("button", { name: "Store key" }));
    await waitFor(() => expect((screen.getByLabelText("New API key") as HTMLInputElement).value).toBe(""));
    expect(screen.getAllByRole("alert").some((a) => a.textContent?.includes("name an environment variable"))).toBe(true);
    fireEvent.click(screen.getByRole("radio", { name: "Environment variable" }));
    expect(status()).toBe("from $OPENAI_API_KEY");
  });
});

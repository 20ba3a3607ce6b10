/**
 * An OpenAI-compatible endpoint for tests, standing in for a model server
 * (not for the Worldloom API): `POST /v1/chat/completions` answers `answer`'s
 * text after `delayMs`, streamed as one chunk when the request asks for a
 * stream, whole otherwise; `GET /v1/models` lists `model`. Counts the
 * completions it was asked for. Tests only.
 */
import { createServer } from "node:http";

/** A running endpoint. */
export interface TestEndpoint {
  /** `http://127.0.0.1:PORT/v1`. */
  baseUrl: string;
  /** Completions asked for so far. */
  requests: number;
  close(): Promise<void>;
}

/** Starts the endpoint on a free loopback port. */
export function startEndpoint(answer: () => string, delayMs = 0, model = "test-model"): Promise<TestEndpoint> {
  const state = { requests: 0 };
  const server = createServer((req, res) => {
    if (req.method === "GET" && req.url?.endsWith("/models")) {
      res.writeHead(200, { "Content-Type": "application/json" }).end(JSON.stringify({ object: "list", data: [{ id: model, object: "model" }] }));
      return;
    }
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString()));
    req.on("end", () => {
      state.requests += 1;
      const request = JSON.parse(body || "{}") as { stream?: boolean };
      const content = answer();
      const timer = setTimeout(() => {
        if (!request.stream) {
          res.writeHead(200, { "Content-Type": "application/json" }).end(
            JSON.stringify({
              id: "cmpl-test",
              object: "chat.completion",
              model,
              choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop" }],
              usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
            }),
          );
          return;
        }
        res.writeHead(200, { "Content-Type": "text/event-stream", "Cache-Control": "no-cache" });
        const chunk = (delta: object, finish: string | null) =>
          `data: ${JSON.stringify({ id: "cmpl-test", object: "chat.completion.chunk", created: 0, model, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
        res.write(chunk({ role: "assistant", content }, null));
        res.write(chunk({}, "stop"));
        res.end("data: [DONE]\n\n");
      }, delayMs);
      res.on("close", () => clearTimeout(timer));
    });
  });
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      resolve({
        baseUrl: `http://127.0.0.1:${port}/v1`,
        get requests() {
          return state.requests;
        },
        close: () =>
          new Promise<void>((done) => {
            server.closeAllConnections();
            server.close(() => done());
          }),
      });
    }),
  );
}

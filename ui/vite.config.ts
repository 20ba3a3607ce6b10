/// <reference types="vitest/config" />
import { defineConfig, type Plugin } from "vite";
import react from "@vitejs/plugin-react";

/**
 * The content security policy of the built app (not of the dev server, whose
 * React refresh preamble is an inline script). Scripts and connections come
 * from the app's own origin (or the Tauri IPC); observation renders live in
 * sandboxed `srcdoc` frames that carry their own, stricter policy.
 */
const APP_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob:",
  "font-src 'self'",
  "connect-src 'self' ipc: http://ipc.localhost",
  "frame-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
].join("; ");

function cspMeta(): Plugin {
  return {
    name: "worldloom-csp-meta",
    apply: "build",
    transformIndexHtml(html) {
      return html.replace("<head>", `<head>\n    <meta http-equiv="Content-Security-Policy" content="${APP_CSP}" />`);
    },
  };
}

/**
 * The dev server (`npm run dev`) talks to a running `worldloom serve`: start
 * one (`worldloom serve --port 7878 …`, or set `WORLDLOOM_API` to its origin),
 * open the dev page with the `?token=…` it printed, and `/api` is proxied to
 * it, its `Origin` rewritten to the server's own (the server refuses others).
 */
const API_ORIGIN = process.env.WORLDLOOM_API ?? "http://127.0.0.1:7878";

export default defineConfig({
  base: "./",
  plugins: [react(), cspMeta()],
  build: {
    outDir: "dist",
    sourcemap: false,
    chunkSizeWarningLimit: 1200,
  },
  server: {
    port: 5173,
    strictPort: false,
    proxy: {
      "/api": {
        target: API_ORIGIN,
        changeOrigin: true,
        configure: (proxy) => proxy.on("proxyReq", (req) => req.setHeader("origin", API_ORIGIN)),
      },
    },
  },
  test: {
    environment: "jsdom",
    include: ["src/**/*.test.{ts,tsx}"],
    setupFiles: ["src/testSetup.ts"],
    // The real `worldloom serve` answers the tests ($WORLDLOOM_BIN, see src/testing/);
    // a test that drives the app through several commands on a busy two-core
    // machine takes seconds, not milliseconds.
    globalSetup: ["src/testing/globalSetup.ts"],
    testTimeout: 20_000,
    hookTimeout: 60_000,
  },
});

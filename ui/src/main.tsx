/** Entry point: picks the back end (Tauri or HTTP) and mounts the app. */
import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { App } from "./App";
import { createBackend } from "./backend/create";
import "./styles/base.css";
import "./styles/panes.css";
import "./styles/laboratory.css";
import "./styles/runs.css";
import "./styles/screens.css";

const root = createRoot(document.getElementById("root")!);
createBackend()
  .then((backend) =>
    root.render(
      <StrictMode>
        <App backend={backend} />
      </StrictMode>,
    ),
  )
  .catch((e: unknown) => {
    root.render(<p role="alert">Worldloom could not start: {String(e)}</p>);
  });

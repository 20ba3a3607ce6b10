/** Entry point: picks the back end (Tauri, HTTP or the dev mock) and mounts the app. */
import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { App } from "./App";
import { createBackend } from "./backend/create";
import "./styles/app.css";

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

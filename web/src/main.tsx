// The page's entry: one App (one socket), drawn by Preact into #app.

import "@xterm/xterm/css/xterm.css";
import "./style.css";

import { render } from "preact";

import { watchAsks } from "./agentnotify";
import { App } from "./app";
import { connectionToken } from "./socket";
import { Shell } from "./views";

declare global {
  interface Window {
    forgeApp?: App;
  }
}

connectionToken(); // take a `#token=` from the address bar before routing reads the fragment
const app = new App();
window.forgeApp = app;
watchAsks(app);
if (navigator.maxTouchPoints > 0) document.documentElement.classList.add("touch");
const root = document.getElementById("app");
if (root) render(<Shell app={app} />, root);
app.start();

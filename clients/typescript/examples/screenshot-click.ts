// Takes a screenshot, clicks in the middle of the screen, and waits for
// the screen to change.
import { writeFile } from "node:fs/promises";

import { connect } from "../src/index.js";
import { token, url } from "./env.js";

const sb = await connect({ url, token });
const info = await sb.desktop.info();
const shot = await sb.desktop.screenshot({ format: "png", scale: 0.5 });
await writeFile("screen.png", shot.data);
console.log(`screen ${info.width}x${info.height}, image ${shot.width}x${shot.height}`);
await sb.desktop.click(Math.floor(info.width / 2), Math.floor(info.height / 2));
await sb.desktop.input([{ type: "type", text: "hello" }, { type: "key", combo: "Return" }]);
const change = await sb.desktop.waitChange({ timeout_ms: 2000 });
console.log("changed:", change.changed, change.area ?? "");
await sb.close();

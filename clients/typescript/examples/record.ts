// Records the desktop for a few seconds and downloads the MP4.
import { writeFile } from "node:fs/promises";

import { connect } from "../src/index.js";
import { token, url } from "./env.js";

const sb = await connect({ url, token });
const rec = await sb.record.start({ fps: 10, max_seconds: 60 });
await sb.desktop.input([{ type: "move", x: 10, y: 10 }, { type: "move", x: 400, y: 300 }]);
await new Promise((r) => setTimeout(r, 3000));
const done = await sb.record.stop(rec.id);
const mp4 = await sb.artifacts.read(done.artifact.id);
await writeFile(done.artifact.name, mp4);
console.log(`${done.frames} frames, ${done.duration_ms} ms, ${mp4.length} bytes`);
await sb.close();

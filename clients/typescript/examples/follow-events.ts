// Follows the journal from a stored seq: after any drop the SDK resumes
// from the last seq + 1; a gap or a new boot is an item of its own.
import { connect } from "../src/index.js";
import { token, url } from "./env.js";

const sb = await connect({ url, token, onStateChange: (c) => console.error(`[${c.state}]`, c.reason ?? "") });
let lastSeq = Number(process.env.LAST_SEQ ?? 0);
for await (const ev of sb.events.follow({ fromSeq: lastSeq + 1 })) {
  switch (ev.kind) {
    case "boot":
      console.log(`the sandbox rebooted: ${ev.data.previous} -> ${ev.data.boot_id}`);
      lastSeq = 0;
      break;
    case "events.gap":
      console.log(`${ev.data.lost} events were rotated out of the journal`);
      break;
    case "proc.exited":
      console.log(`#${ev.seq} command ${ev.data.id} exited`, ev.data.code ?? `signal ${ev.data.signal}`);
      lastSeq = ev.seq;
      break;
    default:
      console.log(`#${ev.seq} ${ev.kind}`);
      lastSeq = ev.seq;
  }
}

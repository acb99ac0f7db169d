// Attaches a terminal, types into it, and resumes it from the offset it
// reached, as a backend that restarted would.
import { connect } from "../src/index.js";
import { token, url } from "./env.js";

const sb = await connect({ url, token });
const { terminal, id } = await sb.pty.open({ argv: ["/bin/bash"], cols: 100, rows: 30 });
await terminal.input("echo hello from $SHELL\n");
let seen = "";
for await (const chunk of terminal.output) {
  seen += new TextDecoder().decode(chunk);
  if (seen.includes("hello from")) break;
}
// Keep the id and the offset (a database row, say); later, anywhere:
const offset = terminal.output.taken;
await terminal.detach();

const again = await sb.pty.attach(id, { fromOffset: offset });
await again.resize(120, 40);
await again.input("uname -a\n");
for await (const item of again.output.items()) {
  if (item.type === "lost") console.error(`${item.bytes} bytes were no longer held`);
  else process.stdout.write(item.data);
  if (item.type === "data" && new TextDecoder().decode(item.data).includes("Linux")) break;
}
await again.close();
await sb.close();

// Runs a command and streams its output as it comes.
import { connect } from "../src/index.js";
import { token, url } from "./env.js";

const sb = await connect({ url, token, client: "example/run-command" });
const p = await sb.process.start({ shell: "for i in 1 2 3; do echo tick $i; sleep 1; done; echo done >&2" });
const pipe = async (from: AsyncIterable<Uint8Array>, to: NodeJS.WriteStream) => {
  for await (const chunk of from) to.write(chunk);
};
await Promise.all([pipe(p.stdout, process.stdout), pipe(p.stderr, process.stderr)]);
const { exit } = await p.wait();
console.log("exit:", exit);
await sb.close();

// sdk.mjs: the SDK's side of bench/sdk.sh.
//   node sdk.mjs DIST URL TOKEN_FILE ping N INFLIGHT   -> "SECONDS"
//   node sdk.mjs DIST URL TOKEN_FILE output BYTES      -> "SECONDS"
// ping: N pings, INFLIGHT of them always unanswered. output: a command
// writes BYTES to stdout, read through the process's stdout iterator to
// its end (the SDK acknowledges as the consumer takes each chunk).
import { readFileSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [dist, url, tokenFile, what, ...rest] = process.argv.slice(2);
const { connect } = await import(pathToFileURL(path.join(dist, "index.js")).href);
const token = readFileSync(tokenFile, "utf8").trim();
const sandbox = await connect({ url, token });

async function ping(n, inflight) {
  let sent = 0;
  const worker = async () => {
    while (sent < n) {
      sent++;
      await sandbox.request("ping", {});
    }
  };
  const t0 = process.hrtime.bigint();
  await Promise.all(Array.from({ length: inflight }, worker));
  return Number(process.hrtime.bigint() - t0) / 1e9;
}

async function output(nbytes) {
  const t0 = process.hrtime.bigint();
  const p = await sandbox.process.start({ shell: `head -c ${nbytes} /dev/zero` });
  let got = 0;
  for await (const chunk of p.stdout) got += chunk.length;
  const took = Number(process.hrtime.bigint() - t0) / 1e9;
  if (got !== nbytes) throw new Error(`read ${got} bytes of ${nbytes}`);
  return took;
}

const took = what === "ping" ? await ping(Number(rest[0]), Number(rest[1])) : await output(Number(rest[0]));
await sandbox.close();
console.log(took.toFixed(6));

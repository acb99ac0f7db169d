// Drives the sandbox's Chromium with Playwright through the gateway's
// CDP relay. Playwright is the caller's dependency, not the SDK's: this
// declares the little of it that is used.
import { connect } from "../src/index.js";
import { token, url } from "./env.js";

interface Page {
  goto(url: string): Promise<unknown>;
  title(): Promise<string>;
}
interface Browser {
  contexts(): { pages(): Page[]; newPage(): Promise<Page> }[];
  close(): Promise<void>;
}
interface Chromium {
  connectOverCDP(endpointURL: string, options: { headers: Record<string, string> }): Promise<Browser>;
}

const sb = await connect({ url, token });
const { chromium } = (await import("playwright-core" as string)) as { chromium: Chromium };
const { endpointURL, headers } = sb.desktop.browser();
const browser = await chromium.connectOverCDP(endpointURL, { headers });
const context = browser.contexts()[0];
if (context === undefined) throw new Error("the browser has no context");
const page = context.pages()[0] ?? (await context.newPage());
await page.goto("https://example.com/");
console.log(await page.title());
await browser.close();
await sb.close();

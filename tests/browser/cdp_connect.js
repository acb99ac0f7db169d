// cdp_connect: Playwright's connectOverCDP through berth's TCP CDP relay:
// opens a page in the desktop's Chromium, evaluates JavaScript in it and
// reports, as one JSON line, what came back.
//
//   node cdp_connect.js ENDPOINT TOKEN
'use strict';
const { chromium } = require('playwright-core');

async function main() {
	const [endpoint, token] = process.argv.slice(2);
	const headers = token ? { Authorization: 'Bearer ' + token } : {};
	const browser = await chromium.connectOverCDP(endpoint, { headers, timeout: 20000 });
	const context = browser.contexts()[0] || (await browser.newContext());
	const page = await context.newPage();
	await page.setContent('<title>berth</title><p id="x">relayed</p>');
	const value = await page.evaluate(() => [6 * 7, document.title, document.getElementById('x').textContent]);
	await page.close();
	console.log(JSON.stringify({ version: browser.version(), value }));
	// Not browser.close(): that may close the desktop's own browser.
	// Leaving drops the connection and nothing else.
	process.exit(0);
}

main().catch((e) => {
	console.log(JSON.stringify({ error: String(e && e.message || e) }));
	process.exit(1);
});

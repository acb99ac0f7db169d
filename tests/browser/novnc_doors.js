// novnc_doors: the noVNC door as a browser meets it, in a headless
// Chromium of its own. Opens GATEWAY/novnc/?token=TOKEN, waits for the
// RFB session to size the page's canvas, and reports the tab's history,
// its final URL and its cookies; then, from a page of another origin
// (OTHER), opens the gateway's /novnc/websockify and reports whether it
// opened. One JSON line.
//
//   node novnc_doors.js GATEWAY TOKEN OTHER CHROMIUM [TIMEOUT_MS]
'use strict';
const { chromium } = require('playwright-core');

async function main() {
	const [gateway, token, other, executablePath, timeoutArg] = process.argv.slice(2);
	const timeout = Number(timeoutArg || 30000);
	const browser = await chromium.launch({
		executablePath,
		headless: true,
		args: ['--no-sandbox', '--disable-dev-shm-usage'],
	});
	try {
		const context = await browser.newContext();
		const page = await context.newPage();
		await page.goto(gateway + '/novnc/?token=' + token, { timeout });
		await page.waitForFunction(() => {
			const c = document.querySelector('#noVNC_container canvas, canvas');
			return c !== null && c.width > 100 && c.height > 100;
		}, null, { timeout });
		const cdp = await context.newCDPSession(page);
		const nav = await cdp.send('Page.getNavigationHistory');
		const out = {
			url: page.url(),
			history: nav.entries.map((e) => e.url),
			historyLength: await page.evaluate(() => history.length),
			canvas: await page.evaluate(() => {
				const c = document.querySelector('#noVNC_container canvas, canvas');
				return { width: c.width, height: c.height };
			}),
			cookies: await context.cookies(),
		};
		const foreign = await context.newPage();
		await foreign.goto(other + '/', { timeout });
		out.foreign = await foreign.evaluate((url) => new Promise((resolve) => {
			const ws = new WebSocket(url);
			let opened = false;
			ws.onopen = () => { opened = true; ws.close(); };
			ws.onclose = (e) => resolve({ opened, code: e.code });
		}), gateway.replace(/^http/, 'ws') + '/novnc/websockify');
		await foreign.evaluate((u) => fetch(u).then((r) => r.status), other + '/novnc/probe');
		console.log(JSON.stringify(out));
	} finally {
		await browser.close();
	}
}

main().catch((e) => {
	console.log(JSON.stringify({ error: String(e && e.message || e) }));
	process.exit(1);
});

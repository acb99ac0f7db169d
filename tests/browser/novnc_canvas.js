// novnc_canvas: opens the noVNC page through the gateway in a headless
// Chromium of its own and reports, as one JSON line, whether the desktop
// reached the page's canvas: its size and how many distinct colours a
// grid of samples holds (a blank or black canvas has one).
//
//   node novnc_canvas.js URL CHROMIUM [TIMEOUT_MS]
'use strict';
const { chromium } = require('playwright-core');

async function main() {
	const [url, executablePath, timeoutArg] = process.argv.slice(2);
	const timeout = Number(timeoutArg || 30000);
	const browser = await chromium.launch({
		executablePath,
		headless: true,
		args: ['--no-sandbox', '--disable-dev-shm-usage'],
	});
	try {
		const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
		const response = await page.goto(url, { timeout });
		await page.waitForFunction(() => {
			const c = document.querySelector('#noVNC_container canvas, canvas');
			return c !== null && c.width > 100 && c.height > 100;
		}, null, { timeout });
		// The first update can follow the canvas's sizing by a moment.
		const result = await page.waitForFunction(() => {
			const c = document.querySelector('#noVNC_container canvas, canvas');
			const ctx = c.getContext('2d');
			const seen = new Set();
			for (let y = 0; y < c.height; y += Math.max(1, c.height >> 5))
				for (let x = 0; x < c.width; x += Math.max(1, c.width >> 5)) {
					const d = ctx.getImageData(x, y, 1, 1).data;
					seen.add(d[0] + ',' + d[1] + ',' + d[2]);
				}
			return seen.size > 1 ? { width: c.width, height: c.height, colours: seen.size } : null;
		}, null, { timeout, polling: 250 });
		const out = await result.jsonValue();
		out.status = response.status();
		out.url = page.url();
		console.log(JSON.stringify(out));
	} finally {
		await browser.close();
	}
}

main().catch((e) => {
	console.log(JSON.stringify({ error: String(e && e.message || e) }));
	process.exit(1);
});

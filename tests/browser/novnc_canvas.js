// novnc_canvas: opens the noVNC page through the gateway in a headless
// Chromium of its own and reports, as one JSON line, whether the desktop
// reached the page's canvas: its size and how many distinct colours a
// grid of samples holds (a blank or black canvas has one). Given points
// (as fractions of the canvas), it then acts as a person would: moves
// the pointer to each and clicks, types "berth" and Enter, and reports
// too the points clicked and whether noVNC was still connected a moment
// after.
//
//   node novnc_canvas.js URL CHROMIUM [TIMEOUT_MS [FX,FY...]]
'use strict';
const { chromium } = require('playwright-core');

async function act(page, points, out) {
	const canvas = await page.$('#noVNC_container canvas, canvas');
	const box = await canvas.boundingBox();
	out.clicked = [];
	for (const p of points) {
		const [fx, fy] = p.split(',').map(Number);
		const x = box.x + fx * box.width, y = box.y + fy * box.height;
		await page.mouse.move(x - 20, y - 20);
		await page.mouse.move(x, y, { steps: 4 });
		await page.mouse.down();
		await page.mouse.up();
		out.clicked.push([fx, fy]);
	}
	await page.keyboard.type('berth');
	await page.keyboard.press('Enter');
	// What noVNC sends goes out at once: a moment for it to arrive, and
	// to see that the relay did not close on it.
	await page.waitForTimeout(1000);
	out.connected = await page.evaluate(
	    () => document.documentElement.classList.contains('noVNC_connected'));
}

async function main() {
	const [url, executablePath, timeoutArg, ...points] = process.argv.slice(2);
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
		if (points.length > 0)
			await act(page, points, out);
		console.log(JSON.stringify(out));
	} finally {
		await browser.close();
	}
}

main().catch((e) => {
	console.log(JSON.stringify({ error: String(e && e.message || e) }));
	process.exit(1);
});

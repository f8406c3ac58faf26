const puppeteer = require('puppeteer-core');
// Drive the original web client (served by proxy.js) in headless Chromium.
const fs = require('fs');
const OUT = process.env.OUT || '/tmp/ocrun';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
(async () => {
  const browser = await puppeteer.launch({executablePath: '/usr/bin/chromium', headless: 'new', args: ['--no-sandbox']});
  const page = await browser.newPage();
  await page.setViewport({width: 1440, height: 900});
  const cdp = await page.target().createCDPSession();
  await cdp.send('Network.enable');
  const frames = [];
  cdp.on('Network.webSocketFrameSent', (e) => frames.push('→ ' + e.response.payloadData.slice(0, 400)));
  cdp.on('Network.webSocketFrameReceived', (e) => frames.push('← ' + e.response.payloadData.slice(0, 400)));
  const report = [];
  const toasts = () => page.evaluate(() => Array.from(document.querySelectorAll('[class*=toast],[class*=Toast]')).map((e) => e.textContent.trim()).filter(Boolean));
  const shot = async (name) => {
    await sleep(1500);
    await page.screenshot({path: `${OUT}/${name}.png`});
    report.push(`${name}: toasts=${JSON.stringify(await toasts())} action_errors=${frames.filter((f) => f.includes('action_error')).length}`);
  };
  const clickBy = async (sel, label, nth = 0) => {
    const els = await page.$$(sel);
    const matches = [];
    for (const e of els) {
      const t = await e.evaluate((n) => (n.getAttribute('aria-label') || '') + '|' + (n.title || '') + '|' + n.textContent.trim());
      if (t.includes(label)) matches.push(e);
    }
    if (!matches[nth]) throw new Error(`no ${sel} with ${label} #${nth}`);
    await matches[nth].evaluate((n) => n.scrollIntoView({block: 'center'}));
    await matches[nth].click();
  };
  await page.goto('http://127.0.0.1:8790/s/parser-fix', {waitUntil: 'networkidle2'});
  await shot('1-open-session');
  await clickBy('button', 'Previous version');
  await shot('2-previous-version');
  const html = await page.evaluate(() => Array.from(document.querySelectorAll('button')).filter((b) => b.getBoundingClientRect().x > 1380).map((b) => (b.getAttribute('aria-label')||'') + '|' + (b.title||'') + '|' + b.textContent.trim()));
  report.push('right edge buttons: ' + JSON.stringify(html));
  await page.mouse.click(1416, 69);
  await shot('3-files');
  await clickBy('button', 'Rewind to here', 1);
  await shot('4-rewind');
  const composer = await page.evaluate(() => { const t = document.querySelector('textarea,[contenteditable=true]'); return t ? (t.value || t.textContent) : null; });
  report.push('composer after rewind: ' + JSON.stringify(composer));
  await clickBy('button', 'context graph view');
  await shot('5-graph');
  await clickBy('button', 'Session actions');
  await shot('6-session-actions');
  await page.keyboard.press('Escape');
  await clickBy('.sidebar-nav-item', 'New chat');
  await sleep(800);
  const chips = await page.evaluate(() => Array.from(document.querySelectorAll('button')).map((b) => b.textContent.trim()).filter((t) => t && t.length < 30));
  report.push('buttons on new chat: ' + JSON.stringify(chips.slice(0, 60)));
  await shot('7-new-chat');
  await page.mouse.click(465, 789);
  await shot('8-project-picker');
  const picker = await page.evaluate(() => document.body.innerText.includes('Demo'));
  report.push('picker lists Demo: ' + picker);
  fs.writeFileSync(`${OUT}/frames.txt`, frames.join('\n'));
  fs.writeFileSync(`${OUT}/report.txt`, report.join('\n'));
  await browser.close();
})().catch((e) => { console.error(e); fs.writeFileSync(`${OUT}/report.txt`, 'ERR ' + e); process.exit(1); });

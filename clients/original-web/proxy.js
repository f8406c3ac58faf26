// One loopback origin for the original web client: its static export,
// with /api and /ws forwarded to the openprogram server.
const http = require('http'), net = require('net'), fs = require('fs'), path = require('path');
const [,, port, upstream, root] = process.argv;
const [uhost, uport] = upstream.split(':');
const types = {'.html':'text/html','.js':'application/javascript','.css':'text/css','.json':'application/json','.svg':'image/svg+xml','.png':'image/png','.ico':'image/x-icon','.woff2':'font/woff2','.txt':'text/plain'};
function staticFile(p) {
  const clean = decodeURIComponent(p.split('?')[0]);
  for (const c of [clean, clean + '.html', path.join(clean, 'index.html')]) {
    const f = path.join(root, c);
    if (f.startsWith(root) && fs.existsSync(f) && fs.statSync(f).isFile()) return f;
  }
  // Client-side routes: the nearest ancestor page, then the chat shell.
  const parts = clean.split('/').filter(Boolean);
  while (parts.length) {
    const f = path.join(root, parts.join('/') + '.html');
    if (fs.existsSync(f)) return f;
    parts.pop();
  }
  for (const c of ['chat.html', 'index.html']) {
    const f = path.join(root, c);
    if (fs.existsSync(f)) return f;
  }
  return null;
}
const server = http.createServer((req, res) => {
  if (req.url.startsWith('/api/') || req.url === '/api') {
    const headers = {...req.headers, host: upstream};
    const up = http.request({host: uhost, port: uport, path: req.url, method: req.method, headers}, (r) => {
      res.writeHead(r.statusCode, r.headers); r.pipe(res);
    });
    up.on('error', () => { res.writeHead(502); res.end(); });
    req.pipe(up);
    return;
  }
  const f = staticFile(req.url);
  if (!f) { res.writeHead(404); res.end('not found'); return; }
  res.writeHead(200, {'content-type': types[path.extname(f)] || 'application/octet-stream'});
  fs.createReadStream(f).pipe(res);
});
server.on('upgrade', (req, sock, head) => {
  const up = net.connect(Number(uport), uhost, () => {
    let h = `${req.method} ${req.url} HTTP/1.1\r\n`;
    for (const [k, v] of Object.entries(req.headers)) h += `${k}: ${k === 'host' ? upstream : v}\r\n`;
    up.write(h + '\r\n'); up.write(head); sock.pipe(up); up.pipe(sock);
  });
  up.on('error', () => sock.destroy()); sock.on('error', () => up.destroy());
});
server.listen(Number(port), '127.0.0.1');

// The server: REST calls (with the token when one is kept) and one
// WebSocket, reconnected when it drops. Nothing here touches the DOM.

const TOKEN_KEY = 'openprogram.token';

export const token = () => localStorage.getItem(TOKEN_KEY) || '';
export const setToken = (t) => localStorage.setItem(TOKEN_KEY, t.trim());

let askToken = null;
// `fn` resolves once the user has given a token (the page's dialog).
export function onTokenNeeded(fn) {
  askToken = fn;
}

export class ApiError extends Error {
  constructor(status, body) {
    super((body && body.error) || `HTTP ${status}`);
    this.status = status;
    this.code = (body && body.code) || 'http_error';
    this.data = body || {};
  }
}

export async function api(method, path, body) {
  for (let attempt = 0; attempt < 3; attempt++) {
    const headers = {};
    if (token()) headers.Authorization = `Bearer ${token()}`;
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    const r = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (r.status === 401 && askToken) {
      await askToken();
      continue;
    }
    const text = await r.text();
    let data = null;
    try {
      data = text ? JSON.parse(text) : null;
    } catch {
      data = { error: text };
    }
    if (!r.ok) throw new ApiError(r.status, data);
    return data;
  }
  throw new ApiError(401, { error: 'the server wants a token', code: 'unauthorized' });
}

// One WebSocket: frames by `type` to the listeners, requests answered by
// their echoed `request_id`, frames sent while down queued until it is up.
export class Socket {
  constructor() {
    this.listeners = new Map();
    this.waiting = new Map();
    this.queue = [];
    this.nextId = 1;
    this.opened = false;
    this.delay = 500;
    this.connect();
  }

  connect() {
    const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
    const t = token();
    const url = `${proto}//${location.host}/ws${t ? `?token=${encodeURIComponent(t)}` : ''}`;
    const ws = new WebSocket(url);
    this.ws = ws;
    let wasOpen = false;
    ws.onopen = () => {
      wasOpen = true;
      this.opened = true;
      this.delay = 500;
      for (const f of this.queue.splice(0)) ws.send(f);
      this.emit('open', {});
    };
    ws.onmessage = (e) => {
      let m;
      try {
        m = JSON.parse(e.data);
      } catch {
        return;
      }
      if (m.request_id !== undefined && this.waiting.has(m.request_id)) {
        const w = this.waiting.get(m.request_id);
        this.waiting.delete(m.request_id);
        if (m.type === 'action_error') w.reject(new ApiError(400, m.data));
        else w.resolve(m);
      }
      this.emit(m.type, m);
    };
    ws.onclose = async () => {
      this.opened = false;
      this.emit('close', {});
      if (!wasOpen) {
        // Refused at the upgrade: maybe the token. A REST call asks for
        // one when that is it.
        try {
          await api('GET', '/api/health');
          await api('GET', '/api/sessions?limit=1');
        } catch {
          /* shown by the caller */
        }
      }
      setTimeout(() => this.connect(), this.delay);
      this.delay = Math.min(this.delay * 2, 8000);
    };
  }

  on(type, fn) {
    if (!this.listeners.has(type)) this.listeners.set(type, []);
    this.listeners.get(type).push(fn);
  }

  emit(type, m) {
    for (const fn of this.listeners.get(type) || []) fn(m);
  }

  send(action, fields = {}) {
    const f = JSON.stringify({ action, ...fields });
    if (this.opened && this.ws.readyState === WebSocket.OPEN) this.ws.send(f);
    else this.queue.push(f);
  }

  // The reply frame of `action` (or its `action_error`).
  request(action, fields = {}, timeoutMs = 15000) {
    const id = `r${this.nextId++}`;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      setTimeout(() => {
        if (this.waiting.delete(id)) reject(new ApiError(504, { error: `no answer to ${action}`, code: 'timeout' }));
      }, timeoutMs);
      this.send(action, { ...fields, request_id: id });
    });
  }
}

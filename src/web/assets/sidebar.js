// The sessions sidebar: every row of `sessions_list`, patched live,
// filtered and bucketed locally, drawn as a virtual list (only the rows in
// view exist in the DOM, so 10,000 sessions scroll as smoothly as 10).

import { plainText } from './markdown.js';

const ROW_H = 52;
const HEAD_H = 30;

/** Sessions written by this service's own surfaces carry no label. */
const OWN_SOURCES = new Set(['', 'api', 'web', 'ws', 'cli', 'tui', 'channel']);
const SOURCE_NAMES = {
  'claude-code': 'Claude Code',
  codex: 'Codex',
  'gemini-cli': 'Gemini CLI',
  opencode: 'opencode',
  aider: 'Aider',
};

/** The name of the tool a session came from, or '' for our own. */
export function sourceLabel(source) {
  const s = String(source ?? '');
  if (OWN_SOURCES.has(s)) return '';
  return SOURCE_NAMES[s] || s;
}

const BRANDS = {
  wechat: 'WeChat',
  telegram: 'Telegram',
  discord: 'Discord',
  slack: 'Slack',
  whatsapp: 'WhatsApp',
  feishu: 'Feishu',
  lark: 'Lark',
  dingtalk: 'DingTalk',
  qq: 'QQ',
  line: 'LINE',
  signal: 'Signal',
  matrix: 'Matrix',
  email: 'Email',
  sms: 'SMS',
};

export function brand(channel) {
  if (!channel) return '';
  const key = String(channel).toLowerCase();
  return BRANDS[key] || key.charAt(0).toUpperCase() + key.slice(1);
}

// What a row is called: the channel's brand as a prefix (never stored in
// the title), then the title, else the preview.
export function displayTitle(row) {
  const base = (row.title && row.title.trim()) || plainText(row.preview) || 'New conversation';
  const b = brand(row.channel);
  return b ? `[${b}] ${base}` : base;
}

const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];

export function bucketOf(row, now = new Date()) {
  const ts = (row.updated_at || row.created_at || 0) * 1000;
  const d = new Date(ts);
  const startOfToday = new Date(now.getFullYear(), now.getMonth(), now.getDate()).getTime();
  if (ts >= startOfToday) return 'Today';
  if (ts >= startOfToday - 7 * 86400e3) return 'Past 7 days';
  if (d.getFullYear() === now.getFullYear()) return MONTHS[d.getMonth()];
  return String(d.getFullYear());
}

export class Sidebar {
  constructor(root, { onOpen, onMenu, retentionDays = () => 0 }) {
    this.root = root;
    this.inner = root.querySelector('.vlist-inner');
    this.rows = new Map();
    this.show = 'active';
    this.project = '';
    this.source = ''; // a tool's name, 'here' (this service's own), or ''
    this.sourceList = '';
    this.onSources = null; // called with the tools' names when they change
    this.groupBy = 'time';
    this.filter = '';
    this.searchHits = null; // session ids from full-text search
    this.snippets = new Map(); // session id → its best hit ({text, highlights})
    this.current = null;
    this.focusIndex = -1;
    this.items = [];
    this.offsets = [];
    this.onOpen = onOpen;
    this.onMenu = onMenu;
    this.retentionDays = retentionDays;
    root.addEventListener('scroll', () => this.draw());
    window.addEventListener('resize', () => this.draw());
    root.addEventListener('keydown', (e) => this.key(e));
  }

  setAll(rows) {
    this.rows = new Map(rows.map((r) => [r.id, r]));
    this.rebuild();
  }

  upsert(row) {
    this.rows.set(row.id, row);
    this.rebuild();
  }

  patch(data) {
    const row = this.rows.get(data.id);
    if (!row) return;
    Object.assign(row, data);
    this.rebuild();
  }

  remove(id) {
    this.rows.delete(id);
    this.rebuild();
  }

  visible(row) {
    if (this.show === 'active' && row.archived) return false;
    if (this.show === 'archived' && !row.archived) return false;
    if (this.project && row.project_id !== this.project) return false;
    if (this.source) {
      const tool = sourceLabel(row.source) ? row.source : 'here';
      if (tool !== this.source) return false;
    }
    if (this.filter) {
      const f = this.filter.toLowerCase();
      const hay = `${displayTitle(row)} ${row.preview || ''}`.toLowerCase();
      if (!hay.includes(f) && !(this.searchHits && this.searchHits.has(row.id))) return false;
    }
    return true;
  }

  // The flat list of headers and rows the virtual list draws.
  /** The tools the sessions came from (imported ones), sorted. */
  sources() {
    const found = new Set();
    for (const r of this.rows.values()) if (sourceLabel(r.source)) found.add(r.source);
    return [...found].sort();
  }

  rebuild() {
    const list = this.sources();
    if (list.join('\n') !== this.sourceList) {
      this.sourceList = list.join('\n');
      if (this.onSources) this.onSources(list);
    }
    const now = new Date();
    const rows = [...this.rows.values()].filter((r) => this.visible(r));
    const ts = (r) => r.updated_at || r.created_at || 0;
    rows.sort((a, b) => ts(b) - ts(a));
    const items = [];
    const pinned = rows.filter((r) => r.pinned);
    const rest = rows.filter((r) => !r.pinned);
    if (pinned.length) {
      items.push({ head: 'Pinned' });
      pinned.forEach((r) => items.push({ row: r }));
    }
    let groups;
    if (this.groupBy === 'project') {
      groups = new Map();
      for (const r of rest) {
        const k = r.project || 'No project';
        if (!groups.has(k)) groups.set(k, []);
        groups.get(k).push(r);
      }
    } else {
      groups = new Map();
      for (const r of rest) {
        const k = bucketOf(r, now);
        if (!groups.has(k)) groups.set(k, []);
        groups.get(k).push(r);
      }
    }
    for (const [name, list] of groups) {
      items.push({ head: name });
      list.forEach((r) => items.push({ row: r }));
    }
    this.items = items;
    this.offsets = [];
    let y = 0;
    for (const it of items) {
      this.offsets.push(y);
      y += it.head ? HEAD_H : ROW_H;
    }
    this.total = y;
    this.inner.style.height = `${y}px`;
    this.root.setAttribute('aria-rowcount', String(rows.length));
    this.draw();
  }

  firstAt(y) {
    let lo = 0;
    let hi = this.offsets.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.offsets[mid] <= y) lo = mid;
      else hi = mid - 1;
    }
    return Math.max(0, lo);
  }

  draw() {
    const top = this.root.scrollTop;
    const bottom = top + this.root.clientHeight + 200;
    const start = this.firstAt(Math.max(0, top - 200));
    const frag = document.createDocumentFragment();
    for (let i = start; i < this.items.length && this.offsets[i] < bottom; i++) {
      frag.append(this.node(this.items[i], i));
    }
    this.inner.replaceChildren(frag);
    if (!this.items.length) {
      const empty = document.createElement('p');
      empty.className = 'empty';
      empty.textContent = this.rows.size ? 'No session matches.' : 'No sessions yet.';
      this.inner.replaceChildren(empty);
    }
  }

  /// For an archived row under a retention rule: when it is deleted
  /// (announced before it happens).
  deletion(r) {
    const days = this.retentionDays();
    if (!r.archived || !(days > 0)) return '';
    const since = Math.max(r.updated_at || 0, r.archived_at || Date.now() / 1000);
    const when = new Date((since + days * 86400) * 1000);
    return `Deleted after ${when.toLocaleDateString(undefined, { year: 'numeric', month: 'short', day: 'numeric' })}`;
  }

  node(it, i) {
    const top = `${this.offsets[i]}px`;
    if (it.head) {
      const h = document.createElement('div');
      h.className = 'vhead';
      h.style.top = top;
      h.setAttribute('role', 'presentation');
      h.textContent = it.head;
      return h;
    }
    const r = it.row;
    const el = document.createElement('div');
    el.className = 'vrow';
    el.style.top = top;
    el.id = `row-${r.id}`;
    el.dataset.id = r.id;
    el.setAttribute('role', 'option');
    el.setAttribute('aria-selected', String(r.id === this.current));
    el.tabIndex = i === this.focusIndex ? 0 : -1;
    if (r.id === this.current) el.classList.add('current');
    if (r.archived) el.classList.add('archived');
    const dot = document.createElement('span');
    dot.className = `dot ${this.dotOf(r)}`;
    dot.setAttribute('aria-hidden', 'true');
    const text = document.createElement('span');
    text.className = 'rtext';
    const title = document.createElement('span');
    title.className = 'rtitle';
    title.textContent = `${r.pinned ? '★ ' : ''}${displayTitle(r)}`;
    const sub = document.createElement('span');
    sub.className = 'rsub';
    // A project is named only when the session has one (the default
    // project, the home folder, is every other session's).
    const project = r.project_id && r.project_id !== 'default' ? r.project : '';
    // The tool a session came from, when it is not one of this service's
    // own surfaces (an imported or mirrored agent's history).
    const source = r.channel ? '' : sourceLabel(r.source);
    const hit = this.filter && this.snippets.get(r.id);
    if (hit && hit.text) {
      // Where the search matched, its terms marked.
      sub.classList.add('snippet');
      sub.append(...snippetNodes(hit.text, hit.highlights));
    } else {
      sub.textContent = [this.deletion(r), source, project, plainText(r.preview)].filter(Boolean).join(' · ');
    }
    text.append(title, sub);
    const more = document.createElement('button');
    more.className = 'more';
    more.type = 'button';
    more.textContent = '⋯';
    more.setAttribute('aria-label', `Actions for ${displayTitle(r)}`);
    more.addEventListener('click', (e) => {
      e.stopPropagation();
      this.onMenu(r, more);
    });
    el.setAttribute('aria-label', `${displayTitle(r)}${this.dotLabel(r)}`);
    el.append(dot, text, more);
    el.addEventListener('click', () => this.onOpen(r.id));
    el.addEventListener('contextmenu', (e) => {
      e.preventDefault();
      this.onMenu(r, el, e);
    });
    return el;
  }

  dotOf(r) {
    if (r.status === 'running') return 'running';
    if (r.status === 'needs_input') return 'needs-input';
    if (r.status === 'failed') return 'failed';
    if (r.unread) return 'unread';
    return '';
  }

  dotLabel(r) {
    const d = this.dotOf(r);
    return d ? ` (${d.replace('-', ' ')})` : '';
  }

  rowIndices() {
    return this.items.map((it, i) => (it.row ? i : -1)).filter((i) => i >= 0);
  }

  key(e) {
    const idx = this.rowIndices();
    if (!idx.length) return;
    let pos = idx.indexOf(this.focusIndex);
    if (e.key === 'ArrowDown') pos = Math.min(idx.length - 1, pos + 1);
    else if (e.key === 'ArrowUp') pos = Math.max(0, pos - 1);
    else if (e.key === 'Home') pos = 0;
    else if (e.key === 'End') pos = idx.length - 1;
    else if (e.key === 'Enter' && pos >= 0) {
      this.onOpen(this.items[idx[pos]].row.id);
      return;
    } else if ((e.key === 'ContextMenu' || (e.shiftKey && e.key === 'F10')) && pos >= 0) {
      e.preventDefault();
      const r = this.items[idx[pos]].row;
      this.onMenu(r, document.getElementById(`row-${r.id}`));
      return;
    } else return;
    e.preventDefault();
    this.focusIndex = idx[Math.max(0, pos)];
    const y = this.offsets[this.focusIndex];
    if (y < this.root.scrollTop) this.root.scrollTop = y;
    else if (y + ROW_H > this.root.scrollTop + this.root.clientHeight) this.root.scrollTop = y + ROW_H - this.root.clientHeight;
    this.draw();
    const r = this.items[this.focusIndex].row;
    document.getElementById(`row-${r.id}`)?.focus();
  }

  select(id) {
    this.current = id;
    const i = this.items.findIndex((it) => it.row && it.row.id === id);
    if (i >= 0) {
      this.focusIndex = i;
      const y = this.offsets[i];
      if (y < this.root.scrollTop || y > this.root.scrollTop + this.root.clientHeight - ROW_H) {
        this.root.scrollTop = Math.max(0, y - this.root.clientHeight / 3);
      }
    }
    this.draw();
  }
}

// Characters shown before a search hit's first match.
const LEAD = 24;

// A search hit's text as DOM nodes: text, and <mark> for the matched
// ranges (byte ranges of the UTF-8 text, as the search answers them).
export function snippetNodes(text, highlights) {
  const bytes = new TextEncoder().encode(text);
  const utf8 = new TextDecoder();
  const out = [];
  const push = (part, marked) => {
    const node = document.createTextNode(utf8.decode(part).replace(/\s+/g, ' '));
    if (marked) {
      const m = document.createElement('mark');
      m.append(node);
      out.push(m);
    } else out.push(node);
  };
  let at = 0;
  // The row shows one line: the text starts a few words before the first
  // match, so the match is what is seen (not cut off by the ellipsis).
  const first = (highlights || []).find(([start, end]) => end > start && end <= bytes.length);
  if (first) {
    const before = utf8.decode(bytes.subarray(0, first[0]));
    if (before.length > LEAD) {
      let lead = before.slice(-LEAD);
      const space = lead.search(/\s/);
      if (space >= 0 && space < lead.length - 1) lead = lead.slice(space + 1);
      out.push(document.createTextNode(`… ${lead.replace(/\s+/g, ' ')}`));
      at = first[0];
    }
  }
  for (const [start, end] of highlights || []) {
    if (start < at || end <= start || end > bytes.length) continue;
    if (start > at) push(bytes.subarray(at, start), false);
    push(bytes.subarray(start, end), true);
    at = end;
  }
  if (at < bytes.length) push(bytes.subarray(at), false);
  return out;
}

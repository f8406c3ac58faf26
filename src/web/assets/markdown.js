// Markdown to DOM nodes, safely: every piece of text goes through
// `textContent` or a text node, never `innerHTML`, so no markup from a
// message can reach the page. Supports what chat replies use: paragraphs,
// headings, fenced code, inline code, bold, italic (`*x*` and `_x_`),
// links (http, https and mailto only) and autolinks (`<https://…>`),
// lists, quotes, rules and tables (GitHub's pipe tables, with alignment).

function el(tag, cls) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  return e;
}

const SAFE_LINK = /^(https?:|mailto:)/i;

// Inline spans of one line of text into `parent`.
function inline(parent, text) {
  const pattern = /(`[^`]+`)|(\*\*[^*]+\*\*)|(\*[^*\s][^*]*\*)|(\[[^\]]+\]\([^)\s]+\))|((?<![\w])_[^_\s][^_]*_(?![\w]))|(<https?:\/\/[^>\s]+>)/;
  let rest = text;
  while (rest.length > 0) {
    const m = pattern.exec(rest);
    if (!m) {
      parent.append(document.createTextNode(rest));
      return;
    }
    if (m.index > 0) parent.append(document.createTextNode(rest.slice(0, m.index)));
    const tok = m[0];
    if (m[1]) {
      const c = el('code');
      c.textContent = tok.slice(1, -1);
      parent.append(c);
    } else if (m[2]) {
      const b = el('strong');
      inline(b, tok.slice(2, -2));
      parent.append(b);
    } else if (m[3] || m[5]) {
      const i = el('em');
      inline(i, tok.slice(1, -1));
      parent.append(i);
    } else if (m[6]) {
      // An autolink: <https://…>.
      const a = el('a');
      a.href = tok.slice(1, -1);
      a.rel = 'noopener noreferrer';
      a.target = '_blank';
      a.textContent = tok.slice(1, -1);
      parent.append(a);
    } else {
      const close = tok.indexOf('](');
      const label = tok.slice(1, close);
      const href = tok.slice(close + 2, -1);
      if (SAFE_LINK.test(href)) {
        const a = el('a');
        a.href = href;
        a.rel = 'noopener noreferrer';
        a.target = '_blank';
        a.textContent = label;
        parent.append(a);
      } else {
        parent.append(document.createTextNode(tok));
      }
    }
    rest = rest.slice(m.index + tok.length);
  }
}

// A table's delimiter row: `| --- | :-: | --: |`.
const DELIMITER = /^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$/;

// The cells of one table row (`\|` is a pipe inside a cell).
function cells(line) {
  let s = line.trim();
  if (s.startsWith('|')) s = s.slice(1);
  if (s.endsWith('|') && !s.endsWith('\\|')) s = s.slice(0, -1);
  return s.split(/(?<!\\)\|/).map((c) => c.trim().replace(/\\\|/g, '|'));
}

// A pipe table starting at `lines[i]` (its header), or null.
function table(lines, i) {
  if (!lines[i].includes('|') || i + 1 >= lines.length || !DELIMITER.test(lines[i + 1])) return null;
  const head = cells(lines[i]);
  const align = cells(lines[i + 1]).map((d) => (d.startsWith(':') && d.endsWith(':') ? 'center' : d.endsWith(':') ? 'right' : d.startsWith(':') ? 'left' : ''));
  if (align.length !== head.length) return null;
  const t = el('table');
  const row = (values, tag) => {
    const tr = el('tr');
    head.forEach((_, k) => {
      const c = el(tag);
      if (align[k]) c.style.textAlign = align[k];
      inline(c, values[k] || '');
      tr.append(c);
    });
    return tr;
  };
  const thead = el('thead');
  thead.append(row(head, 'th'));
  const tbody = el('tbody');
  let j = i + 2;
  while (j < lines.length && lines[j].trim() !== '' && lines[j].includes('|')) tbody.append(row(cells(lines[j++]), 'td'));
  t.append(thead, tbody);
  const wrap = el('div', 'table-wrap');
  wrap.append(t);
  return { node: wrap, next: j };
}

export function render(source) {
  const root = el('div', 'md');
  const lines = String(source ?? '').replace(/\r\n?/g, '\n').split('\n');
  let i = 0;
  let para = [];
  const flush = () => {
    if (para.length) {
      const p = el('p');
      para.forEach((l, k) => {
        if (k) p.append(el('br'));
        inline(p, l);
      });
      root.append(p);
      para = [];
    }
  };
  while (i < lines.length) {
    const line = lines[i];
    const fence = /^\s*```(.*)$/.exec(line);
    if (fence) {
      flush();
      const body = [];
      i++;
      while (i < lines.length && !/^\s*```\s*$/.test(lines[i])) body.push(lines[i++]);
      i++;
      const pre = el('pre');
      const code = el('code');
      if (fence[1].trim()) code.dataset.lang = fence[1].trim();
      code.textContent = body.join('\n');
      pre.append(code);
      root.append(pre);
      continue;
    }
    const tab = table(lines, i);
    if (tab) {
      flush();
      root.append(tab.node);
      i = tab.next;
      continue;
    }
    const h = /^(#{1,6})\s+(.*)$/.exec(line);
    if (h) {
      flush();
      const e = el(`h${Math.min(h[1].length + 2, 6)}`);
      inline(e, h[2]);
      root.append(e);
      i++;
      continue;
    }
    if (/^\s*([-*_])\s*\1\s*\1[\s\-*_]*$/.test(line)) {
      flush();
      root.append(el('hr'));
      i++;
      continue;
    }
    const item = /^\s*([-*+]|\d+[.)])\s+(.*)$/.exec(line);
    if (item) {
      flush();
      const ordered = /\d/.test(item[1]);
      const list = el(ordered ? 'ol' : 'ul');
      while (i < lines.length) {
        const it = /^\s*([-*+]|\d+[.)])\s+(.*)$/.exec(lines[i]);
        if (!it || /\d/.test(it[1]) !== ordered) break;
        const li = el('li');
        inline(li, it[2]);
        list.append(li);
        i++;
      }
      root.append(list);
      continue;
    }
    if (/^\s*>/.test(line)) {
      flush();
      const q = el('blockquote');
      const body = [];
      while (i < lines.length && /^\s*>/.test(lines[i])) body.push(lines[i++].replace(/^\s*>\s?/, ''));
      q.append(render(body.join('\n')));
      root.append(q);
      continue;
    }
    if (line.trim() === '') flush();
    else para.push(line);
    i++;
  }
  flush();
  return root;
}

// Markdown as plain text, for one-line previews: the markers go, the words
// stay (`**bold**` → bold, `[text](url)` → text, `# Heading` → Heading).
export function plainText(source) {
  return String(source || '')
    .replace(/```[^\n]*\n?/g, '')
    .replace(/`([^`]+)`/g, '$1')
    .replace(/!?\[([^\]]*)\]\([^)\s]*\)/g, '$1')
    .replace(/<(https?:\/\/[^>\s]+)>/g, '$1')
    .replace(/(\*\*|__)(?=\S)([^*_]*?\S)\1/g, '$2')
    .replace(/(^|[\s(])([*_])(?=\S)([^*_]*?\S)\2(?=[\s).,;:!?]|$)/g, '$1$3')
    .replace(/^\s{0,3}(#{1,6}|>|[-*+]|\d+[.)])\s+/gm, '')
    .replace(/^\s*\|?(\s*:?-{3,}:?\s*\|)+\s*$/gm, '')
    .replace(/\s*\|\s*/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
}

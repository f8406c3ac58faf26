// The conversation: user and assistant messages (Markdown, rendered
// safely), tool calls folded under the reply that made them, runtime nodes
// as small lines, and a `‹ 1 / 2 ›` switcher where a message has retries.

import { render } from './markdown.js';

export function textOf(content) {
  if (content == null) return '';
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((b) => (typeof b === 'string' ? b : b && typeof b.text === 'string' ? b.text : ''))
      .filter(Boolean)
      .join('\n');
  }
  if (typeof content === 'object' && typeof content.text === 'string') return content.text;
  return JSON.stringify(content);
}

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

// At most this many turns show their files (the newest).
const MAX_CARDS = 50;

const isRuntime = (n) => n.role === 'code' || (n.metadata && n.metadata.display === 'runtime');

// The assistant answers to the same user message (retries), oldest first.
export function siblingsOf(node, allNodes) {
  if (node.role !== 'assistant' || node.caller || !node.predecessor) return [node];
  const s = allNodes.filter((n) => n.role === 'assistant' && !n.caller && n.predecessor === node.predecessor);
  s.sort((a, b) => a.seq - b.seq);
  return s.length ? s : [node];
}

// Runtime notes (`project/relocate`, …) hang off the root, not the
// conversation's chain: they are placed among the messages by sequence,
// up to the head being viewed (all of them when live).
function withRuntimeNotes(messages, allNodes, live) {
  const shown = new Set(messages.map((m) => m.id));
  const last = messages.reduce((m, n) => Math.max(m, n.seq || 0), 0);
  const notes = allNodes.filter(
    (n) => !shown.has(n.id) && n.metadata && n.metadata.display === 'runtime' && (live || (n.seq || 0) <= last),
  );
  if (!notes.length) return messages;
  return [...messages, ...notes].sort((a, b) => (a.seq || 0) - (b.seq || 0));
}

// Who answered: the reply's own `metadata.runner` / `metadata.model` (the
// built-in runner writes both), else the runner named on the message it
// answers (set when a runner claimed it).
function answeredBy(n, asked) {
  const meta = n.metadata || {};
  const runner = typeof meta.runner === 'string' ? meta.runner : asked && asked.metadata && typeof asked.metadata.runner === 'string' ? asked.metadata.runner : '';
  const model = typeof meta.model === 'string' ? meta.model : '';
  if (!runner && !model) return '';
  return `answered by ${[runner, model].filter(Boolean).join(' · ')}`;
}

// `onSwitch(node)` is called with the sibling to show.
// `onTurnEnd(node, element)` is called for each reply that ends a turn.
// `onRetry(node)`: a reply's Retry button (none while replaying).
export function renderConversation(container, chain, allNodes, { onSwitch, time, live, onTurnEnd, onRetry }) {
  const messages = withRuntimeNotes(chain, allNodes, live);
  const frag = document.createDocumentFragment();
  const byCaller = new Map();
  for (const n of messages) {
    if (n.caller && n.role === 'tool') {
      if (!byCaller.has(n.caller)) byCaller.set(n.caller, []);
      byCaller.get(n.caller).push(n);
    }
  }
  // The replies that end a turn: the last assistant message before the
  // next user message (or the end).
  const talk = messages.filter((m) => (m.role === 'user' || m.role === 'assistant') && !m.caller && !isRuntime(m));
  const ends = new Set(talk.filter((m, i) => m.role === 'assistant' && (i === talk.length - 1 || talk[i + 1].role === 'user')).map((m) => m.id));
  const cards = [];
  let asked = null;
  for (const n of messages) {
    if (n.role === 'user' && !n.caller) asked = n;
    if (n.role === 'tool' && n.caller && messages.some((m) => m.id === n.caller)) continue;
    if (n.role === 'system' && !isRuntime(n)) {
      // A system prompt or note: folded, opened on demand.
      const d = el('details', 'system-msg');
      d.dataset.node = n.id;
      d.append(el('summary', '', n.name ? `System · ${n.name}` : 'System message'));
      const body = el('pre', 'system-body');
      body.textContent = textOf(n.content) || textOf(n.output);
      d.append(body);
      frag.append(d);
      continue;
    }
    if (isRuntime(n)) {
      const line = el('div', 'runtime');
      line.dataset.node = n.id;
      const name = n.name ? `${n.name}: ` : '';
      line.textContent = `${name}${textOf(n.output) || textOf(n.content)}`;
      frag.append(line);
      continue;
    }
    const msg = el('article', `msg ${n.role}`);
    msg.dataset.node = n.id;
    msg.setAttribute('aria-label', `${n.role} message`);
    const head = el('header', 'msg-head');
    head.append(el('span', 'who', n.role === 'user' ? 'You' : n.role === 'assistant' ? 'Assistant' : n.name || n.role));
    if (n.created_at) head.append(el('time', 'when', time(n.created_at)));
    if (n.role === 'assistant') {
      const by = answeredBy(n, asked);
      if (by) head.append(el('span', 'runner', by));
      // A run the user stopped: its answer is partial.
      if (n.metadata && n.metadata.stopped === true) {
        msg.classList.add('stopped');
        head.append(el('span', 'stopped-mark', 'stopped'));
      }
    }
    const sibs = siblingsOf(n, allNodes);
    if (sibs.length > 1) {
      const i = sibs.findIndex((s) => s.id === n.id);
      const sw = el('span', 'retry-switch');
      sw.setAttribute('role', 'group');
      sw.setAttribute('aria-label', 'Answers to this message');
      const prev = el('button', 'retry-prev', '‹');
      prev.type = 'button';
      prev.setAttribute('aria-label', 'Previous answer');
      prev.disabled = i <= 0;
      prev.addEventListener('click', () => onSwitch(sibs[i - 1]));
      const next = el('button', 'retry-next', '›');
      next.type = 'button';
      next.setAttribute('aria-label', 'Next answer');
      next.disabled = i >= sibs.length - 1;
      next.addEventListener('click', () => onSwitch(sibs[i + 1]));
      sw.append(prev, el('span', 'retry-pos', `${i + 1} / ${sibs.length}`), next);
      head.append(sw);
    }
    // Another answer to the same message, on a branch of its own.
    if (onRetry && live && ends.has(n.id)) {
      const again = el('button', 'retry', 'Retry');
      again.type = 'button';
      again.title = 'Ask again: a new answer on a branch of its own';
      again.setAttribute('aria-label', 'Retry this answer');
      again.addEventListener('click', () => onRetry(n, again));
      head.append(again);
    }
    msg.append(head);
    const body = el('div', 'msg-body');
    body.append(render(textOf(n.content)));
    msg.append(body);
    for (const t of byCaller.get(n.id) || []) {
      const d = el('details', 'tool');
      d.dataset.node = t.id;
      const s = el('summary', '', `Tool · ${t.name || 'tool'}`);
      d.append(s);
      const out = el('pre', 'tool-out');
      out.textContent = textOf(t.output) || textOf(t.content);
      d.append(out);
      msg.append(d);
    }
    frag.append(msg);
    if (onTurnEnd && ends.has(n.id)) cards.push([n, msg]);
  }
  container.replaceChildren(frag);
  // The newest turns only: each card is a request.
  for (const [n, msg] of cards.slice(-MAX_CARDS)) onTurnEnd(n, msg);
  if (!messages.length) container.replaceChildren(el('p', 'empty', 'No messages yet. Write the first one below.'));
}

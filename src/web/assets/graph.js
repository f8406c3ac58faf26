// The branch graph (spec 001 §4.1): one lane per branch (main first), a
// dot per turn commit at its turn, a fork where a branch left its parent's
// line, the current position ringed. Drawn as SVG from `GET /history`.

const NS = 'http://www.w3.org/2000/svg';
const DX = 26;
const DY = 30;
// The turns' area starts here; lane names sit in their own column, which
// stays in view while a long history scrolls sideways.
const LEFT = 16;
const LABELS = 130;
const TOP = 24;

function svg(tag, attrs = {}) {
  const e = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  return e;
}

export function drawGraph(container, history, { onPick, onSwitch, time }) {
  const commits = [...(history.commits || [])];
  commits.sort((a, b) => a.turn - b.turn || a.timestamp - b.timestamp);
  const lanes = [];
  for (const c of commits) if (!lanes.includes(c.branch)) lanes.push(c.branch);
  lanes.sort((a, b) => (a === 'main' ? -1 : b === 'main' ? 1 : lanes.indexOf(a) - lanes.indexOf(b)));
  const maxTurn = commits.reduce((m, c) => Math.max(m, c.turn), 0);
  const width = LEFT + (maxTurn + 1) * DX + 20;
  const height = TOP + lanes.length * DY + 10;
  const root = svg('svg', { width, height, viewBox: `0 0 ${width} ${height}`, role: 'img', class: 'graph' });
  const names = svg('svg', { width: LABELS, height, viewBox: `0 0 ${LABELS} ${height}`, class: 'graph graph-names' });
  const title = svg('title');
  title.textContent = `Branches: ${lanes.length}, turns: ${maxTurn}`;
  root.append(title);
  const pos = new Map();
  const laneY = (b) => TOP + lanes.indexOf(b) * DY;
  for (const c of commits) pos.set(c.sha, { x: LEFT + c.turn * DX, y: laneY(c.branch) });
  // Turn ruler.
  for (let t = 1; t <= maxTurn; t += Math.max(1, Math.ceil(maxTurn / 20))) {
    const tx = svg('text', { x: LEFT + t * DX, y: 12, class: 'ruler', 'text-anchor': 'middle' });
    tx.textContent = String(t);
    root.append(tx);
  }
  // Lanes and their labels (a label switches to that branch).
  for (const b of lanes) {
    const y = laneY(b);
    root.append(svg('line', { x1: LEFT, y1: y, x2: width - 10, y2: y, class: 'lane' }));
    const label = svg('text', { x: 6, y: y + 4, class: `lane-label${b === history.branch ? ' current' : ''}`, tabindex: 0, role: 'button' });
    label.textContent = b.length > 16 ? `${b.slice(0, 15)}…` : b;
    const t = svg('title');
    t.textContent = `Switch to ${b}`;
    label.append(t);
    label.addEventListener('click', () => onSwitch(b));
    label.addEventListener('keydown', (e) => e.key === 'Enter' && onSwitch(b));
    names.append(label);
  }
  // Edges from each commit's parent.
  for (const c of commits) {
    const p = c.parent && pos.get(c.parent);
    const q = pos.get(c.sha);
    if (!p) continue;
    const d = p.y === q.y ? `M${p.x},${p.y} L${q.x},${q.y}` : `M${p.x},${p.y} C${p.x + DX / 2},${p.y} ${q.x - DX / 2},${q.y} ${q.x},${q.y}`;
    root.append(svg('path', { d, class: p.y === q.y ? 'edge' : 'edge fork' }));
  }
  const at = history.position && history.position.commit;
  for (const c of commits) {
    const q = pos.get(c.sha);
    const dot = svg('circle', {
      cx: q.x,
      cy: q.y,
      r: c.sha === at ? 7 : 5,
      class: `dot${c.sha === at ? ' here' : ''}${c.on_current_path ? ' path' : ''}`,
      tabindex: 0,
      role: 'button',
      'data-sha': c.sha,
    });
    const t = svg('title');
    t.textContent = `Turn ${c.turn} · ${c.branch} · ${time(c.timestamp)}\n${c.summary}`;
    dot.append(t);
    dot.addEventListener('click', () => onPick(c));
    dot.addEventListener('keydown', (e) => e.key === 'Enter' && onPick(c));
    root.append(dot);
  }
  const scroller = document.createElement('div');
  scroller.className = 'graph-scroll';
  scroller.append(root);
  container.replaceChildren(names, scroller);
  // The current position in view.
  const here = at && pos.get(at);
  if (here) scroller.scrollLeft = Math.max(0, here.x - scroller.clientWidth / 2);
}

// DOM helpers shared by the page's modules. Elements are built with createElement and their
// text set with textContent: nothing here (or anywhere in the page) parses HTML.

// h('button', {class: 'btn', type: 'button', onclick: fn, 'aria-label': 'x'}, 'text', child, ...)
// Attributes: `class`, `text` (textContent), `on<event>` (listeners), `dataset` (object),
// booleans (true: present, false/null/undefined: absent), anything else by setAttribute.
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  if (attrs) {
    for (const [name, value] of Object.entries(attrs)) {
      if (value === undefined || value === null || value === false) continue;
      if (name === 'class') el.className = value;
      else if (name === 'text') el.textContent = value;
      else if (name === 'dataset') Object.assign(el.dataset, value);
      else if (name.startsWith('on') && typeof value === 'function') el.addEventListener(name.slice(2), value);
      else if (value === true) el.setAttribute(name, '');
      else el.setAttribute(name, String(value));
    }
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(el, child);
    else if (typeof child === 'string' || typeof child === 'number') el.appendChild(document.createTextNode(String(child)));
    else el.appendChild(child);
  }
}

export function clear(el) {
  while (el.firstChild) el.removeChild(el.firstChild);
}

// "12.3%", "0.04%", "<0.01%", "100%".
export function percent(p) {
  if (p === null || p === undefined || Number.isNaN(p)) return '–';
  const v = p * 100;
  if (v === 0) return '0%';
  if (v < 0.01) return '<0.01%';
  if (v < 1) return `${v.toFixed(2)}%`;
  if (v < 99.95) return `${v.toFixed(1)}%`;
  return '100%';
}

// A token's text made visible: newlines as ↵, tabs as →, a token of spaces as ·, bytes of
// an incomplete UTF-8 character (U+FFFD in the text) as <0xNN>.
export function visibleToken(text, bytes) {
  let t = String(text ?? '');
  if (t.includes('\uFFFD') && Array.isArray(bytes) && bytes.length)
    return bytes.map((b) => `<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`).join('');
  if (t === '') return '∅';
  if (/^ +$/.test(t)) return '·'.repeat(t.length);
  t = t.replace(/\r/g, '␍').replace(/\t/g, '→').replace(/\n/g, '↵');
  return t;
}

// For labels: a token quoted with its whitespace named.
export function describeToken(text) {
  const t = String(text ?? '');
  if (t === '') return 'empty token';
  if (t === '\n') return 'newline';
  if (/^ +$/.test(t)) return t.length === 1 ? 'space' : `${t.length} spaces`;
  return `“${t.replace(/\n/g, '↵').replace(/\t/g, '→')}”`;
}

// A small, safe markdown renderer for model output.
//
// parse(text) turns markdown into a plain-data tree: {type: 'root', children: [...]}, whose
// nodes are objects with a `type` and either `children` or `text` (and a few fields per type:
// heading.level, code.lang / code.closed, list.ordered / list.start, link.href, table.align).
// toDom(tree, document) builds DOM nodes from that tree with createElement,
// createTextNode and textContent only: no HTML is ever parsed, so whatever the model writes
// (<script>, <img onerror>, ...) stays text. Links are made only for http and https URLs.
//
// Supported: fenced code blocks (``` or ~~~, with a language; an unclosed fence, as while a
// reply streams, runs to the end), ATX headings, paragraphs (a single newline is a line
// break, as chat replies mean it), bullet and numbered lists (nested by indentation),
// blockquotes, thematic breaks, GFM tables, inline code, **bold**, *italic* (and the _
// forms), [text](http://...) links, <http://...> and bare http(s) URLs, backslash escapes.
// Everything else stays text. Nesting is bounded (blocks and emphasis), and every step is
// linear in the input, so a hostile 100 KB reply renders quickly and cannot overflow the
// stack.
//
// This file imports nothing: the node tests load it as it is.

const MAX_BLOCK_DEPTH = 12;   // nested lists / blockquotes beyond this stay text
const MAX_INLINE_DEPTH = 24;  // nested emphasis beyond this stays text
const MAX_DELIM_RUN = 6;      // runs of more * or _ than this are text
const MAX_URL = 4096;

const PUNCT = /[!-/:-@[-`{-~\u2000-\u206f\u2e00-\u2e7f\u3000-\u303f]/;
const SPACE = /\s/;

export function isSafeUrl(href) {
  return typeof href === 'string' && href.length <= MAX_URL && /^https?:\/\/[^\s<>"'`\\]+$/i.test(href);
}

// ---------------------------------------------------------------------------------------
// Blocks

const FENCE_OPEN = /^( {0,3})(`{3,}|~{3,})(.*)$/;
const ATX = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/;
const HR = /^ {0,3}(?:(?:\*[ \t]*){3,}|(?:-[ \t]*){3,}|(?:_[ \t]*){3,})$/;
const QUOTE = /^ {0,3}> ?/;
const ITEM = /^( {0,3})([-*+]|\d{1,9}[.)])(?:([ \t]+)(.*))?$/;
const TABLE_DELIM = /^ {0,3}\|?[ \t]*:?-+:?[ \t]*(\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$/;

function isBlank(line) {
  return !/\S/.test(line);
}

function expandTabs(line) {
  // Leading tabs count as four spaces, enough for list nesting.
  const m = /^[ \t]+/.exec(line);
  if (!m || m[0].indexOf('\t') < 0) return line;
  let width = 0;
  for (const c of m[0]) width = c === '\t' ? width + 4 - (width % 4) : width + 1;
  return ' '.repeat(width) + line.slice(m[0].length);
}

function indentOf(line) {
  let i = 0;
  while (i < line.length && line.charCodeAt(i) === 32) i++;
  return i;
}

function fenceOpen(line) {
  const m = FENCE_OPEN.exec(line);
  if (!m) return null;
  const info = m[3];
  if (m[2][0] === '`' && info.indexOf('`') >= 0) return null;
  return { indent: m[1].length, char: m[2][0], length: m[2].length, lang: info.trim().split(/\s+/)[0] || '' };
}

function itemStart(line) {
  const m = ITEM.exec(line);
  if (!m) return null;
  const marker = m[2];
  const ordered = /\d/.test(marker[0]);
  let spaces = m[3] ? m[3].length : 1;
  const rest = m[4] ?? '';
  if (m[3] && m[3].indexOf('\t') >= 0) spaces = 1;
  if (spaces > 4) spaces = 1;  // the content is an indented block: keep it as text
  return {
    indent: m[1].length,
    ordered,
    bullet: ordered ? marker[marker.length - 1] : marker,
    start: ordered ? parseInt(marker, 10) : 1,
    contentIndent: m[1].length + marker.length + spaces,
    first: m[3] && spaces === 1 && m[3].length > 1 ? ' '.repeat(m[3].length - 1) + rest : rest,
    empty: rest === '',
  };
}

// A line that ends a paragraph by starting another block.
function startsBlock(line) {
  if (fenceOpen(line) || ATX.test(line) || HR.test(line) || QUOTE.test(line)) return true;
  const item = itemStart(line);
  return item !== null && !item.empty;
}

function splitRow(line) {
  let s = line.trim();
  if (s.startsWith('|')) s = s.slice(1);
  if (s.endsWith('|') && !s.endsWith('\\|')) s = s.slice(0, -1);
  const cells = [];
  let cell = '';
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (c === '\\' && s[i + 1] === '|') { cell += '|'; i++; continue; }
    if (c === '|') { cells.push(cell.trim()); cell = ''; continue; }
    cell += c;
  }
  cells.push(cell.trim());
  return cells;
}

function parseBlocks(lines, depth) {
  const blocks = [];
  let i = 0;
  const n = lines.length;
  while (i < n) {
    const line = lines[i];
    if (isBlank(line)) { i++; continue; }

    const fence = fenceOpen(line);
    if (fence) {
      const body = [];
      let closed = false;
      i++;
      while (i < n) {
        const l = lines[i];
        const close = /^ {0,3}(`{3,}|~{3,})[ \t]*$/.exec(l);
        if (close && close[1][0] === fence.char && close[1].length >= fence.length) { closed = true; i++; break; }
        // Remove up to the fence's own indentation from each line.
        const strip = Math.min(fence.indent, indentOf(l));
        body.push(l.slice(strip));
        i++;
      }
      blocks.push({ type: 'code', lang: fence.lang, text: body.join('\n'), closed });
      continue;
    }

    const atx = ATX.exec(line);
    if (atx) {
      blocks.push({ type: 'heading', level: atx[1].length, children: parseInline(atx[2] ?? '', 0) });
      i++;
      continue;
    }

    if (HR.test(line)) {
      blocks.push({ type: 'hr' });
      i++;
      continue;
    }

    if (QUOTE.test(line)) {
      const inner = [];
      while (i < n && !isBlank(lines[i])) {
        const l = lines[i];
        if (QUOTE.test(l)) inner.push(l.replace(QUOTE, ''));
        else if (inner.length && !startsBlock(l)) inner.push(l);  // lazy continuation
        else break;
        i++;
      }
      blocks.push(depth >= MAX_BLOCK_DEPTH
        ? { type: 'paragraph', children: parseInline(inner.join('\n'), 0) }
        : { type: 'blockquote', children: parseBlocks(inner, depth + 1) });
      continue;
    }

    const first = itemStart(line);
    if (first) {
      const list = { type: 'list', ordered: first.ordered, start: first.start, children: [] };
      while (i < n) {
        const item = itemStart(lines[i]);
        if (!item || item.ordered !== first.ordered || item.bullet !== first.bullet) break;
        if (list.children.length && item.indent >= first.contentIndent) break;
        const inner = [item.first];
        i++;
        let lastBlank = item.empty;
        while (i < n) {
          const l = lines[i];
          if (isBlank(l)) { inner.push(''); lastBlank = true; i++; continue; }
          const ind = indentOf(l);
          if (ind >= item.contentIndent) { inner.push(l.slice(item.contentIndent)); lastBlank = false; i++; continue; }
          if (!lastBlank && !startsBlock(l) && !itemStart(l)) { inner.push(l.trimStart()); i++; continue; }  // lazy
          break;
        }
        while (inner.length && isBlank(inner[inner.length - 1])) inner.pop();
        list.children.push({
          type: 'item',
          children: depth >= MAX_BLOCK_DEPTH
            ? [{ type: 'paragraph', children: parseInline(inner.join('\n'), 0) }]
            : parseBlocks(inner, depth + 1),
        });
        // A blank line between items keeps the list going; anything else ends it.
        let j = i;
        while (j < n && isBlank(lines[j])) j++;
        if (j > i && j < n && itemStart(lines[j])) i = j;
      }
      blocks.push(list);
      continue;
    }

    // A GFM table: a header row, a delimiter row with as many cells, then body rows.
    if (line.indexOf('|') >= 0 && i + 1 < n && TABLE_DELIM.test(lines[i + 1])) {
      const header = splitRow(line);
      const delims = splitRow(lines[i + 1]);
      if (header.length === delims.length) {
        const align = delims.map((d) => (d.startsWith(':') && d.endsWith(':') ? 'center'
          : d.endsWith(':') ? 'right' : d.startsWith(':') ? 'left' : null));
        const rows = [];
        i += 2;
        while (i < n && !isBlank(lines[i]) && lines[i].indexOf('|') >= 0 && !startsBlock(lines[i])) {
          rows.push(splitRow(lines[i]));
          i++;
        }
        const cells = (row) => header.map((_, c) => ({ type: 'cell', children: parseInline(row[c] ?? '', 0) }));
        blocks.push({
          type: 'table',
          align,
          children: [{ type: 'row', header: true, children: cells(header) },
                     ...rows.map((r) => ({ type: 'row', header: false, children: cells(r) }))],
        });
        continue;
      }
    }

    // A paragraph: lines up to a blank line or the start of another block.
    const para = [line.trim()];
    i++;
    while (i < n && !isBlank(lines[i]) && !startsBlock(lines[i])) {
      if (lines[i].indexOf('|') >= 0 && i + 1 < n && TABLE_DELIM.test(lines[i + 1])) break;
      para.push(lines[i].trim());
      i++;
    }
    blocks.push({ type: 'paragraph', children: parseInline(para.join('\n'), 0) });
  }
  return blocks;
}

// ---------------------------------------------------------------------------------------
// Inlines

// Code spans: a run of n backticks to the next run of exactly n. Linear: each run's next run
// of the same length is found by one pass from the end.
function findCodeSpans(src) {
  const runs = [];
  for (let i = 0; i < src.length; i++) {
    if (src.charCodeAt(i) !== 96) continue;
    let j = i;
    while (j < src.length && src.charCodeAt(j) === 96) j++;
    let start = i;
    if (i > 0 && src.charCodeAt(i - 1) === 92 && !isEscaped(src, i - 1)) start++;  // \` is a literal
    if (j > start) runs.push({ start, length: j - start });
    i = j - 1;
  }
  const next = new Array(runs.length).fill(-1);
  const lastByLength = new Map();
  for (let r = runs.length - 1; r >= 0; r--) {
    next[r] = lastByLength.get(runs[r].length) ?? -1;
    lastByLength.set(runs[r].length, r);
  }
  const spans = new Map();  // start -> end (exclusive) of the whole span
  let covered = -1;
  for (let r = 0; r < runs.length; r++) {
    if (runs[r].start < covered) continue;
    const closer = next[r];
    if (closer < 0) continue;
    const end = runs[closer].start + runs[closer].length;
    spans.set(runs[r].start, { end, open: runs[r].length, close: runs[closer].start });
    covered = end;
    // Runs inside this span are skipped by `covered`; runs after it still pair with theirs.
  }
  return spans;
}

function isEscaped(src, i) {
  let k = i - 1;
  let count = 0;
  while (k >= 0 && src.charCodeAt(k) === 92) { count++; k--; }
  return count % 2 === 1;
}

// [ ] pairs outside code spans, by a stack: open index -> close index.
function findBrackets(src, spans) {
  const pairs = new Map();
  const stack = [];
  for (let i = 0; i < src.length; i++) {
    const span = spans.get(i);
    if (span) { i = span.end - 1; continue; }
    const c = src.charCodeAt(i);
    if (c === 92) { i++; continue; }
    if (c === 91) stack.push(i);
    else if (c === 93 && stack.length) pairs.set(stack.pop(), i);
  }
  return pairs;
}

// A finder for the next position at or after `from` whose character is in `chars`, for
// increasing `from`: it remembers its last answer, so a scan over a long run without such a
// character happens once, not once per query (inputs like "[a](" repeated stay linear).
function finder(src, chars) {
  let lastFrom = -1;
  let lastAt = -1;
  return (from) => {
    if (from >= lastFrom && from <= lastAt) return lastAt;
    let i = from;
    while (i < src.length && !chars.includes(src[i])) i++;
    lastFrom = from;
    lastAt = i;  // src.length when none
    return i;
  };
}

// `(url)` right after a link's `]`: returns {href, end} or null.
function linkDestination(src, open, finders) {
  if (src.charCodeAt(open) !== 40) return null;
  let i = open + 1;
  while (i < src.length && (src[i] === ' ' || src[i] === '\t')) i++;
  let href;
  if (src[i] === '<') {
    const close = finders.gt(i);
    if (close >= src.length || close - i > MAX_URL) return null;
    href = src.slice(i + 1, close);
    i = close + 1;
  } else {
    // Up to whitespace or a ')'; a ')' that closes a '(' of the URL (as in Wikipedia's
    // "Foo_(bar)") belongs to it.
    const from = i;
    i = finders.stop(i);
    for (let extra = 0; extra < 4 && src[i] === ')'; extra++) {
      const part = src.slice(from, i);
      if (part.split('(').length <= part.split(')').length) break;
      i = finders.stop(i + 1);
    }
    if (i - from > MAX_URL) return null;
    href = src.slice(from, i);
  }
  while (i < src.length && (src[i] === ' ' || src[i] === '\t')) i++;
  // An optional "title", ignored.
  if (src[i] === '"') {
    const close = finders.quote(i + 1);
    if (close >= src.length || close - i > MAX_URL) return null;
    i = close + 1;
    while (i < src.length && (src[i] === ' ' || src[i] === '\t')) i++;
  }
  if (src[i] !== ')') return null;
  return { href, end: i + 1 };
}

const BARE_URL = /https?:\/\/[^\s<>"'`]+/y;

function bareUrl(src, i) {
  if (i > 0 && /[A-Za-z0-9]/.test(src[i - 1])) return null;
  BARE_URL.lastIndex = i;
  const m = BARE_URL.exec(src);
  if (!m) return null;
  let url = m[0].slice(0, MAX_URL);
  // Trailing punctuation belongs to the sentence, and so does a ) without its (.
  for (;;) {
    const last = url[url.length - 1];
    if ('.,;:!?*_~\''.includes(last)) { url = url.slice(0, -1); continue; }
    if (last === ')') {
      const opens = url.split('(').length - 1;
      const closes = url.split(')').length - 1;
      if (closes > opens) { url = url.slice(0, -1); continue; }
    }
    break;
  }
  return url.length > 'https://'.length - 1 && isSafeUrl(url) ? url : null;
}

// Flanking rules (CommonMark) for a run of * or _ from i to j.
function delimiter(src, i, j) {
  const c = src[i];
  const before = i > 0 ? src[i - 1] : ' ';
  const after = j < src.length ? src[j] : ' ';
  const beforeSpace = SPACE.test(before);
  const afterSpace = SPACE.test(after);
  const beforePunct = PUNCT.test(before);
  const afterPunct = PUNCT.test(after);
  const left = !afterSpace && (!afterPunct || beforeSpace || beforePunct);
  const right = !beforeSpace && (!beforePunct || afterSpace || afterPunct);
  const canOpen = c === '*' ? left : left && (!right || beforePunct);
  const canClose = c === '*' ? right : right && (!left || afterPunct);
  return { kind: 'delim', char: c, count: j - i, orig: j - i, canOpen, canClose };
}

// Parses one paragraph's (or cell's, heading's, link text's) inline markdown.
export function parseInline(src, depth = 0, allowLinks = true) {
  const spans = findCodeSpans(src);
  const brackets = allowLinks ? findBrackets(src, spans) : new Map();
  const finders = { gt: finder(src, '>'), stop: finder(src, ' \t\n)'), quote: finder(src, '"') };
  const items = [];
  let text = '';
  const flush = () => {
    if (text) { items.push({ kind: 'node', node: { type: 'text', text } }); text = ''; }
  };
  const n = src.length;
  let i = 0;
  let plain = 0;  // start of the plain run not yet copied into `text`
  const special = /[\\`\n[<h*_]/g;
  while (i < n) {
    special.lastIndex = i;
    const m = special.exec(src);
    if (!m) break;
    const at = m.index;
    const c = src[at];
    text += src.slice(plain, at);
    i = at;
    plain = at;
    if (c === '\\') {
      const next = src[at + 1];
      if (next === '\n') { text = text.replace(/ +$/, ''); flush(); items.push({ kind: 'node', node: { type: 'break' } }); i = plain = at + 2; continue; }
      if (next !== undefined && PUNCT.test(next) && next.charCodeAt(0) < 128) { text += next; i = plain = at + 2; continue; }
      text += c; i = plain = at + 1; continue;
    }
    if (c === '`') {
      const span = spans.get(at);
      if (span) {
        let code = src.slice(at + span.open, span.close).replace(/\n/g, ' ');
        if (code.length > 2 && code[0] === ' ' && code[code.length - 1] === ' ' && /\S/.test(code)) code = code.slice(1, -1);
        flush();
        items.push({ kind: 'node', node: { type: 'inlineCode', text: code } });
        i = plain = span.end;
        continue;
      }
      // An unmatched run: all of it is text.
      let j = at;
      while (j < n && src[j] === '`') j++;
      text += src.slice(at, j); i = plain = j; continue;
    }
    if (c === '\n') {
      text = text.replace(/ +$/, '');
      flush();
      items.push({ kind: 'node', node: { type: 'break' } });
      let j = at + 1;
      while (j < n && src[j] === ' ') j++;
      i = plain = j;
      continue;
    }
    if (c === '[' && allowLinks) {
      const close = brackets.get(at);
      if (close !== undefined) {
        const dest = linkDestination(src, close + 1, finders);
        if (dest && isSafeUrl(dest.href)) {
          flush();
          items.push({ kind: 'node', node: { type: 'link', href: dest.href, children: parseInline(src.slice(at + 1, close), depth + 1, false) } });
          i = plain = dest.end;
          continue;
        }
      }
      text += c; i = plain = at + 1; continue;
    }
    if (c === '<' && allowLinks) {
      const close = finders.gt(at);
      if (close < n && close - at <= MAX_URL) {
        const href = src.slice(at + 1, close);
        if (isSafeUrl(href)) {
          flush();
          items.push({ kind: 'node', node: { type: 'link', href, children: [{ type: 'text', text: href }] } });
          i = plain = close + 1;
          continue;
        }
      }
      text += c; i = plain = at + 1; continue;
    }
    if (c === 'h') {
      const url = allowLinks && src.startsWith('http', at) ? bareUrl(src, at) : null;
      if (url) {
        flush();
        items.push({ kind: 'node', node: { type: 'link', href: url, children: [{ type: 'text', text: url }] } });
        i = plain = at + url.length;
        continue;
      }
      text += c; i = plain = at + 1; continue;
    }
    // * or _
    let j = at;
    while (j < n && src[j] === c) j++;
    if (j - at > MAX_DELIM_RUN) { text += src.slice(at, j); i = plain = j; continue; }
    const d = delimiter(src, at, j);
    if (d.canOpen || d.canClose) {
      flush();
      items.push(d);
    } else {
      text += src.slice(at, j);
    }
    i = plain = j;
  }
  text += src.slice(plain);
  flush();
  return resolveEmphasis(items, depth);
}

// CommonMark's "process emphasis" over a doubly linked list of the items: each closer looks
// back through a stack of openers; a match wraps what lies between them in an em or strong
// node (which then stands as one item), so every item is moved into a container once per
// level it is nested at, and nesting is bounded.
function resolveEmphasis(items, baseDepth) {
  const n = items.length;
  const prev = new Int32Array(n + 2);
  const next = new Int32Array(n + 2);
  // Index 0 is the head sentinel, n + 1 the tail; item k is at k + 1.
  const at = (k) => items[k - 1];
  for (let k = 0; k <= n + 1; k++) { prev[k] = k - 1; next[k] = k + 1; }
  const depthOf = new Int32Array(n + 2);  // nesting depth of a container item
  const stack = [];  // positions of open-capable delimiters
  // By char, closer-can-open and orig % 3: the position before which no opener can match a
  // closer of that kind (a search there failed), so a string of closers without openers is
  // not searched again and again (linear time).
  const bottom = new Map();

  for (let k = 1; k <= n; k++) {
    const item = at(k);
    if (item.kind !== 'delim') continue;
    if (item.canClose) {
      for (;;) {
        if (item.count === 0) break;
        const key = `${item.char}${item.canOpen ? 1 : 0}${item.orig % 3}`;
        const floor = bottom.get(key) ?? 0;
        let s = stack.length - 1;
        let found = -1;
        for (; s >= 0 && stack[s] >= floor; s--) {
          const o = at(stack[s]);
          if (o.char !== item.char || o.count === 0) continue;
          const odd = (o.canClose || item.canOpen) && (o.orig + item.orig) % 3 === 0 && !(o.orig % 3 === 0 && item.orig % 3 === 0);
          if (odd) continue;
          found = s;
          break;
        }
        if (found < 0) { bottom.set(key, k); break; }
        const openerPos = stack[found];
        const opener = at(openerPos);
        const use = opener.count >= 2 && item.count >= 2 ? 2 : 1;
        // Gather the items between opener and closer into the new node.
        const children = [];
        let inner = 0;
        for (let p = next[openerPos]; p !== k; p = next[p]) {
          const it = at(p);
          inner = Math.max(inner, depthOf[p]);
          if (it.kind === 'delim') {
            if (it.count > 0) children.push({ type: 'text', text: it.char.repeat(it.count) });
          } else {
            children.push(it.node);
          }
        }
        stack.length = found + 1;  // delimiters between them can no longer match
        if (baseDepth + inner + 1 > MAX_INLINE_DEPTH) {
          // Too deep: this pair stays text, and so does every pair with an opener at or
          // below this one (it would enclose the same depth): those openers are dropped, so
          // no later closer walks these items again.
          stack.length = 0;
          break;
        }
        opener.count -= use;
        item.count -= use;
        const node = { type: use === 2 ? 'strong' : 'em', children: mergeText(children) };
        // The node replaces the items between opener and closer: reuse the first slot after
        // the opener when there is one, else link a new item in.
        const first = next[openerPos];
        const holder = { kind: 'node', node };
        if (first !== k) {
          items[first - 1] = holder;
          depthOf[first] = inner + 1;
          next[first] = k;
          prev[k] = first;
        } else {
          // Nothing between them (as in "****"): keep the delimiters as text.
          opener.count += use;
          item.count += use;
          opener.canOpen = false;
          stack.length = found;
          continue;
        }
        if (opener.count === 0) {
          stack.length = found;  // the opener is used up
        }
      }
    }
    if (item.count > 0 && item.canOpen) stack.push(k);
  }

  const out = [];
  for (let p = next[0]; p !== n + 1; p = next[p]) {
    const it = at(p);
    if (it.kind === 'delim') {
      if (it.count > 0) out.push({ type: 'text', text: it.char.repeat(it.count) });
    } else {
      out.push(it.node);
    }
  }
  return mergeText(out);
}

function mergeText(nodes) {
  const out = [];
  for (const node of nodes) {
    const last = out[out.length - 1];
    if (node.type === 'text' && last && last.type === 'text') last.text += node.text;
    else if (node.type !== 'text' || node.text) out.push(node);
  }
  return out;
}

export function parse(text) {
  const src = String(text ?? '').replace(/\r\n?/g, '\n');
  const lines = src.split('\n').map(expandTabs);
  return { type: 'root', children: parseBlocks(lines, 0) };
}

// ---------------------------------------------------------------------------------------
// DOM

const TAGS = {
  paragraph: 'p', blockquote: 'blockquote', list: null, item: 'li', hr: 'hr', strong: 'strong', em: 'em',
  inlineCode: 'code', break: 'br', table: 'table', row: 'tr',
};

// Builds the tree's DOM into `parent` (a new <div class="md"> when none is given) and returns
// it. Uses document.createElement / createTextNode / textContent only.
export function toDom(tree, document, parent) {
  const root = parent ?? document.createElement('div');
  if (!parent) root.className = 'md';
  appendChildren(root, tree.children ?? [], document);
  return root;
}

function appendChildren(el, children, document) {
  for (const child of children) {
    const node = build(child, document);
    if (node) el.appendChild(node);
  }
}

function build(node, document) {
  switch (node.type) {
    case 'text':
      return document.createTextNode(node.text);
    case 'heading': {
      const level = Math.min(6, Math.max(1, node.level | 0));
      const el = document.createElement(`h${level}`);
      appendChildren(el, node.children, document);
      return el;
    }
    case 'code': {
      const pre = document.createElement('pre');
      const code = document.createElement('code');
      if (node.lang && /^[\w+#.-]{1,32}$/.test(node.lang)) {
        code.className = `language-${node.lang}`;
        pre.setAttribute('data-lang', node.lang);
      }
      if (!node.closed) pre.setAttribute('data-open', '');
      code.textContent = node.text;
      pre.appendChild(code);
      return pre;
    }
    case 'list': {
      const el = document.createElement(node.ordered ? 'ol' : 'ul');
      if (node.ordered && node.start !== 1) el.setAttribute('start', String(node.start | 0));
      appendChildren(el, node.children, document);
      return el;
    }
    case 'link': {
      if (!isSafeUrl(node.href)) {
        // Not a link we make: its text, as text.
        const span = document.createElement('span');
        appendChildren(span, node.children, document);
        return span;
      }
      const a = document.createElement('a');
      a.setAttribute('href', node.href);
      a.setAttribute('rel', 'noopener noreferrer');
      a.setAttribute('target', '_blank');
      appendChildren(a, node.children, document);
      return a;
    }
    case 'inlineCode': {
      const el = document.createElement('code');
      el.textContent = node.text;
      return el;
    }
    case 'table': {
      const wrap = document.createElement('div');
      wrap.className = 'md-table';
      const table = document.createElement('table');
      const [head, ...body] = node.children;
      const thead = document.createElement('thead');
      thead.appendChild(buildRow(head, node.align, document));
      table.appendChild(thead);
      if (body.length) {
        const tbody = document.createElement('tbody');
        for (const row of body) tbody.appendChild(buildRow(row, node.align, document));
        table.appendChild(tbody);
      }
      wrap.appendChild(table);
      return wrap;
    }
    default: {
      const tag = TAGS[node.type];
      if (!tag) return null;
      const el = document.createElement(tag);
      if (node.children) appendChildren(el, node.children, document);
      return el;
    }
  }
}

function buildRow(row, align, document) {
  const tr = document.createElement('tr');
  row.children.forEach((cell, c) => {
    const td = document.createElement(row.header ? 'th' : 'td');
    if (align[c]) td.className = `align-${align[c]}`;
    appendChildren(td, cell.children, document);
    tr.appendChild(td);
  });
  return tr;
}

// The text of a tree, without markup (for titles and copying).
export function plainText(node) {
  if (node.type === 'text' || node.type === 'inlineCode' || node.type === 'code') return node.text;
  if (node.type === 'break') return '\n';
  return (node.children ?? []).map(plainText).join(node.type === 'root' ? '\n\n' : '');
}

// The web UI's markdown renderer (src/webui/markdown.js): parse() trees, toDom() through a
// tiny fake document whose elements refuse HTML (innerHTML and friends throw), hostile and
// huge inputs; and static checks of the page's files: no HTML-parsing sinks, nothing the
// Content-Security-Policy forbids, every file the page loads listed in assets.txt.
// No dependencies: node:test only. GLASS_WEBUI_SRC names src/webui (run.sh sets it).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const SRC = process.env.GLASS_WEBUI_SRC || join(here, '../../src/webui');
const source = (name) => readFileSync(join(SRC, name), 'utf8');
// markdown.js imports nothing, so it loads as it is, whatever package.json says about .js.
const md = await import(`data:text/javascript;charset=utf-8,${encodeURIComponent(source('markdown.js'))}`);
const { parse, toDom, isSafeUrl } = md;

// ---- a fake document: just what toDom may use

class FakeNode {
  constructor(nodeType) { this.nodeType = nodeType; this.childNodes = []; this.parentNode = null; }
  appendChild(child) {
    assert.ok(child instanceof FakeNode, 'appendChild takes nodes');
    this.childNodes.push(child);
    child.parentNode = this;
    return child;
  }
  get textContent() { return this.childNodes.map((c) => c.textContent).join(''); }
}
class FakeText extends FakeNode {
  constructor(text) { super(3); this.data = String(text); }
  get textContent() { return this.data; }
}
const refuse = (name) => ({ get() { throw new Error(`${name} used`); }, set() { throw new Error(`${name} used`); } });
class FakeElement extends FakeNode {
  constructor(tag) { super(1); this.tagName = tag.toUpperCase(); this.attributes = new Map(); this.className = ''; }
  setAttribute(name, value) {
    assert.ok(!/^on/i.test(name), `event handler attribute ${name}`);
    assert.notEqual(name.toLowerCase(), 'style', 'style attributes break the CSP');
    this.attributes.set(name, String(value));
  }
  getAttribute(name) { return this.attributes.has(name) ? this.attributes.get(name) : null; }
  get textContent() { return super.textContent; }
  set textContent(text) { this.childNodes = [new FakeText(text)]; }
  insertAdjacentHTML() { throw new Error('insertAdjacentHTML used'); }
}
Object.defineProperty(FakeElement.prototype, 'innerHTML', refuse('innerHTML'));
Object.defineProperty(FakeElement.prototype, 'outerHTML', refuse('outerHTML'));
const fakeDocument = {
  createElement: (tag) => new FakeElement(tag),
  createTextNode: (text) => new FakeText(text),
  write() { throw new Error('document.write used'); },
};

function render(text) {
  return toDom(parse(text), fakeDocument);
}
function* walk(node) {
  yield node;
  for (const c of node.childNodes) yield* walk(c);
}
const elements = (root, tag) => [...walk(root)].filter((n) => n.nodeType === 1 && (!tag || n.tagName === tag.toUpperCase()));
const blocks = (text) => parse(text).children;
// A tree with only the fields that matter here.
const inline = (text) => blocks(text)[0].children;

// ---- blocks

test('fenced code blocks keep their text and language', () => {
  const [code, para] = blocks('```js\nconst a = `x` < 1 && b;\n  indented\n```\nafter');
  assert.deepEqual(code, { type: 'code', lang: 'js', text: 'const a = `x` < 1 && b;\n  indented', closed: true });
  assert.equal(para.type, 'paragraph');
  assert.deepEqual(blocks('~~~~\n```\nstill code\n~~~~')[0], { type: 'code', lang: '', text: '```\nstill code', closed: true });
  const dom = render('```python\nprint("<b>hi</b>")\n```');
  const [pre] = elements(dom, 'pre');
  assert.equal(pre.getAttribute('data-lang'), 'python');
  const [code2] = elements(pre, 'code');
  assert.equal(code2.className, 'language-python');
  assert.equal(code2.textContent, 'print("<b>hi</b>")');
  assert.equal(elements(dom, 'b').length, 0);
  // A language that is not a plain name is not put in a class.
  const odd = elements(render('```"><script>\nx\n```'), 'code')[0];
  assert.equal(odd.className, '');
});

test('an unclosed fence (a reply still streaming) is a code block to the end', () => {
  assert.deepEqual(blocks('Here:\n```sh\nls -l\necho "**not bold**"'), [
    { type: 'paragraph', children: [{ type: 'text', text: 'Here:' }] },
    { type: 'code', lang: 'sh', text: 'ls -l\necho "**not bold**"', closed: false },
  ]);
  assert.deepEqual(blocks('```'), [{ type: 'code', lang: '', text: '', closed: false }]);
  const [pre] = elements(render('```\npartial'), 'pre');
  assert.equal(pre.getAttribute('data-open'), '');
  // A fence is closed only by a fence of the same kind, at least as long.
  assert.equal(blocks('````\n```\nx')[0].closed, false);
});

test('headings, paragraphs, line breaks, blockquotes, rules', () => {
  assert.deepEqual(blocks('# One\n### Three ###\n####### seven'), [
    { type: 'heading', level: 1, children: [{ type: 'text', text: 'One' }] },
    { type: 'heading', level: 3, children: [{ type: 'text', text: 'Three' }] },
    { type: 'paragraph', children: [{ type: 'text', text: '####### seven' }] },
  ]);
  assert.deepEqual(inline('line one\nline two'), [{ type: 'text', text: 'line one' }, { type: 'break' }, { type: 'text', text: 'line two' }]);
  assert.deepEqual(blocks('a\n\nb').map((b) => b.type), ['paragraph', 'paragraph']);
  const [quote] = blocks('> quoted **text**\n> > nested');
  assert.equal(quote.type, 'blockquote');
  assert.equal(quote.children[0].type, 'paragraph');
  assert.equal(quote.children[1].type, 'blockquote');
  assert.deepEqual(blocks('---\n* * *').map((b) => b.type), ['hr', 'hr']);
  const dom = render('## Title\n\n> q\n\n---');
  assert.deepEqual(dom.childNodes.map((n) => n.tagName), ['H2', 'BLOCKQUOTE', 'HR']);
});

test('bullet and numbered lists, nested', () => {
  const [list, numbered] = blocks('- a\n- b\n  - b1\n  - b2\n- c\n\n3. three\n4. four');
  assert.equal(list.type, 'list');
  assert.equal(list.ordered, false);
  assert.equal(list.children.length, 3);
  const nested = list.children[1].children[1];
  assert.equal(nested.type, 'list');
  assert.equal(nested.children.length, 2);
  assert.equal(numbered.ordered, true);
  assert.equal(numbered.start, 3);
  const dom = render('1. one\n2. two\n   * sub');
  const [ol] = elements(dom, 'ol');
  assert.equal(ol.childNodes.length, 2);
  assert.equal(elements(ol, 'ul').length, 1);
  assert.equal(elements(render('5) x'), 'ol')[0].getAttribute('start'), '5');
  // Different markers make different lists; a "-" without text is no list in a paragraph.
  assert.equal(blocks('- a\n+ b').length, 2);
});

test('GFM tables', () => {
  const [table] = blocks('| a | b |\n|:--|--:|\n| 1 | **2** |\n| 3 |');
  assert.equal(table.type, 'table');
  assert.deepEqual(table.align, ['left', 'right']);
  assert.equal(table.children.length, 3);
  assert.deepEqual(table.children[2].children.map((c) => c.children), [[{ type: 'text', text: '3' }], []]);
  const dom = render('| a | b |\n|---|---|\n| <i>x</i> | y |');
  assert.equal(elements(dom, 'th').length, 2);
  assert.equal(elements(dom, 'td')[0].textContent, '<i>x</i>');
  assert.equal(elements(dom, 'i').length, 0);
});

// ---- inlines

test('inline code, bold, italic', () => {
  assert.deepEqual(inline('a `b *c*` d'), [{ type: 'text', text: 'a ' }, { type: 'inlineCode', text: 'b *c*' }, { type: 'text', text: ' d' }]);
  assert.deepEqual(inline('``a ` b``'), [{ type: 'inlineCode', text: 'a ` b' }]);
  assert.deepEqual(inline('`unclosed'), [{ type: 'text', text: '`unclosed' }]);
  assert.deepEqual(inline('**b** *i* __B__ _I_'), [
    { type: 'strong', children: [{ type: 'text', text: 'b' }] }, { type: 'text', text: ' ' },
    { type: 'em', children: [{ type: 'text', text: 'i' }] }, { type: 'text', text: ' ' },
    { type: 'strong', children: [{ type: 'text', text: 'B' }] }, { type: 'text', text: ' ' },
    { type: 'em', children: [{ type: 'text', text: 'I' }] },
  ]);
  assert.deepEqual(inline('***both***'), [{ type: 'em', children: [{ type: 'strong', children: [{ type: 'text', text: 'both' }] }] }]);
  assert.deepEqual(inline('*a **b** c*')[0].children.map((c) => c.type), ['text', 'strong', 'text']);
  // Not emphasis: snake_case, spaced stars, an unclosed star, escapes.
  assert.deepEqual(inline('snake_case_name'), [{ type: 'text', text: 'snake_case_name' }]);
  assert.deepEqual(inline('2 * 3 * 4'), [{ type: 'text', text: '2 * 3 * 4' }]);
  assert.deepEqual(inline('**unclosed'), [{ type: 'text', text: '**unclosed' }]);
  assert.deepEqual(inline('\\*not\\* \\`code\\`'), [{ type: 'text', text: '*not* `code`' }]);
  const dom = render('**bold** and *it*');
  assert.equal(elements(dom, 'strong')[0].textContent, 'bold');
  assert.equal(elements(dom, 'em')[0].textContent, 'it');
});

test('links only for http and https; anything else stays text', () => {
  assert.deepEqual(inline('[site](https://example.com/a?b=1)'), [{ type: 'link', href: 'https://example.com/a?b=1', children: [{ type: 'text', text: 'site' }] }]);
  assert.deepEqual(inline('see https://example.com/x_(y). Next'), [
    { type: 'text', text: 'see ' },
    { type: 'link', href: 'https://example.com/x_(y)', children: [{ type: 'text', text: 'https://example.com/x_(y)' }] },
    { type: 'text', text: '. Next' },
  ]);
  assert.equal(inline('<http://a.b/c>')[0].href, 'http://a.b/c');
  for (const bad of ['javascript:alert(1)', 'JaVaScRiPt:alert(1)', 'data:text/html,<script>alert(1)</script>', 'vbscript:x', '//evil.com', 'file:///etc/passwd', 'https://a.b/"onmouseover="x', ' javascript:alert(1)']) {
    const text = `[click](${bad})`;
    const nodes = inline(text);
    assert.ok(!nodes.some((n) => n.type === 'link' && !isSafeUrl(n.href)), `${bad} became a link`);
    const dom = render(text);
    for (const a of elements(dom, 'a')) assert.match(a.getAttribute('href'), /^https?:\/\//);
  }
  assert.deepEqual(inline('[click](javascript:alert(1))'), [{ type: 'text', text: '[click](javascript:alert(1))' }]);
  assert.equal(elements(render('[click](javascript:alert(1))'), 'a').length, 0);
  const [a] = elements(render('[x](https://example.com)'), 'a');
  assert.equal(a.getAttribute('href'), 'https://example.com');
  assert.equal(a.getAttribute('rel'), 'noopener noreferrer');
  assert.equal(a.getAttribute('target'), '_blank');
  // toDom checks again: a tree built by hand with a bad link makes no <a>.
  const handMade = toDom({ type: 'root', children: [{ type: 'paragraph', children: [{ type: 'link', href: 'javascript:alert(1)', children: [{ type: 'text', text: 'x' }] }] }] }, fakeDocument);
  assert.equal(elements(handMade, 'a').length, 0);
  assert.equal(handMade.textContent, 'x');
  // No links inside links.
  assert.equal(elements(render('[https://a.b/c](https://d.e/f)'), 'a').length, 1);
});

test('HTML in the text stays text', () => {
  for (const text of [
    '<script>alert(1)</script>',
    '<img src=x onerror=alert(1)>',
    'Hi <b onclick="alert(1)">there</b> &lt;ok&gt; &amp;',
    '<iframe src="javascript:alert(1)"></iframe>',
    '**<script>alert(1)</script>**',
    '- <img src=x onerror=alert(1)>',
    '> <svg onload=alert(1)>',
    '# <style>body{display:none}</style>',
    '`<script>`',
    '```\n<script>alert(1)</script>\n```',
  ]) {
    const dom = render(text);
    const tags = elements(dom).map((e) => e.tagName);
    for (const tag of tags) assert.ok(['DIV', 'P', 'STRONG', 'EM', 'UL', 'LI', 'BLOCKQUOTE', 'H1', 'CODE', 'PRE', 'BR'].includes(tag), `<${tag}> from ${text}`);
    for (const e of elements(dom)) for (const name of e.attributes.keys()) assert.ok(!/^on/i.test(name), name);
    // The dangerous part is in a text node, verbatim.
    const texts = [...walk(dom)].filter((n) => n.nodeType === 3).map((n) => n.data).join('');
    const core = text.replace(/^(```\n|[-#>] |\*\*|`)/, '').replace(/(\n```|\*\*|`)$/, '');
    assert.ok(texts.includes(core), `${JSON.stringify(core)} not found as text in ${JSON.stringify(texts)}`);
  }
  const dom = render('<script>alert(1)</script>');
  assert.equal(elements(dom, 'script').length, 0);
  assert.equal(dom.textContent, '<script>alert(1)</script>');
  const img = render('<img src=x onerror=alert(1)>');
  assert.equal(elements(img, 'img').length, 0);
  assert.equal(img.childNodes[0].childNodes[0].nodeType, 3);
});

test('toDom appends into a given element and returns it', () => {
  const parent = fakeDocument.createElement('section');
  assert.equal(toDom(parse('a'), fakeDocument, parent), parent);
  assert.equal(parent.childNodes[0].tagName, 'P');
  const own = toDom(parse('a'), fakeDocument);
  assert.equal(own.tagName, 'DIV');
  assert.equal(own.className, 'md');
});

// ---- hostile input

test('deep nesting is bounded and 100 KB inputs stay fast', () => {
  const K = 100_000;
  const cases = {
    quotes: '>'.repeat(K),
    nestedLists: Array.from({ length: 3000 }, (_, i) => `${' '.repeat(2 * (i % 60))}- x`).join('\n'),
    brackets: '['.repeat(K),
    linkOpeners: '[a]('.repeat(K / 4),
    stars: '*a '.repeat(K / 3),
    nestedEmphasis: '*a _b '.repeat(K / 12) + ' c_ d*'.repeat(K / 12),
    underscores: '_a '.repeat(K / 6) + 'b_ '.repeat(K / 6),
    backticks: '` '.repeat(K / 2),
    angles: '<'.repeat(K),
    urls: 'http://'.repeat(K / 7),
    fences: '```\n'.repeat(K / 4),
    table: `|a|b|\n|-|-|\n${'|1|2|\n'.repeat(K / 6)}`,
    backslashes: '\\'.repeat(K),
    mixed: '**[`<*_>`](http://x) '.repeat(K / 20),
  };
  for (const [name, text] of Object.entries(cases)) {
    const t0 = performance.now();
    const tree = parse(text);
    const dom = toDom(tree, fakeDocument);
    const ms = performance.now() - t0;
    assert.ok(ms < 1500, `${name}: ${ms.toFixed(0)} ms`);
    let depth = 0;
    const measure = (n, d) => { depth = Math.max(depth, d); for (const c of n.children ?? []) measure(c, d + 1); };
    measure(tree, 0);
    assert.ok(depth <= 64, `${name}: the tree is ${depth} deep`);
    assert.ok(dom.textContent.length > 0 || name === 'fences', name);
  }
});

test('text is never lost', () => {
  const samples = ['plain', 'a *b* c', '<x>', '[a](b)', '`', '**', '1. a\n2. b', '> q', 'x\\y'];
  for (const s of samples) {
    const text = render(s).textContent;
    for (const ch of s.replace(/[*`>\\\s]|^\d\. /gm, '')) assert.ok(text.includes(ch), `${JSON.stringify(s)} lost ${ch}: ${JSON.stringify(text)}`);
  }
});

// ---- the page's files

const assets = source('assets.txt').split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'));

test('assets.txt lists the page\'s files, and every file the page loads is listed', () => {
  for (const name of ['index.html', 'style.css', 'app.js', 'markdown.js']) assert.ok(assets.includes(name), name);
  const present = new Set(readdirSync(SRC));
  for (const name of assets) assert.ok(present.has(name), `${name} is listed but missing`);
  const html = source('index.html');
  for (const [, path] of html.matchAll(/(?:src|href)="\/webui\/([^"]+)"/g)) assert.ok(assets.includes(path), `index.html loads ${path}, not in assets.txt`);
  for (const name of assets.filter((n) => n.endsWith('.js')))
    for (const [, path] of source(name).matchAll(/from '\.\/([^']+)'/g)) assert.ok(assets.includes(path), `${name} imports ${path}, not in assets.txt`);
});

test('no HTML-parsing sinks and nothing the CSP forbids', () => {
  for (const name of assets.filter((n) => n.endsWith('.js'))) {
    const code = source(name).replace(/^\s*\/\/.*$/gm, '');
    for (const sink of ['innerHTML', 'outerHTML', 'insertAdjacentHTML', 'document.write', 'eval(', 'new Function', 'setAttribute(\'style\'', 'srcdoc', 'createContextualFragment', 'DOMParser'])
      assert.ok(!code.includes(sink), `${name} uses ${sink}`);
  }
  const html = source('index.html');
  assert.ok(!/<script(?![^>]*\bsrc=)[^>]*>/i.test(html), 'an inline <script>');
  assert.ok(!/<style/i.test(html), 'a <style> block');
  assert.ok(!/\sstyle=/i.test(html), 'a style attribute');
  assert.ok(!/\son[a-z]+=/i.test(html), 'an event handler attribute');
  assert.ok(!/https?:\/\//i.test(html.replace(/http:\/\/www\.w3\.org\/2000\/svg/g, '')), 'an external URL in index.html');
  for (const name of assets) assert.ok(!/(?:src|href|url\()\s*=?\s*["']?https?:\/\//i.test(source(name).replace(/http:\/\/www\.w3\.org\/2000\/svg/g, '')), `${name} loads something from elsewhere`);
  assert.match(html, /<link rel="icon" href="data:/, 'the favicon is a data: URI (no request for /favicon.ico)');
});

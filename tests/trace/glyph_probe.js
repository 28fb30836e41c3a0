// Added to a glass trace page by TraceHtml.CjkTokensHaveGlyphs: is every Chinese, Japanese
// or Korean character in the page's tokens drawn with a glyph, or as the missing-glyph box?
//
// A character no font has is drawn as the .notdef glyph (a box, or nothing), and that is
// the same picture for every missing character. So each character is drawn on a canvas in
// the font stack of the element it is in (canvas text goes through the same font fallback
// as the page's text) and compared with U+10FFFD, a private-use character no font draws.
// The check is only meaningful when two missing characters (U+10FFFD, U+10FFFE) look alike
// and differ from "A": `control` says so. The result goes on <body data-cjk="JSON">.
(function () {
  "use strict";
  var cjk = /[\u1100-\u11ff\u3040-\u30ff\u3130-\u318f\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]/;
  function ink(ch, font) {
    var canvas = document.createElement("canvas");
    canvas.width = 64;
    canvas.height = 64;
    var g = canvas.getContext("2d");
    g.font = font;
    g.textBaseline = "top";
    g.fillStyle = "#000";
    g.fillText(ch, 8, 8);
    return g.getImageData(0, 0, 64, 64).data;
  }
  function alpha(a) { var out = []; for (var i = 3; i < a.length; i += 4) out.push(a[i]); return out.join(","); }
  var chars = {}, fonts = {};
  fonts["32px " + getComputedStyle(document.body).fontFamily] = true;
  Array.prototype.forEach.call(document.querySelectorAll(".tok, th, td.cell, .bar-label"), function (el) {
    Array.from(el.textContent).forEach(function (ch) {
      if (!cjk.test(ch)) return;
      chars[ch] = true;
      fonts["32px " + getComputedStyle(el).fontFamily] = true;
    });
  });
  var result = {chars: Object.keys(chars), fonts: Object.keys(fonts), control: true, tofu: [], blank: []};
  var empty = alpha(new Uint8ClampedArray(64 * 64 * 4));
  result.fonts.forEach(function (font) {
    var missing = alpha(ink("\u{10FFFD}", font));
    if (missing !== alpha(ink("\u{10FFFE}", font)) || missing === alpha(ink("A", font))) result.control = false;
    result.chars.forEach(function (ch) {
      var drawn = alpha(ink(ch, font));
      if (drawn === empty) result.blank.push(ch + " in " + font);
      else if (drawn === missing) result.tofu.push(ch + " in " + font);
    });
  });
  document.body.setAttribute("data-cjk", JSON.stringify(result));
})();

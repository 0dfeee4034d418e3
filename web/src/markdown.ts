// Markdown to HTML for the document reader: marked renders it (GitHub's flavour), DOMPurify strips
// what could run or reach out (scripts, event handlers, `javascript:` URLs, forms, styles) before
// the page inserts it. The page's CSP forbids inline scripts too; the sanitizer is the wall that
// does not depend on it. Links open in a new tab, away from this page and its token.

import DOMPurify from "dompurify";
import { Marked } from "marked";

const marked = new Marked({ gfm: true, async: false });

const purify = DOMPurify();
purify.addHook("afterSanitizeAttributes", (node) => {
  if (node.tagName === "A") {
    node.setAttribute("target", "_blank");
    node.setAttribute("rel", "noopener noreferrer");
  }
});

/** `text` rendered as sanitized HTML, safe to set as an element's innerHTML. */
export function markdownHtml(text: string): string {
  const html = marked.parse(text, { async: false });
  return purify.sanitize(html, {
    FORBID_TAGS: ["style", "form", "input", "button", "textarea", "select"],
    FORBID_ATTR: ["style"],
  });
}

// A job's SQL (the `sql` job facet) as code: keywords, strings, numbers and comments coloured
// by a small tokenizer (the text goes in as text nodes, never as HTML), with a button that
// copies it exactly as it was sent.

import { h } from "../dom";

const KEYWORDS = new Set(
  (
    "select from where join left right inner outer full cross on using group by order having limit offset " +
    "insert into values update set delete create replace table view as with union all distinct case when " +
    "then else end and or not null is in exists between like ilike merge matched partition over window " +
    "cast interval asc desc primary key if drop alter add column temporary temp overwrite returning lateral"
  ).split(" "),
);

export type SqlTokenKind = "keyword" | "string" | "number" | "comment" | "text";

export interface SqlToken {
  kind: SqlTokenKind;
  text: string;
}

const TOKEN = /(--[^\n]*|\/\*[\s\S]*?(?:\*\/|$))|('(?:[^']|'')*'?)|(\b\d+(?:\.\d+)?\b)|([A-Za-z_][A-Za-z0-9_]*)|([\s\S])/g;

/** `sql` cut into tokens whose texts, joined, are `sql` again. */
export function sqlTokens(sql: string): SqlToken[] {
  const tokens: SqlToken[] = [];
  const push = (kind: SqlTokenKind, text: string) => {
    const last = tokens[tokens.length - 1];
    if (last && last.kind === kind && kind === "text") last.text += text;
    else tokens.push({ kind, text });
  };
  for (const [, comment, string, number, word, other] of sql.matchAll(TOKEN)) {
    if (comment !== undefined) push("comment", comment);
    else if (string !== undefined) push("string", string);
    else if (number !== undefined) push("number", number);
    else if (word !== undefined) push(KEYWORDS.has(word.toLowerCase()) ? "keyword" : "text", word);
    else push("text", other ?? "");
  }
  return tokens;
}

/** The SQL as highlighted code with a *Copy* button. */
export function sqlBlock(sql: string): HTMLElement {
  const code = h(
    "code",
    { class: "sql" },
    sqlTokens(sql).map((token) => (token.kind === "text" ? token.text : h("span", { class: `sql-${token.kind}` }, token.text))),
  );
  const copy = h("button", { type: "button", name: "copy-sql" }, "Copy");
  copy.addEventListener("click", () => {
    navigator.clipboard.writeText(sql).then(
      () => (copy.textContent = "Copied"),
      () => {
        // No clipboard (an insecure origin): select the text for Ctrl+C.
        const range = document.createRange();
        range.selectNodeContents(code);
        getSelection()?.removeAllRanges();
        getSelection()?.addRange(range);
        copy.textContent = "Selected: press Ctrl+C";
      },
    );
  });
  return h("div", { class: "sql-block", id: "job-sql" }, copy, h("pre", {}, code));
}

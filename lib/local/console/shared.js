// Threadwise console: plain ES modules with no dependencies. They talk to this origin's API only
// (the Content-Security-Policy allows nothing else) and build every node with textContent, so
// message contents are never parsed as HTML. This module: what every part of the page shares.

/**
 * The page's parts, as the entry module (`app.js`) wires them: a part calls another through it, so
 * no module imports one that imports it back.
 */
export const page = {};

/** How often a running turn's progress is asked for, in milliseconds. */
export const POLL_MS = 300;
/** Characters of a message shown before "Show all". */
export const PREVIEW_CHARS = 480;
export const TOKEN_KEY = "threadwise.token";
export const PRINCIPAL = /^[\w.@-]{1,64}$/;

const numberFormat = new Intl.NumberFormat("en");
export const n = (value) => numberFormat.format(Math.round(value ?? 0));

export const state = {
  token: null,
  userId: null,
  tenantId: null,
  conversations: [],
  conversationId: null,
  /** The application record of the open conversation: user and assistant messages with their turn ids. */
  messages: [],
  running: false,
  /** The last question being edited in the composer: its turn id, or null for a new message. */
  editing: null,
  /** Checkpointed messages per conversation; dropped when a turn changes them. */
  threads: new Map(),
  inspector: null,
  /** What the empty state lists, from `GET /local/tools`: the caller's tools and example questions; null until loaded. */
  help: null,
  /** The turn whose "Inspect turn" button gets focus back when the inspector closes. */
  inspectorOpener: null,
};

export const $ = (id) => document.getElementById(id);

/** Builds an element; `text` becomes textContent, `on*` become listeners, other keys attributes. */
export function h(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

/**
 * A title's text as nodes that may break after an underscore (a tool's name, as in "search_conversation
 * call") rather than inside a word when the line is too narrow: the pieces with `<wbr>` between them.
 */
export function breakableText(text) {
  return text.split(/(?<=_)/).flatMap((piece, i) => (i === 0 ? [piece] : [document.createElement("wbr"), piece]));
}

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

/** What the API said went wrong, whole: its message, and the details (which field, why) or the reason it gives. */
export function apiErrorText(data, status) {
  const error = data?.error;
  if (!error?.message) return `request failed (${status})`;
  const details = Array.isArray(error.details) ? error.details.map((d) => (d.path ? `${d.path}: ${d.message}` : d.message)).join("; ") : "";
  const more = details || error.reason || "";
  return more ? `${error.message}: ${more}` : error.message;
}

export async function api(method, path, body) {
  const headers = { authorization: `Bearer ${state.token}` };
  if (body !== undefined) headers["content-type"] = "application/json";
  const response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  if (response.status === 204) return null;
  const data = await response.json().catch(() => null);
  if (!response.ok) {
    const error = new ApiError(response.status, apiErrorText(data, response.status));
    if (response.status === 401) page.signOut("Your token was refused or has expired. Sign in again.");
    throw error;
  }
  return data;
}

/** Runs a page action, showing its failure in `errorBox` (a refused token has already signed out, with its own message). */
export function guard(action, errorBox) {
  return async (...args) => {
    try {
      $(errorBox).textContent = "";
      await action(...args);
    } catch (error) {
      // A refused token has already signed out, with its own message.
      if (error instanceof ApiError && error.status === 401) return;
      $(errorBox).textContent = error.message;
    }
  };
}

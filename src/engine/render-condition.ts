// Human-readable renderings of conditions and fact values, for explanations (`amount > 5000`, `country in [US, CA]`).
import {
  type AccumulateNode,
  CANONICAL_OPERATOR,
  type ConditionNode,
  type ConditionValue,
  type Scalar,
} from '../contracts/condition-dsl.ts';

const MAX_LIST_ITEMS = 10;
const MAX_ACTUAL_LENGTH = 80;

/** Cut to at most `max` characters with `...`, never between the two halves of a surrogate pair (a half is not text). */
function shorten(text: string, max = MAX_ACTUAL_LENGTH): string {
  if (text.length <= max) return text;
  let end = max - 3;
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end -= 1;
  // Nor inside a JSON escape: a cut `\u00` or lone `\` would read as something else.
  let cut = text.slice(0, end).replace(/\\u[0-9a-fA-F]{0,3}$/, '');
  if ((/\\+$/.exec(cut)?.[0].length ?? 0) % 2 === 1) cut = cut.slice(0, -1);
  return `${cut}...`;
}

function renderScalar(value: Scalar): string {
  return typeof value === 'string' ? shorten(JSON.stringify(value)) : String(value);
}

/** Strings in lists are bare (`[US, CA]`) unless they could be misread (or hold line breaks, tabs, invisible characters), then quoted. */
function renderListItem(value: Scalar): string {
  if (typeof value !== 'string') return String(value);
  const misleading =
    value === '' ||
    value.trim() !== value ||
    /[,[\]"]/.test(value) ||
    /^(true|false|null|-?\d)/.test(value) ||
    /[\p{Cc}\p{Cf}\u2028\u2029]/u.test(value);
  return shorten(misleading ? JSON.stringify(value) : value);
}

export function renderValue(value: ConditionValue): string {
  if (!Array.isArray(value)) return renderScalar(value);
  const shown = value.slice(0, MAX_LIST_ITEMS).map(renderListItem);
  if (value.length > MAX_LIST_ITEMS) shown.push(`... ${value.length - MAX_LIST_ITEMS} more`);
  return `[${shown.join(', ')}]`;
}

/** A fact value as seen: `missing`, or `actual: 4200` (JSON, cut short). Never throws. */
export function renderActual(value: unknown): string {
  if (value === undefined) return 'missing';
  let text: string;
  try {
    // JSON would print Infinity (1e400 in a body) and NaN as null, which reads as a different value.
    text = typeof value === 'number' && !Number.isFinite(value) ? String(value) : (JSON.stringify(value) ?? String(value));
  } catch {
    // Cycles and bigints cannot be JSON: name the kind of value instead.
    text = Array.isArray(value) ? 'an array' : typeof value === 'object' ? 'an object' : `a ${typeof value}`;
  }
  return `actual: ${shorten(text)}`;
}

/** A node inside another one: composites get parentheses so the rendering reads unambiguously. */
function renderNested(node: ConditionNode): string {
  const text = renderCondition(node);
  return node.type === 'and' || node.type === 'or' || node.type === 'any' || node.type === 'all' ? `(${text})` : text;
}

/** `amount > 5000`, `not (x == 1)`, `any items: sku == "A"`, `exists email`, `a > 1 and (b == 2 or c == 3)`. */
export function renderCondition(node: ConditionNode): string {
  switch (node.type) {
    case 'condition':
      return `${node.field} ${CANONICAL_OPERATOR[node.op]} ${renderValue(node.value)}`;
    case 'and':
    case 'or':
      return node.children.map(renderNested).join(` ${node.type} `);
    case 'not':
      return `not (${renderCondition(node.child)})`;
    case 'exists':
      return `exists ${node.field}`;
    case 'any':
    case 'all':
      return `${node.type} ${node.field}: ${renderNested(node.condition)}`;
    case 'accumulate':
      return `${renderAggregate(node)} ${CANONICAL_OPERATOR[node.op]} ${renderValue(node.value)}`;
  }
}

/** `count(*)`, `count(type == "login_failed") over 600s`, `sum(amount where type == "purchase")`. */
export function renderAggregate(node: AccumulateNode): string {
  const where = node.where === undefined ? undefined : renderCondition(node.where);
  let inner: string;
  if (node.field === undefined) inner = where ?? '*';
  else inner = where === undefined ? node.field : `${node.field} where ${where}`;
  const window = node.window_seconds === undefined ? '' : ` over ${node.window_seconds}s`;
  return `${node.function}(${inner})${window}`;
}

/** `a`, `a and b`, `a, b and c`; long lists are cut to keep the sentence one sentence. */
export function joinList(items: readonly string[], limit = 5): string {
  const shown = items.slice(0, limit);
  if (items.length > limit) shown.push(`${items.length - limit} more`);
  if (shown.length <= 1) return shown.join('');
  return `${shown.slice(0, -1).join(', ')} and ${shown[shown.length - 1]}`;
}
